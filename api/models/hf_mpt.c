/*
 * hf_mpt.c - what MPT (model_type mpt: mpt-7b, mpt-30b; its spec in
 * hf_specs.c: ALiBi, a weight-only LayerNorm before attention, one fused
 * Wqkv projection stacking q, k, v) reads from its attn_config block.
 *
 * Hugging Face's MptModel (modeling_mpt.py): h = wte[ids] (no scaling);
 * MptBlock.forward computes z = norm_1(h) (LayerNorm, eps
 * layer_norm_epsilon, its bias set to None), MptAttention.forward
 * mixed_qkv = Wqkv(z) (nn.Linear without bias) chunked into q, k, v
 * (HF_FUSED_STACKED), scores = q.k * softmax_scale + position_bias, with
 * softmax_scale = attn_config.softmax_scale or 1/sqrt(hidden/n_heads).
 *
 * The bias: build_mpt_alibi_tensor (called by MptModel.forward with
 * alibi_bias_max left at 8) gives head h the slope 2^(-8k/n2) of k = 1..n2,
 * n2 = 2^ceil(log2 n_heads), reordered for other head counts as the odd
 * then the even k, cut to n_heads. That equals posenc's slopes (paper,
 * BLOOM, ggml max_bias 8) for every head count: the odd k = 2m give
 * 2^(-8m/c) (c = n2/2, the first c heads) and the even k = 2j+1 give
 * (2^(-4/c))^(2j+1), the rest; for a power of two n2 = n and the slopes
 * are (2^(-8/n))^k. tests/models checks this for 1..64 heads. The bias
 * value is slope*(j - (T-1)) (key j of T, the last key at 0), whatever the
 * attention mask: alibi form "mpt" (PE_ALIBI_MPT), slope*(p_j - p_last),
 * which the loader serves, so the raw `scores` and `bias` are HF's.
 *
 * attn_config.clip_qkv c > 0: MptAttention clamps the fused Wqkv output to
 * [-c, c] before the chunk (m->qkv_clip, applied by model_project; shown
 * in /info as clip_qkv); 0 and null do not clip, as HF's `if self.clip_qkv`.
 *
 * Refused at start-up, naming the key: attn_config.qk_ln true (Hugging Face has no q/k
 * LayerNorm and would silently drop the checkpoint's), attn_config.alibi
 * false (MosaicML's learned positions, which Hugging Face never builds),
 * attn_config.alibi_bias_max other than 8 (Hugging Face builds the bias
 * with 8 whatever the config says, MosaicML's code with the config value),
 * attn_config.attn_type other than multihead_attention, and (the spec's
 * refusals) no_bias false and norm_type rmsnorm (Hugging Face drops the biases and always uses
 * LayerNorm, so either would answer differently from the checkpoint's own
 * code).
 *
 * Config keys read: d_model, n_heads, n_layers, layer_norm_epsilon,
 * no_bias, norm_type, attn_config.{attn_type, softmax_scale, clip_qkv,
 * qk_ln, alibi, alibi_bias_max}.
 * Tensors: [transformer.]wte.weight, [transformer.]blocks.L.norm_1.weight,
 * [transformer.]blocks.L.attn.Wqkv.weight.
 */
#include <string.h>

#include "models/hf_spec.h"
#include "json/json_fields.h"

/* The JSON type an attn_config key must have when present and not null. */
typedef enum attn_key_type { KEY_NUMBER, KEY_BOOL, KEY_STRING } attn_key_type;

/* attn_config.<key> into *out (NULL when absent or null); a value of
 * another type is an error naming the key. */
static int attn_key(const hf_load *h, const json_t *ac, const char *key, attn_key_type want,
                    const json_t **out, model_error *err)
{
    static const char *const what[] = {"a number", "true or false", "a string"};
    const json_t *v = json_object_get(ac, key);

    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    bool ok = want == KEY_NUMBER ? json_is_number(v)
              : want == KEY_BOOL ? json_is_boolean(v)
                                 : json_is_string(v);
    if (!ok) {
        char got[64];
        jf_describe(v, got, sizeof got);
        return hf_config_fail(h, err, "attn_config.%s must be %s, got %s", key, what[want], got);
    }
    *out = v;
    return 0;
}

/* The attn_config block: refusals, then softmax_scale into *scale (0: default). */
static int read_attn_config(const hf_load *h, double *scale, double *clip_qkv, model_error *err)
{
    const json_t *ac = hf_get(h, HF_KEYS("attn_config"), NULL);
    const json_t *type, *softmax, *clip, *qk_ln, *alibi, *bias_max;

    *scale = 0;
    *clip_qkv = 0;
    if (!ac)
        return 0; /* MptAttentionConfig's defaults */
    if (!json_is_object(ac))
        return hf_config_fail(h, err, "attn_config must be an object");
    if (attn_key(h, ac, "attn_type", KEY_STRING, &type, err) ||
        attn_key(h, ac, "softmax_scale", KEY_NUMBER, &softmax, err) ||
        attn_key(h, ac, "clip_qkv", KEY_NUMBER, &clip, err) ||
        attn_key(h, ac, "qk_ln", KEY_BOOL, &qk_ln, err) ||
        attn_key(h, ac, "alibi", KEY_BOOL, &alibi, err) ||
        attn_key(h, ac, "alibi_bias_max", KEY_NUMBER, &bias_max, err))
        return -1;
    if (type && strcmp(json_string_value(type), "multihead_attention") != 0)
        return hf_value_fail(h, err,
                             "attn_config.attn_type = '%.40s' is not supported "
                             "(Hugging Face's MptAttention is multihead_attention only)",
                             json_string_value(type));
    /* `if self.clip_qkv:` skips 0 (and null) */
    if (clip && json_number_value(clip) != 0) {
        *clip_qkv = json_number_value(clip);
        if (!(*clip_qkv > 0) || *clip_qkv > 3e38)
            return hf_value_fail(h, err,
                                 "attn_config.clip_qkv = %g must be a finite number > 0 "
                                 "(a clamp of the fused Wqkv output to [-clip, clip])",
                                 *clip_qkv);
    }
    if (qk_ln && json_is_true(qk_ln))
        return hf_value_fail(h, err,
                             "attn_config.qk_ln = true is not supported (a LayerNorm "
                             "of q and k, which Hugging Face's MptAttention does not apply)");
    if (alibi && !json_is_true(alibi))
        return hf_value_fail(h, err,
                             "attn_config.alibi = false is not supported (learned "
                             "positions, which Hugging Face's MptModel does not build)");
    if (bias_max && json_number_value(bias_max) != 8)
        return hf_value_fail(h, err,
                             "attn_config.alibi_bias_max = %g is not supported: "
                             "Hugging Face's MptModel builds its ALiBi with 8 whatever the "
                             "config says, MosaicML's code with the config's value",
                             json_number_value(bias_max));
    if (softmax) {
        *scale = json_number_value(softmax);
        if (!(*scale > 0) || *scale > 1e300)
            return hf_value_fail(h, err,
                                 "attn_config.softmax_scale = %g must be a finite "
                                 "number > 0",
                                 *scale);
    }
    return 0;
}

/* attn_config's refusals, then params: alibi form "mpt" and the
 * softmax_scale when the config sets one. */
int hf_mpt_configure(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    double scale;

    (void)p;
    if (read_attn_config(h, &scale, &m->qkv_clip, err))
        return -1;
    m->params = scale > 0 ? json_pack("{s:s, s:f}", "form", "mpt", "score_scale", scale)
                          : json_pack("{s:s}", "form", "mpt");
    return m->params ? 0 : model_nomem(err, "the model");
}

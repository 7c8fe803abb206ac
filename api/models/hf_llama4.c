/*
 * hf_llama4.c - what Llama 4's text model (model_type llama4_text: the
 * text_config of Llama-4-Scout-17B-16E / Maverick, served standalone; its
 * spec in hf_specs.c gives the interleaved (complex) pair layout and
 * rope_theta's default) decides per layer: RoPE layers and NoPE layers
 * interleaved, a weightless L2 norm of q and k after the rotation, and
 * attention-temperature tuning of q on the NoPE layers.
 *
 * Hugging Face's Llama4TextModel (modeling_llama4.py): h = embed_tokens[ids]
 * (or inputs_embeds, no scaling); Llama4TextDecoderLayer: z =
 * input_layernorm(h) (Llama4TextRMSNorm, rms_norm_eps); Llama4TextAttention:
 * - q/k/v_proj (biases when attention_bias), viewed [T][heads][head_dim];
 * - use_rope = no_rope_layers[L] (1 = rope, 0 = none; an empty or absent
 *   list is Llama4TextConfig's default int((L + 1) % no_rope_layer_interval
 *   != 0), interval 4): apply_rotary_emb views adjacent channel pairs
 *   (2i, 2i+1) as complex numbers and multiplies them by freqs_cis =
 *   polar(1, pos * inv_freq) * attention_scaling (Llama4TextRotaryEmbedding,
 *   rope_theta default 500000, rope_scaling as Scout's llama3 block) - the
 *   interleaved layout;
 * - on rope layers with use_qk_norm (default true): Llama4TextL2Norm on q
 *   and k per head, x * rsqrt(mean(x^2) + rms_norm_eps), no weight, AFTER
 *   the rotation;
 * - on NoPE layers with attn_temperature_tuning (Scout's config has 4, an
 *   int; truthy is on, as in HF's `if self.attn_temperature_tuning`):
 *   q *= log(floor((pos + 1) / floor_scale) + 1) * attn_scale + 1
 *   (floor_scale 8192, attn_scale 0.1). HF's pos there is the slot index
 *   (arange(T) + past length), which is posenc's position when positions
 *   come from `offset`; explicit `positions` are used as given.
 * Scores scale by head_dim ** -0.5 on every layer. (attention_chunk_size
 * only masks the rope layers' attention; posenc's scores are unmasked
 * unless the request asks, so it does not change them.)
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads,
 * head_dim (default 128, Llama4TextConfig's), num_hidden_layers,
 * rms_norm_eps (default 1e-5), attention_bias, rope_theta, rope_scaling,
 * no_rope_layers, no_rope_layer_interval, use_qk_norm,
 * attn_temperature_tuning, floor_scale, attn_scale.
 *
 * Tensors: [language_model.model. | model. | ""]embed_tokens.weight,
 * layers.L.input_layernorm.weight, layers.L.self_attn.{q,k,v}_proj.
 * {weight,bias}.
 */
#include "models/hf_spec.h"

/* attn_temperature_tuning: a boolean, or a number (Scout's 4) read for its
 * truth as Python does. */
static int temperature_tuning(hf_load *h, bool *on, model_error *err)
{
    const json_t *v = hf_get(h, HF_KEYS("attn_temperature_tuning"), NULL);

    if (!v) {
        *on = true; /* Llama4TextConfig's default */
        return 0;
    }
    if (json_is_boolean(v))
        *on = json_is_true(v);
    else if (json_is_number(v))
        *on = json_number_value(v) != 0.0;
    else
        return hf_config_fail(h, err, "attn_temperature_tuning must be true, false or a number");
    return 0;
}

/* What Llama 4 does to q and k around the rotation, by the layer's kind
 * (rope or NoPE: the loader read no_rope_layers, hf_layer_uses_rope). */
int hf_llama4_configure(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    bool rope = p->scheme == SCHEME_ROPE, qk_norm = true, tuning = true;
    double floor_scale, attn_scale;

    if (hf_bool(h, "use_qk_norm", true, &qk_norm, err) || temperature_tuning(h, &tuning, err) ||
        hf_number(h, "floor_scale", 8192.0, true, &floor_scale, err) ||
        hf_number(h, "attn_scale", 0.1, false, &attn_scale, err))
        return -1;
    if (p->a.head_dim % 2 != 0)
        return hf_value_fail(h, err, "head_dim %lld must be even (complex pairs)",
                             (long long)p->a.head_dim);
    m->post_rope_qk_norm = rope && qk_norm;
    m->post_rope_qk_norm_eps = m->norm_eps;
    m->attn_temperature = !rope && tuning;
    m->attn_floor_scale = floor_scale;
    m->attn_temperature_scale = attn_scale;
    return 0;
}

/*
 * hf_deepseek.c - what DeepSeek-V2 and V3 (model_type deepseek_v2:
 * DeepSeek-V2 / V2-Lite; deepseek_v3: DeepSeek-V3 / R1; their spec in
 * hf_specs.c gives the norm, the embedding and the refused attention_bias)
 * compute differently: multi-head latent attention (MLA), as Hugging Face's modeling_deepseek_v2.py /
 * modeling_deepseek_v3.py compute q, k and v (DeepseekV2Attention /
 * DeepseekV3Attention.forward):
 *
 *   z = input_layernorm(h)                       (RMSNorm, rms_norm_eps)
 *   q = q_b_proj(q_a_layernorm(q_a_proj(z)))     (q_lora_rank), or q_proj(z) when
 *                                                 q_lora_rank is null
 *   [c | k_rot] = kv_a_proj_with_mqa(z)          (kv_lora_rank | qk_rope_head_dim)
 *   [k_nope | v] per head = kv_b_proj(kv_a_layernorm(c))
 *   q heads [q_nope | rot(q_rot)], k heads [k_nope | rot(k_rot)] (k_rot
 *   shared by every head), v heads of v_head_dim.
 * q_a_layernorm and kv_a_layernorm are DeepseekV*RMSNorm(rank) built
 * without an eps, so 1e-6 whatever rms_norm_eps says.
 *
 * The rotation (rope of rope_theta / rope_scaling over qk_rope_head_dim,
 * the config's head_dim as DeepseekV3Config sets it; YaRN's attention
 * factor multiplies cos and sin):
 * - deepseek_v3 with rope_interleave (default true):
 *   apply_rotary_pos_emb_interleave views each rope slice as (d/2, 2),
 *   transposes it (evens first, then odds) and applies rotate_half; the
 *   result stays in that permuted order. posenc permutes the rope columns
 *   of q_b_proj (q_proj) and kv_a_proj_with_mqa once at load (exact) and
 *   rotates in the half layout, which gives the same numbers in the same
 *   order. rope_interleave false: the half layout on the raw channels.
 * - deepseek_v2: apply_rotary_emb, view_as_complex of adjacent pairs
 *   times freqs_cis: the interleaved layout, output interleaved.
 * Scores: qk_head_dim ** -0.5 times mscale**2, mscale = 0.1 *
 * mscale_all_dim * ln(factor) + 1 (1 when factor <= 1), when the rope
 * block (rope_scaling or rope_parameters as hf_rope_block.c picks it, or
 * the config class's) is of a type other than default and its
 * mscale_all_dim is non-zero: yarn_apply_mscale, DeepseekV3Attention's scale,
 * and V2's alike (contract 1.2's architecture settlement: transformers
 * fixed DeepseekV2Attention to match; DeepSeek's own V2 code always did).
 *
 * Config keys read: hidden_size, num_attention_heads, num_key_value_heads
 * (must equal the heads: MLA expands k and v per head), num_hidden_layers,
 * rms_norm_eps (1e-6), q_lora_rank (1536; null = q_proj), kv_lora_rank
 * (512), qk_nope_head_dim (128), qk_rope_head_dim (64), v_head_dim (128),
 * rope_interleave (v3, true), attention_bias (true is refused: not
 * modelled), rope_theta, rope_scaling (or rope_parameters). Defaults are
 * DeepseekV3Config's, or the family's (GLM-4.7-Flash's glm4_moe_lite computes
 * as V3). DeepSeek-V3.2 (deepseek_v32) and GLM-5 (glm_moe_dsa)
 * compute q, k and v as V3 with rope_interleave true, which they do not
 * read, and need q_lora_rank; GLM-5's defaults are GlmMoeDsaConfig's
 * (mla_family below). Mistral 4 (mistral4, modeling_mistral4.py
 * Mistral4Attention) computes as V3 with Mistral4Config's defaults and
 * its rope built over int(qk_head_dim * partial_rotary_factor) channels
 * (mistral4_rope_width), then multiplies q by Ministral 3's query scale
 * (the spec's params hook, hf_ministral.c).
 *
 * Tensors ([model.] prefix): embed_tokens.weight, layers.L.input_layernorm.
 * weight, layers.L.self_attn.{q_a_proj, q_a_layernorm, q_b_proj | q_proj,
 * kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj}.weight.
 */
#include <math.h>
#include <string.h>

#include "models/hf_spec.h"

/* An integer config key whose explicit null means something (q_lora_rank):
 * absent -> dflt, null -> 0. */
static int rank_or_null(const hf_load *h, const char *key, int64_t dflt, int64_t *out,
                        model_error *err)
{
    const json_t *v = json_object_get(h->config, key);

    if (v && json_is_null(v)) {
        *out = 0;
        return 0;
    }
    return hf_int(h, (const char *const[]){key, NULL}, false, dflt, 1, SCHEME_MAX_DIM, out, err);
}

/* Columns [off + g*group, off + g*group + r) of every row of t ([rows][cols])
 * from (x0, x1, x2, x3, ...) to (x0, x2, ..., x1, x3, ...): the view(d/2, 2)
 * .transpose of apply_rotary_pos_emb_interleave, folded into the weight. */
static int deinterleave_columns(tensor *t, size_t off, size_t group, size_t r, model_error *err)
{
    size_t rows = t->dim[0], cols = t->dim[1];
    float *tmp = malloc(r * sizeof *tmp); /* owned: one slice */

    if (!tmp)
        return model_nomem(err, "the model");
    for (size_t i = 0; i < rows; i++)
        for (size_t g = off; g + r <= cols; g += group) {
            float *s = t->data + i * cols + g;
            for (size_t j = 0; j < r / 2; j++) {
                tmp[j] = s[2 * j];
                tmp[r / 2 + j] = s[2 * j + 1];
            }
            memcpy(s, tmp, r * sizeof *s);
        }
    free(tmp);
    return 0;
}

/* The score scale: qk_head_dim ** -0.5 times mscale**2 for a rope block of
 * a type other than default whose mscale_all_dim is non-zero
 * (yarn_apply_mscale); block: the rope block (NULL: none), name its key. */
static int mla_score_scale(hf_load *h, const json_t *block, const char *name, double qk_head_dim,
                           double *scale, model_error *err)
{
    *scale = 1.0 / sqrt(qk_head_dim);
    if (!block || strcmp(hf_rope_block_type(block), "default") == 0)
        return 0;
    const json_t *all = json_object_get(block, "mscale_all_dim");
    if (!all || json_is_null(all))
        return 0;
    if (!json_is_number(all))
        return hf_config_fail(h, err, "%s.mscale_all_dim must be a number", name);
    if (json_number_value(all) == 0.0)
        return 0;
    const json_t *f = json_object_get(block, "factor");
    if (!json_is_number(f))
        return hf_config_fail(h, err,
                              "%s.factor must be a number (DeepSeek's attention reads it with "
                              "mscale_all_dim)",
                              name);
    double factor = json_number_value(f);
    double mscale = factor <= 1.0 ? 1.0 : 0.1 * json_number_value(all) * log(factor) + 1.0;
    *scale *= mscale * mscale;
    return 0;
}

/* What differs between the architectures that use MLA: the rotation
 * (V2's complex pairs, or V3's apply_rotary_pos_emb_interleave: rotate_half
 * of the de-interleaved channels), whether rope_interleave is read (V3;
 * DeepseekV32Attention and GlmMoeDsaAttention always de-interleave and
 * always project q through q_a_proj) and the config class's defaults. */
typedef struct mla_family {
    const char *model_type;
    bool v3_rotation, reads_interleave, needs_q_lora;
    int64_t q_rank, kv_rank, nope, v_dim;
    double eps; /* rms_norm_eps when absent */
    /* the rope is built over head_dim * the block's partial_rotary_factor
     * (Mistral 4: head_dim = qk_head_dim, the factor's default
     * qk_rope_head_dim / qk_head_dim); else over qk_rope_head_dim */
    bool rope_by_partial;
} mla_family;

static const mla_family families[] = {
    {"deepseek_v2", false, false, false, 1536, 512, 128, 128, 1e-6, false},
    {"deepseek_v3", true, true, false, 1536, 512, 128, 128, 1e-6, false},
    {"deepseek_v32", true, false, true, 1536, 512, 128, 128, 1e-6, false}, /* DeepseekV32Config */
    {"glm_moe_dsa", true, false, true, 2048, 512, 192, 256, 1e-5, false},  /* GlmMoeDsaConfig */
    /* Glm4MoeLiteConfig (GLM-4.7-Flash): Glm4MoeLiteAttention is
     * DeepseekV3Attention */
    {"glm4_moe_lite", true, true, false, 768, 512, 192, 256, 1e-5, false},
    /* Mistral4Config (Mistral Small 4): Mistral4Attention is V3's with
     * Ministral 3's query scale (hf_ministral.c) */
    {"mistral4", true, true, false, 1024, 256, 64, 128, 1e-6, true},
};

static const mla_family *family_of(const model *m)
{
    for (size_t i = 1; i < sizeof families / sizeof families[0]; i++)
        if (strcmp(m->architecture, families[i].model_type) == 0)
            return &families[i];
    return &families[0];
}

/* The MLA dimensions as config.json gives them. */
typedef struct mla_config {
    int64_t q_rank, kv_rank, nope, rope, v_dim;
    bool interleave;
} mla_config;

/* Reads and checks the MLA keys of family f. */
static int read_mla_config(hf_load *h, const hf_plan *p, const mla_family *f, mla_config *c,
                           model_error *err)
{
    c->interleave = f->v3_rotation;
    if (rank_or_null(h, "q_lora_rank", f->q_rank, &c->q_rank, err) ||
        hf_int(h, HF_KEYS("kv_lora_rank"), false, f->kv_rank, 1, SCHEME_MAX_DIM, &c->kv_rank,
               err) ||
        hf_int(h, HF_KEYS("qk_nope_head_dim"), false, f->nope, 0, SCHEME_MAX_DIM, &c->nope, err) ||
        hf_int(h, HF_KEYS("qk_rope_head_dim"), false, 64, 2, SCHEME_MAX_DIM, &c->rope, err) ||
        hf_int(h, HF_KEYS("v_head_dim"), false, f->v_dim, 1, SCHEME_MAX_DIM, &c->v_dim, err) ||
        (f->reads_interleave && hf_bool(h, "rope_interleave", true, &c->interleave, err)))
        return -1;
    if (!hf_get(h, HF_KEYS("rms_norm_eps"), NULL))
        h->m->norm_eps = f->eps; /* the spec's default is V3's */
    if (f->needs_q_lora && c->q_rank == 0)
        return hf_value_fail(h, err,
                             "q_lora_rank null: %s's attention always projects q through "
                             "q_a_proj (its indexer reads q_a_layernorm's output)",
                             f->model_type);
    if (p->a.kv_heads != p->a.heads)
        return hf_value_fail(h, err,
                             "num_key_value_heads %lld differs from num_attention_heads "
                             "%lld: multi-head latent attention gives every head its own k "
                             "and v",
                             (long long)p->a.kv_heads, (long long)p->a.heads);
    if (c->rope % 2 != 0)
        return hf_value_fail(h, err, "qk_rope_head_dim %lld must be even", (long long)c->rope);
    return 0;
}

/* Mistral 4's rope over qk_rope_head_dim: Mistral4RotaryEmbedding builds
 * it over int(qk_head_dim * partial_rotary_factor) channels (the factor
 * given in the block, or qk_rope_head_dim / qk_head_dim), the default type
 * over qk_head_dim whatever the factor; a width other than
 * qk_rope_head_dim fails in Hugging Face's rotation. */
static int mistral4_rope_width(hf_load *h, const json_t *block, const char *name,
                               const mla_config *c, bool *has_factor, model_error *err)
{
    const json_t *f = json_object_get(block, "partial_rotary_factor");
    int64_t qk_head = c->nope + c->rope;

    *has_factor = f && !json_is_null(f);
    if (strcmp(hf_rope_block_type(block), "default") == 0 && c->nope > 0)
        return hf_value_fail(h, err,
                             "%s: rope type 'default' is built over head_dim = qk_nope_head_dim "
                             "+ qk_rope_head_dim = %lld channels by Hugging Face's %s, which "
                             "rotates qk_rope_head_dim = %lld and fails",
                             name, (long long)qk_head, h->m->architecture, (long long)c->rope);
    if (!*has_factor)
        return 0;
    if (!json_is_number(f) || (int64_t)((double)qk_head * json_number_value(f)) != c->rope)
        return hf_value_fail(h, err,
                             "%s.partial_rotary_factor must make int(qk_head_dim %lld x factor) "
                             "= qk_rope_head_dim %lld, the width Hugging Face's %s rotates",
                             name, (long long)qk_head, (long long)c->rope, h->m->architecture);
    return 0;
}

/* m->params: the rope over qk_rope_head_dim (for Mistral 4, its factor
 * read and then dropped: posenc turns the rope part only) with the
 * rotation's layout and the score scale. */
static int mla_params(hf_load *h, const hf_plan *p, const mla_family *f, const mla_config *c,
                      model_error *err)
{
    model *m = h->m;
    const hf_rope_keys *keys = &p->spec->rope;
    hf_rope_keys with_factor = *keys;
    json_t *block = NULL; /* owned */
    const char *name;
    bool nested, has_factor = false;
    double score_scale;
    int rc = -1;

    with_factor.partial = HF_KEYS("partial_rotary_factor");
    with_factor.partial_default = 1.0;
    if (hf_rope_block(h, keys, NULL, &block, &name, &nested, err) ||
        (f->rope_by_partial && block && mistral4_rope_width(h, block, name, c, &has_factor, err)) ||
        mla_score_scale(h, block, name, (double)(c->nope + c->rope), &score_scale, err))
        goto out;
    if (has_factor ? hf_rope_params(h, (size_t)(c->nope + c->rope), &with_factor, &m->params, err)
                   : hf_rope_params(h, (size_t)c->rope, keys, &m->params, err))
        goto out;
    json_object_del(m->params, "partial_rotary_factor");
    if (json_object_set_new(m->params, "layout",
                            json_string(f->v3_rotation ? "half" : "interleaved")) ||
        json_object_set_new(m->params, "score_scale", json_real(score_scale))) {
        model_nomem(err, "the model");
        goto out;
    }
    rc = 0;
out:
    json_decref(block);
    return rc;
}

/* The MLA dimensions and the rope parameters (m->params, owned by m: the
 * rotation's layout and the score scale included); head_dim nope + rope. */
int hf_deepseek_configure(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    const mla_family *f = family_of(m);
    mla_config c;

    if (read_mla_config(h, p, f, &c, err))
        return -1;
    size_t qk_head = (size_t)(c.nope + c.rope);
    p->a.head_dim = (int64_t)qk_head;
    m->mla = true;
    m->mla_w = (pe_mla_weights){.d_model = (size_t)p->a.hidden,
                                .heads = (size_t)p->a.heads,
                                .q_lora_rank = (size_t)c.q_rank,
                                .kv_lora_rank = (size_t)c.kv_rank,
                                .nope_dim = (size_t)c.nope,
                                .rope_dim = (size_t)c.rope,
                                .v_dim = (size_t)c.v_dim,
                                .q_norm_eps = 1e-6,
                                .kv_norm_eps = 1e-6};
    return mla_params(h, p, f, &c, err);
}

/* Layer L's MLA projections (rope columns permuted for v3's
 * rope_interleave). */
int hf_deepseek_weights(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    const pe_mla_weights *w = &m->mla_w;
    const mla_family *f = family_of(m);
    bool interleave = f->v3_rotation;
    size_t L = h->layer, d = w->d_model, qk_head = w->nope_dim + w->rope_dim;
    size_t q_rank = w->q_lora_rank, kv_rank = w->kv_lora_rank, rope = w->rope_dim;
    size_t qd = w->heads * qk_head, kv_a = kv_rank + rope,
           kv_b = w->heads * (w->nope_dim + w->v_dim);

    (void)p;
    if (q_rank
            ? hf_linear(h, W_MLA_Q_A, q_rank, d, err, "layers.%zu.self_attn.q_a_proj.weight", L) ||
                  hf_weight(h, W_MLA_Q_A_NORM, 1, q_rank, 0, err,
                            "layers.%zu.self_attn.q_a_layernorm.weight", L) ||
                  hf_linear(h, W_MLA_Q_B, qd, q_rank, err, "layers.%zu.self_attn.q_b_proj.weight",
                            L)
            : hf_linear(h, W_MLA_Q_B, qd, d, err, "layers.%zu.self_attn.q_proj.weight", L))
        return -1;
    if (hf_linear(h, W_MLA_KV_A, kv_a, d, err, "layers.%zu.self_attn.kv_a_proj_with_mqa.weight",
                  L) ||
        hf_weight(h, W_MLA_KV_A_NORM, 1, kv_rank, 0, err,
                  "layers.%zu.self_attn.kv_a_layernorm.weight", L) ||
        hf_linear(h, W_MLA_KV_B, kv_b, kv_rank, err, "layers.%zu.self_attn.kv_b_proj.weight", L))
        return -1;
    if (f->reads_interleave && hf_bool(h, "rope_interleave", true, &interleave, err))
        return -1;
    if (interleave &&
        (deinterleave_columns(&m->weights[W_MLA_Q_B], w->nope_dim, qk_head, rope, err) ||
         deinterleave_columns(&m->weights[W_MLA_KV_A], kv_rank, kv_a, rope, err)))
        return -1;
    return 0;
}

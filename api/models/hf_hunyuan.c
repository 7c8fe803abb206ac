/*
 * hf_hunyuan.c - HunYuan (model_type hunyuan_v1_dense, hunyuan_v1_moe; their
 * spec in hf_specs.c): Llama's layer with two differences in the attention
 * (modeling_hunyuan_v1_dense.py, modeling_hunyuan_v1_moe.py):
 *
 * - HunYuanDenseV1RotaryEmbedding: a block of rope type "dynamic" with a
 *   truthy `alpha` is NTK-alpha, base = rope_theta * alpha^(D / (D - 2))
 *   over head_dim D. The forward's dynamic_rope_update still treats the
 *   type as dynamic: past max_position_embeddings it recomputes the plain
 *   dynamic NTK frequencies (factor, no alpha), and back within it returns
 *   to the alpha ones; posenc's dynamic scaling with alpha does both, from
 *   the request's largest position. A dynamic block without alpha is plain
 *   dynamic; alpha in a block of another type is not read (warned).
 * - HunYuanDenseV1Attention.forward: query_layernorm / key_layernorm, an
 *   RMSNorm with a weight [head_dim] per head (rms_norm_eps), AFTER the
 *   rotation (posenc's post-rope norm, with weights).
 * head_dim is required: HunYuanDenseV1Config's default (None) stops
 * Hugging Face's attention.
 */
#include <string.h>

#include "models/hf_spec.h"

/* alpha's value when it is truthy (HF: rope_parameters.get("alpha")), else
 * 0; -1 when it is not a number >= 0. */
static double read_alpha(const json_t *block)
{
    const json_t *alpha = json_object_get(block, "alpha");

    if (!alpha || json_is_null(alpha) || json_equal(alpha, json_false()))
        return 0.0;
    if (!json_is_number(alpha) || !(json_number_value(alpha) >= 0))
        return -1.0;
    return json_number_value(alpha);
}

int hf_hunyuan_params(hf_load *h, hf_plan *p, model_error *err)
{
    json_t *block = NULL; /* owned */
    const char *name;
    bool nested;
    int rc = 0;

    if (hf_rope_block(h, &p->spec->rope, NULL, &block, &name, &nested, err))
        return -1;
    double alpha = read_alpha(block);
    json_t *sc = json_object_get(h->m->params, "scaling"); /* borrowed from m->params */
    const char *type = json_string_value(json_object_get(sc, "type"));
    if (alpha < 0) {
        rc = hf_value_fail(h, err, "%s.alpha must be a number > 0 (NTK-alpha)", name);
    } else if (alpha > 0 && !(type && strcmp(type, "dynamic") == 0)) {
        hf_warn(h, "%s.alpha is not used: Hugging Face's %s reads it for rope type dynamic only",
                name, h->m->architecture);
    } else if (alpha > 0 && json_object_set_new(sc, "alpha", json_real(alpha))) {
        rc = model_nomem(err, "the model");
    }
    json_decref(block);
    return rc;
}

/* query_layernorm / key_layernorm of layer L, applied after the rotation. */
int hf_hunyuan_weights(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    size_t hd = m->head_dim;

    (void)p;
    m->post_rope_qk_norm = true;
    m->post_rope_qk_norm_eps = m->norm_eps;
    return hf_weight(h, W_Q_NORM_WEIGHT, 1, hd, 0, err,
                     "layers.%zu.self_attn.query_layernorm.weight", h->layer) ||
                   hf_weight(h, W_K_NORM_WEIGHT, 1, hd, 0, err,
                             "layers.%zu.self_attn.key_layernorm.weight", h->layer)
               ? -1
               : 0;
}

/*
 * hf_minimax_m2.c - MiniMax-M2 (model_type minimax_m2; M2, M2.1, M2.5,
 * M2.7): MiniMaxM2Attention.forward computes
 *
 *   z = input_layernorm(h)               RMSNorm, rms_norm_eps
 *   q = q_norm(q_proj(z)), k = k_norm(k_proj(z))
 *                                        RMSNorm over the WHOLE projection
 *                                        (heads*head_dim, kv_heads*head_dim:
 *                                        one weight across the heads)
 *   then the split into heads and rotate_half on the first rotary_dim
 *   channels of each head (theta 5e6 by default); v = v_proj(z).
 *
 * The checkpoints give the rotated width as the legacy `rotary_dim` key
 * (64 of head_dim 128). Hugging Face's in-tree MiniMaxM2Config at 5.16
 * ignores it and rotates the whole head (the released remote code and
 * Hugging Face's later fix read it as partial_rotary_factor = rotary_dim /
 * head_dim). posenc follows the fixed rule and says so in /info
 * (rotary_dim_rule "partial"); the spec is in hf_specs.c.
 */
#include <math.h>

#include "models/hf_spec.h"

/* An explicit partial_rotary_factor beside rotary_dim (top level or in
 * the rope block) must say the same. */
static int check_partial(const hf_load *h, int64_t rotary, model_error *err)
{
    const json_t *block = hf_get(h, HF_KEYS("rope_parameters"), NULL);
    const json_t *v = hf_get(h, HF_KEYS("partial_rotary_factor"), NULL);
    size_t hd = h->m->head_dim;

    if (!v && json_is_object(block))
        v = json_object_get(block, "partial_rotary_factor");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return hf_config_fail(h, err, "partial_rotary_factor must be a number");
    double prf = json_number_value(v);
    if ((int64_t)floor((double)hd * prf) != rotary)
        return hf_value_fail(h, err,
                             "rotary_dim %lld and partial_rotary_factor %g (x head_dim %zu) "
                             "disagree",
                             (long long)rotary, prf, hd);
    return 0;
}

int hf_minimax_m2_params(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    int64_t rotary;

    (void)p;
    if (!hf_get(h, HF_KEYS("rotary_dim"), NULL))
        return 0;
    if (hf_int(h, HF_KEYS("rotary_dim"), true, 0, 2, (int64_t)m->head_dim, &rotary, err))
        return -1;
    if (rotary % 2)
        return hf_value_fail(h, err, "rotary_dim %lld must be even", (long long)rotary);
    if (check_partial(h, rotary, err))
        return -1;
    json_object_del(m->params, "partial_rotary_factor");
    if (json_object_set_new(m->params, "rotary_dim", json_integer(rotary)))
        return model_nomem(err, "the model");
    m->rotary_dim_rule = "partial";
    return 0;
}

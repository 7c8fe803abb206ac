/*
 * hf_ernie_vl.c - ERNIE-4.5-VL's text model (model_type
 * ernie4_5_vl_moe_text, the text_config of an ernie4_5_vl_moe wrapper; its
 * spec in hf_specs.c). Ernie4_5_VLMoeTextAttention (modeling_ernie4_5_vl_moe
 * .py) is ERNIE 4.5's: RMSNorm input_layernorm, q/k/v_proj with biases
 * when use_bias, head_dim hidden / heads, adjacent pairs (rotate_half_text)
 * over the whole head, rope_theta default 500000. Its rotary embedding
 * turns the pairs by a triple [t, h, w] of position ids:
 * compute_default_rope_parameters pre-permutes the first s_h + s_w
 * frequencies (evens, then odds) and recomposition_to_3d interleaves the
 * h and w chunks back, so frequency slot j < 2 s_h turns by h when j is
 * even and by w when odd, and the last s_t slots by t: multimodal rope of
 * style "ernie". The config's rope_parameters.mrope_section lists [h, w, t]
 * (default [22, 22, 20]); params.mrope.section is [t, h, w]
 * (hf_rope.c). Ernie4_5_VLMoeTextRotaryEmbedding raises for any rope type
 * but default: so does the load, naming the block.
 */
#include "models/hf_spec.h"

int hf_ernie_vl_params(hf_load *h, hf_plan *p, model_error *err)
{
    const json_t *params = h->m->params; /* borrowed: hf_rope_params' */
    const json_t *sc = json_object_get(params, "scaling");
    const char *type = json_string_value(sc ? json_object_get(sc, "type")
                                            : json_object_get(params, "rope_type"));

    (void)p;
    if (!type) /* the default rope: neither a scaling nor another rope_type */
        return 0;
    return hf_value_fail(h, err,
                         "rope type '%.40s' (rope_parameters or rope_scaling): Hugging Face's %s "
                         "requires the default rope type (its rotary embedding raises for any "
                         "other)",
                         type, h->m->architecture);
}

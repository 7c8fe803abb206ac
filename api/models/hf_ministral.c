/*
 * hf_ministral.c - Ministral 3 (model_type ministral3; its spec in
 * hf_specs.c): Llama's layer (head_dim default 128, no biases) whose q,
 * after the rotation, is multiplied on every layer by Mistral's query
 * scale (modeling_ministral3.py, Ministral3Attention.forward):
 *     q *= get_llama_4_attn_scale(position_ids, beta, orig)
 *        = 1 + beta * log(1 + floor(position_id / orig))
 * with beta = rope_parameters["llama_4_scaling_beta"] and orig =
 * rope_parameters["original_max_position_embeddings"] read from the
 * standardized rope block (yarn's: the top-level key wins, else the
 * block's, else max_position_embeddings). Hugging Face fails without
 * either (None in the product); posenc refuses naming the key.
 * Ministral3Config's default block, when the config has none, is its
 * __post_init__'s yarn block with beta 0.1 (hf_specs.c).
 */
#include <string.h>

#include "models/hf_spec.h"

/* The standardized block's original_max_position_embeddings: only yarn,
 * llama3 and longrope get one (standardize_rope_params); 0 otherwise. */
static double block_original(const json_t *params, const char **type)
{
    const json_t *sc = json_object_get(params, "scaling");
    const char *t = json_string_value(json_object_get(sc, "type"));

    *type = t ? t : "default";
    if (!t || (strcmp(t, "yarn") != 0 && strcmp(t, "llama3") != 0 && strcmp(t, "longrope") != 0))
        return 0.0;
    return json_number_value(json_object_get(sc, "original_max_position_embeddings"));
}

int hf_ministral3_params(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    json_t *block = NULL; /* owned */
    const char *name, *type;
    bool nested;
    int rc = -1;

    if (hf_rope_block(h, &p->spec->rope, NULL, &block, &name, &nested, err))
        return -1;
    name = name ? name : "rope_parameters";
    const json_t *beta = json_object_get(block, "llama_4_scaling_beta");
    double orig = block_original(m->params, &type);
    if (!json_is_number(beta)) {
        hf_value_fail(h, err,
                      "%s.llama_4_scaling_beta must be a number: Hugging Face's %s multiplies q "
                      "by 1 + beta * log(1 + floor(position / original_max_position_embeddings))",
                      name, m->architecture);
        goto out;
    }
    if (!(orig > 0)) {
        hf_value_fail(h, err,
                      "%s of rope type '%s' has no original_max_position_embeddings: Hugging "
                      "Face's %s divides the position by it for the query scale (yarn, llama3 "
                      "and longrope blocks have one)",
                      name, type, m->architecture);
        goto out;
    }
    m->q_scale = true;
    m->q_scale_beta = json_number_value(beta);
    m->q_scale_orig = orig;
    rc = 0;
out:
    json_decref(block);
    return rc;
}

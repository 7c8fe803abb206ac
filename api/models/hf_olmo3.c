/*
 * hf_olmo3.c - OLMo 3 (model_type olmo3; its spec in hf_specs.c): OLMo 2's
 * layer (no norm before attention, q_norm / k_norm over the whole q and k
 * projections) with sliding-window layers and a rope block per layer type
 * (configuration_olmo3.py, modeling_olmo3.py).
 *
 * Olmo3Config: layer_types, else layer L is "full_attention" when (L + 1)
 * is a multiple of 4 and "sliding_attention" otherwise. Its
 * convert_rope_params_to_dict puts a legacy rope_scaling (OLMo 3's YaRN)
 * into the full_attention block only, so sliding layers keep the default
 * rope; Olmo3RotaryEmbedding builds one rotary embedding per type and a
 * layer uses its type's (hf_rope_block.c).
 */
#include "models/hf_spec.h"

int hf_olmo3_configure(hf_load *h, hf_plan *p, model_error *err)
{
    (void)err;
    if (!hf_get(h, HF_KEYS("layer_types"), NULL)) /* else the loader read it */
        p->sliding = (h->layer + 1) % 4 != 0;
    return 0;
}

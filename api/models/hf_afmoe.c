/*
 * hf_afmoe.c - what Arcee Trinity (model_type afmoe; its spec in
 * hf_specs.c: Llama's layer with q/k RMSNorm per head, head_dim default
 * 128) decides per layer.
 *
 * Hugging Face's AfmoeConfig: layer_types, else sliding_attention unless
 * (L + 1) % global_attn_every_n_layers == 0 (default 4). AfmoeAttention
 * rotates q and k only on sliding layers (is_local_attention: the full
 * layers are NoPE); its sigmoid output gate (gate_proj) acts after the
 * attention. AfmoeModel multiplies the input embeddings (token ids' and
 * given ones) by sqrt(hidden_size) when mup_enabled: folded into layer 0's
 * norm eps, RMSNorm_eps(s x) = RMSNorm_{eps / s^2}(x).
 */
#include "models/hf_spec.h"

/* Layer L's kind: NoPE unless sliding. */
int hf_afmoe_configure(hf_load *h, hf_plan *p, model_error *err)
{
    int64_t every;

    if (!hf_get(h, HF_KEYS("layer_types"), NULL)) {
        if (hf_int(h, HF_KEYS("global_attn_every_n_layers"), false, 4, 1, INT32_MAX, &every, err))
            return -1;
        p->sliding = (int64_t)(h->layer + 1) % every != 0;
    }
    if (!p->sliding)
        p->scheme = SCHEME_NONE;
    return 0;
}

/* mup's input scale into layer 0's norm eps (after the q/k norms took the
 * config's eps). */
int hf_afmoe_params(hf_load *h, hf_plan *p, model_error *err)
{
    bool mup;

    if (hf_bool(h, "mup_enabled", false, &mup, err))
        return -1;
    if (mup && h->layer == 0)
        h->m->norm_eps /= (double)p->a.hidden; /* s^2 with s = sqrt(hidden_size) */
    return 0;
}

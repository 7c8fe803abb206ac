/*
 * hf_modernbert.c - ModernBERT (model_type modernbert; its spec in
 * hf_specs.c), an encoder with rope (modeling_modernbert.py,
 * configuration_modernbert.py):
 *
 * - ModernBertEmbeddings: norm(tok_embeddings(ids)), or norm(inputs_embeds),
 *   a LayerNorm without bias (norm_bias false; true is refused), eps norm_eps.
 * - ModernBertEncoderLayer: attn_norm is Identity at layer 0 (the
 *   embedding norm feeds it) and a LayerNorm without bias after; Wqkv is
 *   one nn.Linear whose output is viewed [3][heads][head_dim] (q, then k,
 *   then v: the stacked layout), head_dim = hidden_size / heads.
 * - layer_types, else layer L is "full_attention" when L is a multiple of
 *   global_attn_every_n_layers (3) and "sliding_attention" otherwise; the
 *   rope block of the type (hf_rope_block.c): global_rope_theta (160000)
 *   and local_rope_theta (10000), a legacy rope_scaling in both.
 * - ModernBertModel.forward: position_ids = arange(seq_len) whatever the
 *   attention mask (posenc's slot rule).
 */
#include "models/hf_spec.h"

int hf_modernbert_configure(hf_load *h, hf_plan *p, model_error *err)
{
    int64_t every;

    if (h->layer == 0)
        p->norm = PE_NORM_NONE; /* attn_norm is Identity */
    if (hf_get(h, HF_KEYS("layer_types"), NULL))
        return 0; /* the loader read it into p->sliding */
    if (hf_int(h, HF_KEYS("global_attn_every_n_layers"), false, 3, 1, INT32_MAX, &every, err))
        return -1;
    p->sliding = h->layer % (uint64_t)every != 0;
    return 0;
}

/* Layer 0: the embedding LayerNorm (weight only) before the attention. */
int hf_modernbert_weights(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;

    (void)p;
    if (h->layer > 0)
        return 0;
    m->embed_norm = PE_NORM_LAYER;
    m->embed_norm_eps = m->norm_eps;
    return hf_weight(h, W_EMBED_NORM_WEIGHT, 1, m->d_model, 0, err, "embeddings.norm.weight");
}

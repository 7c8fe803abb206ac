/*
 * hf_bloom.c - BLOOM (model_type bloom): ALiBi, two LayerNorms at the
 * bottom, a fused projection whose output interleaves q, k, v per head.
 *
 * Hugging Face's BloomModel: h = word_embeddings_layernorm(word_embeddings[ids])
 * (also for inputs_embeds); layer L computes z = input_layernorm(h) and
 * fused = query_key_value(z) (nn.Linear [3*hidden][hidden] + bias), viewed
 * as [heads][3][head_dim]: output row (h*3 + j)*head_dim + c is channel c of
 * head h of q (j = 0), k (1) or v (2). Scores are
 * alibi + (q.k)/sqrt(head_dim) with alibi[h][i][j] = slope_h * key_pos_j:
 * posenc's alibi form "bloom". Both norms use layer_norm_epsilon.
 *
 * So layer 0: embed_norm = word_embeddings_layernorm, norm = input_layernorm;
 * layer L > 0: norm only (its input is the hidden state). ALiBi is added at
 * every layer.
 *
 * Config: hidden_size or n_embed (n_embed wins, as in BloomConfig), n_head
 * or num_attention_heads, n_layer or num_hidden_layers.
 * Tensors: [transformer.]word_embeddings.weight,
 * [transformer.]word_embeddings_layernorm.{weight,bias},
 * [transformer.]h.L.input_layernorm.{weight,bias},
 * [transformer.]h.L.self_attention.query_key_value.{weight,bias}.
 */
#include <stdio.h>

#include "models/hf.h"

/* Undo the per-head interleave: Wq, Wk, Wv as [in][heads*head_dim]. */
static int split_qkv(hf_load *h, model_error *err)
{
    char w[64], b[64];

    snprintf(w, sizeof w, "h.%zu.self_attention.query_key_value.weight", h->layer);
    snprintf(b, sizeof b, "h.%zu.self_attention.query_key_value.bias", h->layer);
    return hf_split_fused(h, HF_FUSED_PER_HEAD, w, b, err);
}

int hf_bloom_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    int64_t d, heads;
    size_t head_dim, L = h->layer;
    const char *dkey;

    if (hf_int(h, HF_KEYS("n_embed", "hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &d, err) ||
        hf_int(h, HF_KEYS("n_head", "num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads,
               err) ||
        hf_check_layer(h, HF_KEYS("n_layer", "num_hidden_layers"), err) ||
        hf_number(h, "layer_norm_epsilon", 1e-5, true, &m->norm_eps, err))
        return -1;
    hf_get(h, HF_KEYS("n_embed", "hidden_size"), &dkey);
    if (hf_head_dim(h, dkey, (size_t)d, (size_t)heads, &head_dim, err))
        return -1;
    m->d_model = (size_t)d;
    m->heads = m->kv_heads = (size_t)heads;
    m->head_dim = head_dim;
    m->norm = PE_NORM_LAYER;
    m->scheme = SCHEME_ALIBI;
    m->position_rule = MODEL_POSITIONS_BLOOM; /* build_alibi_tensor: (cumsum(mask) - 1) * mask */
    m->params = json_pack("{s:s}", "form", "bloom");
    if (!m->params)
        return model_nomem(err, "the model");

    size_t n = m->d_model;
    if (hf_pick_prefix(h, HF_KEYS("transformer.", ""), err,
                       "h.%zu.self_attention.query_key_value.weight", L) ||
        split_qkv(h, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, n, 0, err, "h.%zu.input_layernorm.weight", L) ||
        hf_weight(h, W_NORM_BIAS, 1, n, 0, err, "h.%zu.input_layernorm.bias", L))
        return -1;
    if (L > 0)
        return 0;
    m->embed_norm = PE_NORM_LAYER;
    m->embed_norm_eps = m->norm_eps;
    if (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, n, err, "word_embeddings.weight") ||
        hf_weight(h, W_EMBED_NORM_WEIGHT, 1, n, 0, err, "word_embeddings_layernorm.weight") ||
        hf_weight(h, W_EMBED_NORM_BIAS, 1, n, 0, err, "word_embeddings_layernorm.bias"))
        return -1;
    return 0;
}

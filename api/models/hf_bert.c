/*
 * hf_bert.c - BERT (model_type bert): learned absolute positions, a
 * token-type embedding, the embedding LayerNorm, post-norm layers.
 *
 * Hugging Face's BertEmbeddings: e = LayerNorm(word_embeddings[ids] +
 * token_type_embeddings[0] + position_embeddings[positions]) (eps
 * layer_norm_eps); the same with inputs_embeds in place of the word
 * embeddings. posenc serves token type 0 (what BERT uses when no
 * token_type_ids are given). The layers are post-norm: layer 0's attention
 * sees e itself, and layer L's sees the previous layer's output, already
 * normalised. So layer 0: scheme learned, input_bias = the type-0 row,
 * embed_norm = the embedding LayerNorm, no attention norm; layer L > 0:
 * scheme none and no norm at all. q/k/v are nn.Linear with biases.
 *
 * Tensors: [bert.]embeddings.{word,position,token_type}_embeddings.weight,
 * [bert.]embeddings.LayerNorm.{weight,bias} (or the older .gamma/.beta),
 * [bert.]encoder.layer.L.attention.self.{query,key,value}.{weight,bias}.
 * The position_ids buffer some checkpoints carry is not read.
 */
#include <stdlib.h>
#include <string.h>

#include "models/hf.h"

/* The embedding LayerNorm under its current or its TF-era name. */
static int embed_norm(hf_load *h, size_t d, model_error *err)
{
    bool old = !hf_has(h, "embeddings.LayerNorm.weight") && hf_has(h, "embeddings.LayerNorm.gamma");

    return hf_weight(h, W_EMBED_NORM_WEIGHT, 1, d, 0, err, "embeddings.LayerNorm.%s",
                     old ? "gamma" : "weight") ||
                   hf_weight(h, W_EMBED_NORM_BIAS, 1, d, 0, err, "embeddings.LayerNorm.%s",
                             old ? "beta" : "bias")
               ? -1
               : 0;
}

/* Row 0 of token_type_embeddings as input_bias. */
static int token_type0(hf_load *h, size_t d, model_error *err)
{
    model *m = h->m;
    tensor table, *t = &m->weights[W_INPUT_BIAS];

    if (hf_tensor(h, 2, 0, d, &table, &m->weight_dtype[W_INPUT_BIAS], err,
                  "embeddings.token_type_embeddings.weight"))
        return -1;
    if (table.dim[0] == 0) {
        tensor_free(&table);
        return model_fail(err, MODEL_E_TENSOR,
                          "%s: tensor %sembeddings."
                          "token_type_embeddings.weight has no rows (posenc serves token type 0)",
                          st_set_source(h->weights), h->prefix);
    }
    /* The first row is the start of the block: keep it, drop the rest. */
    float *row = realloc(table.data, d * sizeof *row);
    t->data = row ? row : table.data;
    t->ndim = 1;
    t->dim[0] = d;
    return 0;
}

int hf_bert_like_load(hf_load *h, const char *const *prefixes, model_error *err)
{
    model *m = h->m;
    int64_t d, heads;
    size_t head_dim, L = h->layer;
    const char *pet;

    if (hf_int(h, HF_KEYS("hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &d, err) ||
        hf_int(h, HF_KEYS("num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads, err) ||
        hf_check_layer(h, HF_KEYS("num_hidden_layers"), err) ||
        hf_number(h, "layer_norm_eps", 1e-12, true, &m->embed_norm_eps, err) ||
        hf_string(h, "position_embedding_type", "absolute", &pet, err) ||
        hf_head_dim(h, "hidden_size", (size_t)d, (size_t)heads, &head_dim, err))
        return -1;
    if (strcmp(pet, "absolute") != 0)
        return hf_value_fail(h, err,
                             "position_embedding_type '%.40s' is not supported (only "
                             "absolute)",
                             pet);
    m->d_model = (size_t)d;
    m->heads = m->kv_heads = (size_t)heads;
    m->head_dim = head_dim;
    m->norm = PE_NORM_NONE;
    m->scheme = L == 0 ? SCHEME_LEARNED : SCHEME_NONE;
    m->params = json_object();
    if (!m->params)
        return model_nomem(err, "the model");

    size_t n = m->d_model;
    if (hf_pick_prefix(h, prefixes, err, "encoder.layer.%zu.attention.self.query.weight", L) ||
        hf_linear(h, W_WQ, n, n, err, "encoder.layer.%zu.attention.self.query.weight", L) ||
        hf_linear(h, W_WK, n, n, err, "encoder.layer.%zu.attention.self.key.weight", L) ||
        hf_linear(h, W_WV, n, n, err, "encoder.layer.%zu.attention.self.value.weight", L) ||
        hf_weight(h, W_BQ, 1, n, 0, err, "encoder.layer.%zu.attention.self.query.bias", L) ||
        hf_weight(h, W_BK, 1, n, 0, err, "encoder.layer.%zu.attention.self.key.bias", L) ||
        hf_weight(h, W_BV, 1, n, 0, err, "encoder.layer.%zu.attention.self.value.bias", L))
        return -1;
    if (L > 0)
        return 0;
    m->embed_norm = PE_NORM_LAYER;
    if (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, n, err, "embeddings.word_embeddings.weight") ||
        hf_weight(h, W_POSITION_TABLE, 2, 0, n, err, "embeddings.position_embeddings.weight") ||
        token_type0(h, n, err) || embed_norm(h, n, err))
        return -1;
    return 0;
}

int hf_bert_load(hf_load *h, model_error *err)
{
    return hf_bert_like_load(h, HF_KEYS("bert.", ""), err);
}

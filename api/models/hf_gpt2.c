/*
 * hf_gpt2.c - GPT-2 (model_type gpt2): learned absolute positions, a
 * LayerNorm before attention, a fused Conv1D projection.
 *
 * Hugging Face's GPT2Model: h = wte[ids] + wpe[positions]; layer L computes
 * z = ln_1(h) (LayerNorm, layer_norm_epsilon) and
 * [q | k | v] = z . c_attn.weight + c_attn.bias, where Conv1D stores its
 * weight [in][out] = [n_embd][3*n_embd]: columns 0..n_embd are Wq, then Wk,
 * then Wv, already the contract's orientation. Scores are scaled by
 * 1/sqrt(head_dim) (scale_attn_weights, default true) and also by
 * 1/(L+1) with scale_attn_by_inverse_layer_idx; both go into score_scale.
 *
 * Layer 0 is scheme learned with wpe as the position table. A later layer
 * sees the hidden state, to which the model adds no positions: scheme
 * none, norm ln_1.
 *
 * Tensors: [transformer.]wte.weight, [transformer.]wpe.weight,
 * [transformer.]h.L.ln_1.{weight,bias}, [transformer.]h.L.attn.c_attn.{weight,bias}.
 * The attn.bias causal-mask buffer older checkpoints carry is not read.
 */
#include <math.h>
#include <string.h>

#include "models/hf.h"

/* Columns [c0, c0 + width) of src [rows][cols] into a new tensor. */
static int columns(const tensor *src, size_t c0, size_t width, tensor *out, model_error *err)
{
    size_t rows = src->dim[0], cols = src->dim[1];

    if (hf_new_matrix(out, rows, width, err))
        return -1;
    for (size_t r = 0; r < rows; r++)
        memcpy(out->data + r * width, src->data + r * cols + c0, width * sizeof(float));
    return 0;
}

/* Entries [c0, c0 + width) of a vector into a new 1-D tensor. */
static int slice(const tensor *src, size_t c0, size_t width, tensor *out, model_error *err)
{
    if (hf_new_matrix(out, 1, width, err))
        return -1;
    memcpy(out->data, src->data + c0, width * sizeof(float));
    out->ndim = 1;
    out->dim[0] = width;
    return 0;
}

static int split_c_attn(hf_load *h, size_t d, model_error *err)
{
    model *m = h->m;
    tensor w = {0}, b = {0};
    const char *dtype = NULL;
    int rc = -1;

    if (hf_tensor(h, 2, d, 3 * d, &w, &dtype, err, "h.%zu.attn.c_attn.weight", h->layer) ||
        hf_tensor(h, 1, 3 * d, 0, &b, NULL, err, "h.%zu.attn.c_attn.bias", h->layer))
        goto out;
    for (int j = 0; j < 3; j++) {
        if (columns(&w, (size_t)j * d, d, &m->weights[W_WQ + j], err) ||
            slice(&b, (size_t)j * d, d, &m->weights[W_BQ + j], err))
            goto out;
        m->weight_dtype[W_WQ + j] = m->weight_dtype[W_BQ + j] = dtype;
    }
    rc = 0;
out:
    tensor_free(&w);
    tensor_free(&b);
    return rc;
}

int hf_gpt2_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    int64_t d, heads;
    size_t head_dim, L = h->layer;
    bool scale_weights, by_layer;

    if (hf_int(h, HF_KEYS("n_embd", "hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &d, err) ||
        hf_int(h, HF_KEYS("n_head", "num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads,
               err) ||
        hf_check_layer(h, HF_KEYS("n_layer", "num_hidden_layers"), err) ||
        hf_number(h, "layer_norm_epsilon", 1e-5, true, &m->norm_eps, err) ||
        hf_bool(h, "scale_attn_weights", true, &scale_weights, err) ||
        hf_bool(h, "scale_attn_by_inverse_layer_idx", false, &by_layer, err) ||
        hf_head_dim(h, "n_embd", (size_t)d, (size_t)heads, &head_dim, err))
        return -1;
    m->d_model = (size_t)d;
    m->heads = m->kv_heads = (size_t)heads;
    m->head_dim = head_dim;
    m->norm = PE_NORM_LAYER;
    m->scheme = L == 0 ? SCHEME_LEARNED : SCHEME_NONE;
    m->params = json_object();
    if (!m->params)
        return model_nomem(err, "the model");
    if (!scale_weights || by_layer) {
        double scale = (scale_weights ? 1.0 / sqrt((double)head_dim) : 1.0) /
                       (by_layer ? (double)(L + 1) : 1.0);
        if (json_object_set_new(m->params, "score_scale", json_real(scale)))
            return model_nomem(err, "the model");
    }
    size_t n = m->d_model;
    if (hf_pick_prefix(h, HF_KEYS("transformer.", ""), err, "h.%zu.attn.c_attn.weight", L) ||
        split_c_attn(h, n, err) ||
        hf_weight(h, W_NORM_WEIGHT, 1, n, 0, err, "h.%zu.ln_1.weight", L) ||
        hf_weight(h, W_NORM_BIAS, 1, n, 0, err, "h.%zu.ln_1.bias", L))
        return -1;
    if (L == 0 && (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, n, err, "wte.weight") ||
                   hf_weight(h, W_POSITION_TABLE, 2, 0, n, err, "wpe.weight")))
        return -1;
    return 0;
}

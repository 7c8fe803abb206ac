/*
 * hf_gpt2.c - what GPT-2 (model_type gpt2; its spec in hf_specs.c:
 * learned absolute positions, a LayerNorm before attention) computes
 * differently: its fused Conv1D projection and its score scale.
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

#include "models/hf_spec.h"

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

/* scale_attn_weights and scale_attn_by_inverse_layer_idx into score_scale. */
int hf_gpt2_params(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;
    bool scale_weights, by_layer;

    (void)p;
    if (hf_bool(h, "scale_attn_weights", true, &scale_weights, err) ||
        hf_bool(h, "scale_attn_by_inverse_layer_idx", false, &by_layer, err))
        return -1;
    if (scale_weights && !by_layer)
        return 0;
    double scale = (scale_weights ? 1.0 / sqrt((double)m->head_dim) : 1.0) /
                   (by_layer ? (double)(h->layer + 1) : 1.0);
    if (json_object_set_new(m->params, "score_scale", json_real(scale)))
        return model_nomem(err, "the model");
    return 0;
}

int hf_gpt2_weights(hf_load *h, hf_plan *p, model_error *err)
{
    (void)p;
    return split_c_attn(h, h->m->d_model, err);
}

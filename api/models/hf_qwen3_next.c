/*
 * hf_qwen3_next.c - gated attention: Qwen3-Next (model_type qwen3_next)
 * and the text model of Qwen3.5 / 3.6 (qwen3_5_text, qwen3_5_moe_text), as
 * Qwen3NextAttention.forward and Qwen3_5Attention.forward compute q, k, v:
 *
 *   z             = input_layernorm(h)    RMSNorm as x*(1 + w)
 *   [query|gate]  = q_proj(z)             viewed [T][heads][2*head_dim]
 *   q = rotate(q_norm(query))             q_norm, k_norm: RMSNorm over
 *   k = rotate(k_norm(k_proj(z)))         head_dim as x*(1 + w)
 *   v = v_proj(z)
 *
 * The rotation is rotate_half on the first partial_rotary_factor*head_dim
 * channels of each head (the configs' default 0.25). The gate multiplies
 * the attention's output through a sigmoid, so q, k and v do not depend on
 * it; q_proj's rows are split here into wq (each head's first head_dim
 * rows) and w_gate (its last head_dim), so that `return: ["gate"]` gives
 * the gate before the sigmoid. Every (1 + w) is folded at load
 * (norm_one_plus in the spec). Qwen3.5's interleaved M-RoPE turns text
 * tokens (t = h = w) exactly as 1-D RoPE: posenc serves text positions.
 *
 * Three layers in four are Gated DeltaNet (linear_attention), with no
 * positional encoding and no softmax attention: choosing one is refused by
 * name. layer_types absent: HF's default, linear_attention except where
 * (L + 1) % full_attention_interval == 0 (interval 4).
 */
#include <string.h>

#include "models/hf_spec.h"

/* A layer type under its transformers 5 name (remap_legacy_layer_types). */
static const char *current_type(const char *t)
{
    if (strcmp(t, "mamba") == 0 || strcmp(t, "conv") == 0)
        return "linear_attention";
    return strcmp(t, "attention") == 0 ? "full_attention" : t;
}

/* Layer L's type, from layer_types or from full_attention_interval.
 * (When hf_layer_type reads the transformers 5 vocabulary, a list is
 * checked there; the interval default stays this architecture's.) */
static int layer_type(const hf_load *h, const char **type, bool *listed, model_error *err)
{
    const json_t *types = hf_get(h, HF_KEYS("layer_types"), NULL);
    size_t L = h->layer;
    int64_t layers, interval;

    if (hf_int(h, HF_KEYS("num_hidden_layers"), true, 0, 1, INT32_MAX, &layers, err))
        return -1;
    *listed = types != NULL;
    if (!types) {
        if (hf_int(h, HF_KEYS("full_attention_interval"), false, 4, 1, INT32_MAX, &interval, err))
            return -1;
        *type = (L + 1) % (size_t)interval ? "linear_attention" : "full_attention";
        return 0;
    }
    if (!json_is_array(types))
        return hf_config_fail(h, err, "layer_types must be a list of strings");
    if ((int64_t)json_array_size(types) != layers)
        return hf_value_fail(h, err, "layer_types has %zu entries but num_hidden_layers is %lld",
                             json_array_size(types), (long long)layers);
    const char *t = json_string_value(json_array_get(types, L));
    if (!t)
        return hf_config_fail(h, err, "layer_types[%zu] must be a string", L);
    *type = current_type(t);
    return 0;
}

int hf_qwen3_next_configure(hf_load *h, hf_plan *p, model_error *err)
{
    const char *type = NULL;
    bool listed = false;

    (void)p;
    if (layer_type(h, &type, &listed, err))
        return -1;
    if (strcmp(type, "full_attention") == 0)
        return 0;
    if (strcmp(type, "linear_attention") == 0)
        return hf_value_fail(h, err,
                             "layer %zu is linear_attention: it has no positional encoding or "
                             "Q/K/V (%s); choose a full_attention layer",
                             h->layer,
                             listed ? "layer_types" : "full_attention_interval's layer_types");
    return hf_value_fail(h, err,
                         "layer_types[%zu] is '%.40s', not full_attention or "
                         "linear_attention",
                         h->layer, type);
}

/* q_proj's rows [heads][query head_dim | gate head_dim][in] into query
 * and gate, each [in][heads*head_dim] (the contract's orientation). */
static void split_query_gate(const float *rows, size_t heads, size_t hd, size_t in, float *query,
                             float *gate)
{
    size_t qd = heads * hd;

    for (size_t r = 0; r < 2 * qd; r++) {
        size_t h = r / (2 * hd), j = r % (2 * hd);
        float *dst = j < hd ? query + h * hd + j : gate + h * hd + (j - hd);
        for (size_t i = 0; i < in; i++)
            dst[i * qd] = rows[r * in + i];
    }
}

/* One of q_proj's tensors (weight: in = d_model; bias: in = 1) split into
 * weights[query] and weights[gate]. */
static int read_split(hf_load *h, const hf_tensor_names *n, const char *what, size_t in,
                      weight_id query, weight_id gate, model_error *err)
{
    model *m = h->m;
    size_t qd = m->heads * m->head_dim;
    tensor t = {0}; /* owned: q_proj's tensor as stored */
    const char *dtype = NULL;

    if (hf_tensor(h, in > 1 ? 2 : 1, 2 * qd, in > 1 ? in : 0, &t, &dtype, err, "%s.%zu.%s.%s",
                  n->layer_dir, h->layer, n->q, what))
        return -1;
    int rc = -1;
    if (hf_new_matrix(&m->weights[query], in, qd, err) ||
        hf_new_matrix(&m->weights[gate], in, qd, err))
        goto done;
    if (in == 1) { /* a bias stays a vector */
        m->weights[query].ndim = m->weights[gate].ndim = 1;
        m->weights[query].dim[0] = m->weights[gate].dim[0] = qd;
    }
    split_query_gate(t.data, m->heads, m->head_dim, in, m->weights[query].data,
                     m->weights[gate].data);
    m->weight_dtype[query] = m->weight_dtype[gate] = dtype;
    rc = 0;
done:
    tensor_free(&t);
    return rc;
}

int hf_qwen3_next_weights(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_tensor_names *n = p->spec->names;
    model *m = h->m;
    size_t L = h->layer, d = m->d_model, kvd = m->kv_heads * m->head_dim;

    m->gated = true;
    if (read_split(h, n, "weight", d, W_WQ, W_GATE, err) ||
        hf_linear(h, W_WK, kvd, d, err, "%s.%zu.%s.weight", n->layer_dir, L, n->k) ||
        hf_linear(h, W_WV, kvd, d, err, "%s.%zu.%s.weight", n->layer_dir, L, n->v))
        return -1;
    if (!p->bias)
        return 0;
    return read_split(h, n, "bias", 1, W_BQ, W_GATE_BIAS, err) ||
           hf_weight(h, W_BK, 1, kvd, 0, err, "%s.%zu.%s.bias", n->layer_dir, L, n->k) ||
           hf_weight(h, W_BV, 1, kvd, 0, err, "%s.%zu.%s.bias", n->layer_dir, L, n->v);
}

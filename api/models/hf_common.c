/*
 * hf_common.c - config.json and tensor readers shared by the Hugging Face
 * architecture loaders (see hf.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/hf.h"
#include "json/json_fields.h"

#define NAME_MAX_LEN 256

__attribute__((format(printf, 4, 0))) static int
vconfig_fail(const hf_load *h, model_error *err, model_error_kind kind, const char *fmt, va_list ap)
{
    int n = snprintf(err->message, sizeof err->message, "%s: ", h->config_path);

    err->kind = kind;
    if (n >= 0 && (size_t)n < sizeof err->message)
        vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
    return -1;
}

int hf_config_fail(const hf_load *h, model_error *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vconfig_fail(h, err, MODEL_E_KEY, fmt, ap);
    va_end(ap);
    return -1;
}

int hf_value_fail(const hf_load *h, model_error *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vconfig_fail(h, err, MODEL_E_VALUE, fmt, ap);
    va_end(ap);
    return -1;
}

void hf_warn(const hf_load *h, const char *fmt, ...)
{
    char msg[MODEL_MESSAGE_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    model_warn(h->warn, "%s: %s", h->config_path, msg);
}

/* ---- config.json ------------------------------------------------------- */

const json_t *hf_get(const hf_load *h, const char *const *keys, const char **which)
{
    for (const char *const *k = keys; *k; k++) {
        const json_t *v = json_object_get(h->config, *k);
        if (v && !json_is_null(v)) {
            if (which)
                *which = *k;
            return v;
        }
    }
    if (which)
        *which = keys[0];
    return NULL;
}

int hf_int(const hf_load *h, const char *const *keys, bool required, int64_t dflt, int64_t lo,
           int64_t hi, int64_t *out, model_error *err)
{
    const char *key;
    const json_t *v = hf_get(h, keys, &key);

    if (!v) {
        if (required)
            return hf_config_fail(h, err, "missing key '%s'", keys[0]);
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v)) {
        char got[64];
        jf_describe(v, got, sizeof got);
        return hf_config_fail(h, err, "%s must be an integer, got %s", key, got);
    }
    json_int_t n = json_integer_value(v);
    if (n < lo || n > hi)
        return hf_value_fail(h, err, "%s = %lld is out of range [%lld, %lld]", key, (long long)n,
                             (long long)lo, (long long)hi);
    *out = n;
    return 0;
}

int hf_number(const hf_load *h, const char *key, double dflt, bool positive, double *out,
              model_error *err)
{
    return hf_number_of(h, (const char *const[]){key, NULL}, dflt, positive, out, err);
}

int hf_number_of(const hf_load *h, const char *const *keys, double dflt, bool positive, double *out,
                 model_error *err)
{
    const char *key;
    const json_t *v = hf_get(h, keys, &key);

    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v)) {
        char got[64];
        jf_describe(v, got, sizeof got);
        return hf_config_fail(h, err, "%s must be a number, got %s", key, got);
    }
    double x = json_number_value(v);
    if (!isfinite(x) || (positive && !(x > 0)))
        return hf_value_fail(h, err, "%s = %g must be %s", key, x,
                             positive ? "a finite number > 0" : "finite");
    *out = x;
    return 0;
}

int hf_bool(const hf_load *h, const char *key, bool dflt, bool *out, model_error *err)
{
    const json_t *v = hf_get(h, (const char *const[]){key, NULL}, NULL);

    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return hf_config_fail(h, err, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

int hf_string(const hf_load *h, const char *key, const char *dflt, const char **out,
              model_error *err)
{
    const json_t *v = hf_get(h, (const char *const[]){key, NULL}, NULL);

    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v))
        return hf_config_fail(h, err, "%s must be a string", key);
    *out = json_string_value(v);
    return 0;
}

int hf_check_layer(const hf_load *h, const char *const *keys, model_error *err)
{
    const char *key;
    int64_t n;

    if (hf_int(h, keys, false, -1, 1, 1 << 20, &n, err))
        return -1;
    hf_get(h, keys, &key);
    if (n >= 0 && h->layer >= (size_t)n)
        return hf_value_fail(h, err, "layer %zu does not exist: %s is %lld (layers count from 0)",
                             h->layer, key, (long long)n);
    return 0;
}

int hf_head_dim(const hf_load *h, const char *hidden_key, size_t hidden, size_t heads,
                size_t *head_dim, model_error *err)
{
    if (hidden % heads != 0)
        return hf_value_fail(h, err, "%s %zu is not divisible by the %zu attention heads",
                             hidden_key, hidden, heads);
    *head_dim = hidden / heads;
    return 0;
}

int hf_check_kv_heads(const hf_load *h, const hf_attention_heads *a, model_error *err)
{
    if (a->heads % a->kv_heads != 0)
        return hf_value_fail(h, err,
                             "num_attention_heads %lld is not a multiple of "
                             "num_key_value_heads %lld",
                             (long long)a->heads, (long long)a->kv_heads);
    return 0;
}

/* ---- tensors -------------------------------------------------------------- */

static int oom(model_error *err)
{
    return model_nomem(err, "weights");
}

/* prefix + formatted name into buf (NAME_MAX_LEN); -1 when too long. */
__attribute__((format(printf, 3, 0))) static int vname(const hf_load *h, char *buf, const char *fmt,
                                                       va_list ap)
{
    size_t p = strlen(h->prefix);
    memcpy(buf, h->prefix, p);
    int n = vsnprintf(buf + p, NAME_MAX_LEN - p, fmt, ap);
    return n < 0 || (size_t)n >= NAME_MAX_LEN - p ? -1 : 0;
}

int hf_pick_prefix(hf_load *h, const char *const *prefixes, model_error *err, const char *fmt, ...)
{
    char name[NAME_MAX_LEN], first[NAME_MAX_LEN] = "";
    va_list ap;

    for (const char *const *p = prefixes; *p; p++) {
        snprintf(h->prefix, sizeof h->prefix, "%s", *p);
        va_start(ap, fmt);
        int rc = vname(h, name, fmt, ap);
        va_end(ap);
        if (rc)
            return model_fail(err, MODEL_E_TENSOR, "tensor name too long");
        if (st_set_has(h->weights, name))
            return 0;
        if (!first[0])
            memcpy(first, name, sizeof first);
    }
    h->prefix[0] = '\0';
    return model_fail(err, MODEL_E_TENSOR,
                      "%s: no tensor %s (missing tensor; is layer %zu in this checkpoint?)",
                      st_set_source(h->weights), first, h->layer);
}

bool hf_has(const hf_load *h, const char *fmt, ...)
{
    char name[NAME_MAX_LEN];
    va_list ap;

    va_start(ap, fmt);
    int rc = vname(h, name, fmt, ap);
    va_end(ap);
    return rc == 0 && st_set_has(h->weights, name);
}

__attribute__((format(printf, 8, 0))) static int vtensor(hf_load *h, size_t ndim, size_t d0,
                                                         size_t d1, tensor *out, const char **dtype,
                                                         model_error *err, const char *fmt,
                                                         va_list ap)
{
    char name[NAME_MAX_LEN];
    size_t dims[2] = {d0, d1};

    if (vname(h, name, fmt, ap))
        return model_fail(err, MODEL_E_TENSOR, "tensor name too long");
    return st_set_read(h->weights, name, ndim, dims, out, dtype, err);
}

int hf_tensor(hf_load *h, size_t ndim, size_t d0, size_t d1, tensor *out, const char **dtype,
              model_error *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    int rc = vtensor(h, ndim, d0, d1, out, dtype, err, fmt, ap);
    va_end(ap);
    return rc;
}

int hf_weight(hf_load *h, weight_id w, size_t ndim, size_t d0, size_t d1, model_error *err,
              const char *fmt, ...)
{
    va_list ap;

    tensor_free(&h->m->weights[w]);
    va_start(ap, fmt);
    int rc = vtensor(h, ndim, d0, d1, &h->m->weights[w], &h->m->weight_dtype[w], err, fmt, ap);
    va_end(ap);
    return rc;
}

int hf_new_matrix(tensor *t, size_t rows, size_t cols, model_error *err)
{
    size_t n;

    memset(t, 0, sizeof *t);
    if (mul_size(rows, cols, &n) || n > SIZE_MAX / sizeof(float) ||
        !(t->data = malloc((n ? n : 1) * sizeof(float))))
        return oom(err);
    t->ndim = 2;
    t->dim[0] = rows;
    t->dim[1] = cols;
    return 0;
}

int hf_linear(hf_load *h, weight_id w, size_t out_features, size_t in_features, model_error *err,
              const char *fmt, ...)
{
    tensor stored, *t = &h->m->weights[w];
    const char *dtype = NULL;
    va_list ap;

    va_start(ap, fmt);
    int rc = vtensor(h, 2, out_features, in_features, &stored, &dtype, err, fmt, ap);
    va_end(ap);
    if (rc)
        return -1;
    tensor_free(t);
    if (hf_new_matrix(t, in_features, out_features, err)) {
        tensor_free(&stored);
        return -1;
    }
    /* Row i of the result gathers column i of the stored matrix. */
#pragma omp parallel for schedule(static) if (in_features * out_features > 65536)
    for (size_t i = 0; i < in_features; i++)
        for (size_t o = 0; o < out_features; o++)
            t->data[i * out_features + o] = stored.data[o * in_features + i];
    tensor_free(&stored);
    h->m->weight_dtype[w] = dtype;
    return 0;
}

/* ---- fused projections ------------------------------------------------------ */

/* Stored row of output column c of part j (0 q, 1 k, 2 v). */
static size_t fused_row(hf_fused_layout layout, const model *m, int j, size_t c)
{
    size_t hd = m->head_dim, qd = m->heads * hd, kvd = m->kv_heads * hd;

    if (layout == HF_FUSED_PER_HEAD)
        return (c / hd * 3 + (size_t)j) * hd + c % hd;
    if (layout == HF_FUSED_GROUPED) {
        size_t g = m->heads / m->kv_heads, head = c / hd; /* q head, or kv head */
        size_t block = j == 0 ? head / g * (g + 2) + head % g
                              : head * (g + 2) + g + (size_t)(j - 1);
        return block * hd + c % hd;
    }
    return j == 0 ? c : j == 1 ? qd + c : qd + kvd + c;
}

int hf_split_fused(hf_load *h, hf_fused_layout layout, const char *weight_name,
                   const char *bias_name, model_error *err)
{
    model *m = h->m;
    size_t d = m->d_model, qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    size_t rows = qd + 2 * kvd, width[3] = {qd, kvd, kvd};
    tensor w = {0}, b = {0}; /* owned: the fused tensors as stored */
    const char *dtype = NULL;
    int rc = -1;

    if (layout == HF_FUSED_PER_HEAD && m->kv_heads != m->heads)
        return model_fail(err, MODEL_E_VALUE, "per-head fused q/k/v needs kv_heads == heads");
    if (layout == HF_FUSED_GROUPED && m->heads % m->kv_heads != 0)
        return model_fail(err, MODEL_E_VALUE,
                          "grouped fused q/k/v needs heads divisible by "
                          "kv_heads");
    if (hf_tensor(h, 2, rows, d, &w, &dtype, err, "%s", weight_name) ||
        (bias_name && hf_tensor(h, 1, rows, 0, &b, NULL, err, "%s", bias_name)))
        goto out;
    for (int j = 0; j < 3; j++) {
        tensor *wt = &m->weights[W_WQ + j], *bt = &m->weights[W_BQ + j];
        size_t n = width[j];
        tensor_free(wt);
        if (hf_new_matrix(wt, d, n, err))
            goto out;
        for (size_t c = 0; c < n; c++) {
            const float *src = w.data + fused_row(layout, m, j, c) * d;
            for (size_t i = 0; i < d; i++)
                wt->data[i * n + c] = src[i];
        }
        m->weight_dtype[W_WQ + j] = dtype;
        if (!bias_name)
            continue;
        tensor_free(bt);
        if (hf_new_matrix(bt, 1, n, err))
            goto out;
        bt->ndim = 1;
        bt->dim[0] = n;
        for (size_t c = 0; c < n; c++)
            bt->data[c] = b.data[fused_row(layout, m, j, c)];
        m->weight_dtype[W_BQ + j] = dtype;
    }
    rc = 0;
out:
    tensor_free(&w);
    tensor_free(&b);
    return rc;
}

/* The layer types of transformers 5 (configuration_utils.py
 * ALLOWED_ATTN_LAYER_TYPES) after its remap_legacy_layer_types ("mamba",
 * "conv": linear_attention; "attention": full_attention); NULL: unknown. */
const char *hf_layer_type_name(const char *t)
{
    static const char *const known[] = {"full_attention",
                                        "sliding_attention",
                                        "chunked_attention",
                                        "linear_attention",
                                        "window_attention",
                                        "compressed_sparse_attention",
                                        "heavily_compressed_attention",
                                        "deepseek_sparse_attention",
                                        "hybrid",
                                        "hybrid_sliding",
                                        "moe",
                                        "minimax_m3_sparse",
                                        "mlp"}; /* Nemotron-H's MLP-only blocks */

    if (strcmp(t, "mamba") == 0 || strcmp(t, "conv") == 0)
        return "linear_attention";
    if (strcmp(t, "attention") == 0)
        return "full_attention";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(t, known[i]) == 0)
            return known[i];
    return NULL;
}

int hf_serve_layer_type(const hf_load *h, const char *type, bool *sliding, model_error *err)
{
    *sliding = strcmp(type, "sliding_attention") == 0;
    if (*sliding || strcmp(type, "full_attention") == 0 || strcmp(type, "chunked_attention") == 0)
        return 0; /* the chunk or the window only masks the scores */
    if (strcmp(type, "linear_attention") == 0 || strcmp(type, "mlp") == 0 ||
        strcmp(type, "moe") == 0)
        return hf_value_fail(h, err,
                             "layer %zu is %s: it has no positional encoding or Q/K/V (serve one "
                             "of the attention layers)",
                             h->layer, type);
    return hf_value_fail(h, err,
                         "layer %zu is %s: posenc does not model that attention (serve a "
                         "full_attention, sliding_attention or chunked_attention layer)",
                         h->layer, type);
}

int hf_attention_layer_list(const hf_load *h, const char *key, bool *sliding, model_error *err)
{
    const json_t *list = hf_get(h, (const char *const[]){key, NULL}, NULL), *item;
    bool listed = !list;
    size_t i;

    if (list && !json_is_array(list))
        return hf_config_fail(h, err, "%s must be a list of layer indices", key);
    json_array_foreach (list, i, item) {
        if (!json_is_integer(item) || json_integer_value(item) < 0)
            return hf_config_fail(h, err, "%s[%zu] must be a layer index (an integer >= 0)", key,
                                  i);
        listed = listed || (size_t)json_integer_value(item) == h->layer;
    }
    return hf_serve_layer_type(h, listed ? "full_attention" : "linear_attention", sliding, err);
}

int hf_pattern_layer_type(const hf_load *h, const char *key, bool *sliding, model_error *err)
{
    static const char chars[] = "ME*-";
    static const char *const types[] = {"linear_attention", "moe", "full_attention", "mlp"};
    const char *pattern;
    int64_t layers;

    if (hf_string(h, key, NULL, &pattern, err))
        return -1;
    size_t n = strlen(pattern);
    if (hf_int(h, HF_KEYS("num_hidden_layers"), false, (int64_t)n, 1, INT64_MAX, &layers, err))
        return -1;
    if ((size_t)layers != n)
        return hf_value_fail(h, err, "%s has %zu characters but num_hidden_layers is %lld", key, n,
                             (long long)layers);
    for (size_t i = 0; i < n; i++)
        if (!strchr(chars, pattern[i]))
            return hf_value_fail(h, err, "%s[%zu] is '%c', not one of M, E, *, -", key, i,
                                 pattern[i]);
    if (h->layer >= n)
        return hf_value_fail(h, err, "%s has %zu characters: none for layer %zu", key, n, h->layer);
    return hf_serve_layer_type(h, types[strchr(chars, pattern[h->layer]) - chars], sliding, err);
}

int hf_layer_type(const hf_load *h, const char *const *keys, bool *sliding, model_error *err)
{
    const json_t *types = hf_get(h, keys, NULL);
    size_t L = h->layer;
    int64_t layers;

    if (!json_is_array(types))
        return hf_config_fail(h, err, "layer_types must be a list of strings");
    if (hf_int(h, HF_KEYS("num_hidden_layers"), false, (int64_t)json_array_size(types), 1,
               INT64_MAX, &layers, err))
        return -1;
    if ((size_t)layers != json_array_size(types))
        return hf_value_fail(h, err, "layer_types has %zu entries but num_hidden_layers is %lld",
                             json_array_size(types), (long long)layers);
    if (L >= json_array_size(types))
        return hf_value_fail(h, err, "layer_types has %zu entries: none for layer %zu",
                             json_array_size(types), L);
    /* every layer's type must be one transformers knows (contract 1.2,
     * architecture settlements; 1.3: its version 5 vocabulary) */
    for (size_t i = 0; i < json_array_size(types); i++) {
        const char *t = json_string_value(json_array_get(types, i));
        if (!t)
            return hf_config_fail(h, err, "layer_types[%zu] must be a string", i);
        if (!hf_layer_type_name(t))
            return hf_value_fail(h, err,
                                 "layer_types[%zu] is '%.40s', not a layer type transformers "
                                 "knows (full_attention, sliding_attention, chunked_attention, "
                                 "linear_attention, ...)",
                                 i, t);
    }
    return hf_serve_layer_type(h, hf_layer_type_name(json_string_value(json_array_get(types, L))),
                               sliding, err);
}

int hf_layer_uses_rope(const hf_load *h, bool empty_is_default, bool *rope, model_error *err)
{
    const json_t *list = hf_get(h, HF_KEYS("no_rope_layers"), NULL), *item;
    int64_t interval, layers;
    size_t i;

    if (hf_int(h, HF_KEYS("num_hidden_layers"), false, 0, 1, INT32_MAX, &layers, err))
        return -1;

    if (list && !json_is_array(list))
        return hf_config_fail(h, err, "no_rope_layers must be a list of 0 and 1");
    if (!list || (empty_is_default && json_array_size(list) == 0)) {
        if (hf_int(h, HF_KEYS("no_rope_layer_interval"), false, 4, 1, INT32_MAX, &interval, err))
            return -1;
        *rope = (int64_t)(h->layer + 1) % interval != 0;
        return 0;
    }
    json_array_foreach (list, i, item) {
        if (!json_is_integer(item) ||
            (json_integer_value(item) != 0 && json_integer_value(item) != 1)) {
            char got[64];
            jf_describe(item, got, sizeof got);
            return hf_value_fail(h, err,
                                 "no_rope_layers[%zu] must be 0 (no rope) or 1 (rope), "
                                 "got %s",
                                 i, got);
        }
    }
    if (layers && json_array_size(list) != (size_t)layers)
        return hf_value_fail(h, err, "no_rope_layers has %zu entries; num_hidden_layers is %lld",
                             json_array_size(list), (long long)layers);
    if (h->layer >= json_array_size(list))
        return hf_value_fail(h, err, "no_rope_layers has %zu entries, none for layer %zu",
                             json_array_size(list), h->layer);
    *rope = json_integer_value(json_array_get(list, h->layer)) == 1;
    return 0;
}

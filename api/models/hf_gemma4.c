/*
 * hf_gemma4.c - Gemma 4's text layers (model_type gemma4_text, and the
 * gemma4 wrapper's text_config; its spec in hf_specs.c), as
 * Gemma4TextAttention.forward computes q, k and v (modeling_gemma4.py,
 * configuration_gemma4.py):
 *
 *   z = input_layernorm(h)                    Gemma4RMSNorm: x * w (not 1 + w)
 *   q = rotate(q_norm(q_proj(z)))             q_norm, k_norm: x * w per head
 *   k = rotate(k_norm(k_proj(z)))
 *   v = v_norm(v_proj(z))                     v_norm: RMSNorm without weight
 *
 * and scores q.k^T * 1.0 (self.scaling). Token ids are scaled by
 * sqrt(hidden_size) in the table's dtype (Gemma4TextScaledWordEmbedding);
 * the per-layer input embeddings act after the attention.
 *
 * Layer types: layer_types, else sliding except every 6th layer; the last
 * layer is always full_attention (__post_init__ forces it). Sliding layers
 * use rope_parameters.sliding_attention (default rope, theta 1e4), full
 * layers rope_parameters.full_attention (proportional: partial_rotary_factor
 * of the frequencies over the whole head, pairs (i, i + D/2)); the blocks
 * are read as written (hf_rope_block.c).
 *
 * Per layer (per_layer_config, {"<layer>": {"head_dim": ..,
 * "num_key_value_heads": ..}}; without it, every full layer gets head_dim
 * global_head_dim (512) and, when attention_k_eq_v, num_key_value_heads
 * num_global_key_value_heads): the layer's head_dim and kv heads. Every
 * layer of a type must have the same overrides (the rotary embedding reads
 * per_layer_config[type] and fails otherwise), and keys the attention reads
 * from the global config may not be overridden (Hugging Face refuses to
 * read a per-layer attribute globally).
 *
 * attention_k_eq_v: full layers have no v_proj; v is k_proj's output
 * before k_norm and the rotation (k_eq_v). num_kv_shared_layers: the last
 * n layers compute no k and v; they reuse those of the last earlier layer
 * of their type (store_full_length_kv). posenc serves such a layer with q
 * from its own weights and k, v from that layer's (kv_shared_from), each
 * through its own layer's input_layernorm: the two weights are folded into
 * the projections (RMSNorm_w(x).W = RMSNorm_1(x).(diag(w) W)), so the
 * model's input norm has weight 1.
 *
 * Gemma 3n (model_type gemma3n_text, the gemma3n wrapper's text_config;
 * Gemma3nTextAttention in modeling_gemma3n.py) computes the same q, k, v
 * with one head_dim and kv-head count for every layer, no k_eq_v, Gemma
 * 3's rope blocks (hf_rope_block.c), every 5th layer full without
 * layer_types (the last one not forced), and num_kv_shared_layers
 * (default 15 of 35) sharing only when it leaves a first layer unshared.
 * Its decoder layer feeds the attention AltUp's predicted stream
 * (altup.predict(h)[altup_active_idx]), which posenc does not compute:
 * embeddings are that stream, and token_ids at layer 0 are refused (the
 * spec's token_ids_refusal).
 */
#include <stdlib.h>
#include <string.h>

#include "models/hf_spec.h"

/* Keys the attention reads from the global config: per_layer_config may
 * not give them another value. */
static const char *const global_keys[] = {"num_attention_heads",
                                          "hidden_size",
                                          "rms_norm_eps",
                                          "attention_bias",
                                          "attention_k_eq_v",
                                          "rope_parameters",
                                          "layer_types",
                                          "sliding_window",
                                          "num_kv_shared_layers",
                                          "num_hidden_layers",
                                          NULL};

/* What Gemma 4 decides for one layer. */
typedef struct layer_shape {
    int64_t head_dim, kv_heads;
} layer_shape;

/* Where Gemma 4's and Gemma 3n's configurations differ. */
typedef struct family {
    int64_t layers_default; /* num_hidden_layers */
    size_t full_every;      /* without layer_types: layer i is full when (i + 1) % it == 0 */
    bool last_full;         /* the last layer is made full_attention */
    bool share_all;         /* num_kv_shared_layers == num_hidden_layers shares every layer
                             * (Gemma 4: first index >= 0), else none (Gemma 3n: > 0) */
    int64_t shared_default; /* num_kv_shared_layers */
} family;

static const family gemma4 = {30, 6, true, true, 0};
static const family gemma3n = {35, 5, false, false, 15};

/* Layer i's type (static, or the config's string): layer_types[i], or the
 * family's pattern; Gemma 4's last layer full whatever the list says. */
static const char *layer_type_of(const hf_load *h, const family *f, size_t i, size_t layers)
{
    const json_t *types = hf_get(h, HF_KEYS("layer_types"), NULL);

    if (f->last_full && i + 1 == layers)
        return "full_attention";
    if (types) /* checked by the loader: a list of known names */
        return hf_layer_type_name(json_string_value(json_array_get(types, i)));
    return (i + 1) % f->full_every ? "sliding_attention" : "full_attention";
}

/* The index of a per_layer_config key ("5", "05"), or -1. */
static long long layer_index(const char *key)
{
    char *end;

    if (!key[0] || strspn(key, "0123456789") != strlen(key) || strlen(key) > 9)
        return -1;
    return strtoll(key, &end, 10);
}

/* Without per_layer_config: Gemma4TextConfig's overrides of full layers. */
static int derived_overrides(const hf_load *h, const char *type, layer_shape *s, model_error *err)
{
    bool k_eq_v;

    if (strcmp(type, "full_attention") != 0)
        return 0;
    if (hf_int(h, HF_KEYS("global_head_dim"), false, 512, 1, SCHEME_MAX_DIM, &s->head_dim, err) ||
        hf_bool(h, "attention_k_eq_v", false, &k_eq_v, err))
        return -1;
    if (k_eq_v && hf_get(h, HF_KEYS("num_global_key_value_heads"), NULL))
        return hf_int(h, HF_KEYS("num_global_key_value_heads"), true, 0, 1, SCHEME_MAX_DIM,
                      &s->kv_heads, err);
    return 0;
}

/* One entry of per_layer_config: its head_dim and num_key_value_heads
 * over *s, and no other value for a key the attention reads globally. */
static int entry_overrides(const hf_load *h, const char *key, const json_t *o, layer_shape *s,
                           model_error *err)
{
    if (!json_is_object(o))
        return hf_config_fail(h, err, "per_layer_config.%.20s must be an object", key);
    for (const char *const *g = global_keys; *g; g++) {
        const json_t *v = json_object_get(o, *g);
        if (v && !json_equal(v, json_object_get(h->config, *g)))
            return hf_value_fail(h, err,
                                 "per_layer_config.%.20s.%s: Hugging Face's attention reads %s "
                                 "from the global config and refuses a per-layer value",
                                 key, *g, *g);
    }
    static const char *const names[] = {"head_dim", "num_key_value_heads"};
    int64_t *out[] = {&s->head_dim, &s->kv_heads};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(o, names[i]);
        if (!v)
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > SCHEME_MAX_DIM)
            return hf_config_fail(h, err, "per_layer_config.%.20s.%s must be an integer in [1, %d]",
                                  key, names[i], SCHEME_MAX_DIM);
        *out[i] = json_integer_value(v);
    }
    return 0;
}

/* Layer i's shape from per_layer_config (an object keyed by layer index)
 * or the derived overrides, over the global one. */
static int shape_of(const hf_load *h, size_t i, size_t layers, const layer_shape *global,
                    layer_shape *s, model_error *err)
{
    const json_t *plc = hf_get(h, HF_KEYS("per_layer_config"), NULL), *o;
    const char *key;

    *s = *global;
    if (!plc)
        return derived_overrides(h, layer_type_of(h, &gemma4, i, layers), s, err);
    if (!json_is_object(plc))
        return hf_config_fail(h, err, "per_layer_config must be an object keyed by layer index");
    json_object_foreach ((json_t *)(uintptr_t)plc, key, o) {
        long long at = layer_index(key);
        if (at < 0 || (size_t)at >= layers)
            return hf_value_fail(h, err,
                                 "per_layer_config key '%.20s' is not a layer index in [0, %zu)",
                                 key, layers);
        if ((size_t)at == i && entry_overrides(h, key, o, s, err))
            return -1;
    }
    return 0;
}

/* Every layer of layer L's type has L's shape (per_layer_config[type]). */
static int check_homogeneous(const hf_load *h, size_t layers, const layer_shape *global,
                             const layer_shape *mine, const char *type, model_error *err)
{
    for (size_t i = 0; i < layers; i++) {
        layer_shape s;
        if (strcmp(layer_type_of(h, &gemma4, i, layers), type) != 0)
            continue;
        if (shape_of(h, i, layers, global, &s, err))
            return -1;
        if (s.head_dim != mine->head_dim || s.kv_heads != mine->kv_heads)
            return hf_value_fail(h, err,
                                 "per_layer_config: layer %zu (%s) has head_dim %lld and %lld kv "
                                 "heads, layer %zu has %lld and %lld: Hugging Face's rotary "
                                 "embedding needs one shape per layer type and fails",
                                 i, type, (long long)s.head_dim, (long long)s.kv_heads, h->layer,
                                 (long long)mine->head_dim, (long long)mine->kv_heads);
    }
    return 0;
}

/* When no layer shares (first_kv_shared_layer_idx out of range), Hugging
 * Face still finds each layer's type in layer_types[:first] (a Python
 * slice: the first 2*layers - shared entries, none when first is 0) to
 * decide whether it stores its k and v, and fails building the model when
 * a type is not there. */
static int check_unshared(const hf_load *h, const family *f, size_t layers, int64_t shared,
                          model_error *err)
{
    int64_t n = 2 * (int64_t)layers - shared;
    if ((size_t)shared == layers || n < 0)
        n = 0;
    for (size_t i = 0; i < layers; i++) {
        const char *t = layer_type_of(h, f, i, layers);
        bool found = false;
        for (size_t j = 0; j < (size_t)n && !found; j++)
            found = strcmp(layer_type_of(h, f, j, layers), t) == 0;
        if (!found)
            return hf_value_fail(h, err,
                                 "num_kv_shared_layers %lld with %zu layers: Hugging Face's %s "
                                 "looks layer %zu's type (%s) up in layer_types[:%lld] and fails "
                                 "building the model",
                                 (long long)shared, layers, h->m->architecture, i, t,
                                 (long long)((int64_t)layers - shared));
    }
    return 0;
}

/* A kv-shared layer L (one of the last num_kv_shared_layers): the last
 * earlier layer of its type that computes k and v. */
static int kv_source(hf_load *h, const family *f, size_t layers, const char *type, model_error *err)
{
    int64_t shared;

    if (hf_int(h, HF_KEYS("num_kv_shared_layers"), false, f->shared_default, 0, INT32_MAX, &shared,
               err))
        return -1;
    /* first_kv_shared_layer_idx = layers - shared: below 0 (below 1 for
     * Gemma 3n) shares nothing */
    if ((size_t)shared > layers || ((size_t)shared == layers && !f->share_all))
        return check_unshared(h, f, layers, shared, err);
    if (h->layer < layers - (size_t)shared)
        return 0;
    size_t first = layers - (size_t)shared;
    for (size_t i = first; i-- > 0;)
        if (strcmp(layer_type_of(h, f, i, layers), type) == 0) {
            h->m->kv_shared = true;
            h->m->kv_shared_from = i;
            return 0;
        }
    return hf_value_fail(h, err,
                         "layer %zu shares k and v (num_kv_shared_layers %lld) but no earlier "
                         "layer is %s: Hugging Face finds no k and v to reuse",
                         h->layer, (long long)shared, type);
}

/* __post_init__ forces the last layer to full_attention, warning. */
static void last_layer_warning(const hf_load *h, size_t layers)
{
    const json_t *types = hf_get(h, HF_KEYS("layer_types"), NULL);
    const char *last = json_string_value(json_array_get(types, layers - 1));

    if (last && strcmp(hf_layer_type_name(last), "full_attention") != 0)
        hf_warn(h,
                "layer_types[%zu] is %.40s: Hugging Face's gemma4_text makes the last layer "
                "full_attention",
                layers - 1, last);
}

/* Layer L's type (full or sliding attention: the families' rope blocks),
 * into p->sliding; *layers the layer count. */
static int layer_kind(hf_load *h, hf_plan *p, const family *f, int64_t *layers, const char **type,
                      model_error *err)
{
    if (hf_int(h, HF_KEYS("num_hidden_layers"), false, f->layers_default, 1, INT32_MAX, layers,
               err))
        return -1;
    *type = layer_type_of(h, f, h->layer, (size_t)*layers);
    if (strcmp(*type, "full_attention") != 0 && strcmp(*type, "sliding_attention") != 0)
        return hf_value_fail(h, err,
                             "layer_types[%zu] is %s: %s has rope blocks for full_attention and "
                             "sliding_attention only",
                             h->layer, *type, h->m->architecture);
    p->sliding = strcmp(*type, "sliding_attention") == 0;
    p->qk_norm = MODEL_QK_NORM_NONE; /* read by the weights hook: k_norm may be another layer's */
    return kv_source(h, f, (size_t)*layers, *type, err);
}

int hf_gemma4_configure(hf_load *h, hf_plan *p, model_error *err)
{
    int64_t layers;
    const char *type;
    bool k_eq_v;

    if (layer_kind(h, p, &gemma4, &layers, &type, err) ||
        hf_bool(h, "attention_k_eq_v", false, &k_eq_v, err))
        return -1;
    last_layer_warning(h, (size_t)layers);
    /* standardize_rope_params, run by the proportional rope's init, writes
     * a top-level partial_rotary_factor over the block's */
    if (!p->sliding && hf_get(h, HF_KEYS("partial_rotary_factor"), NULL))
        return hf_value_fail(h, err,
                             "partial_rotary_factor at the top level: Hugging Face's gemma4_text "
                             "puts it over rope_parameters.full_attention's when it builds the "
                             "proportional rope; give it in that block");
    layer_shape global = {p->a.head_dim, p->a.kv_heads}, mine;
    if (shape_of(h, h->layer, (size_t)layers, &global, &mine, err) ||
        check_homogeneous(h, (size_t)layers, &global, &mine, type, err))
        return -1;
    p->a.head_dim = mine.head_dim;
    p->a.kv_heads = mine.kv_heads;
    h->m->k_eq_v = k_eq_v && !p->sliding; /* use_alternative_attention */
    return 0;
}

/* Gemma 3n: one shape for every layer, no k_eq_v; Gemma3nTextConfig's
 * validate_architecture refuses heads that do not divide hidden_size. */
int hf_gemma3n_configure(hf_load *h, hf_plan *p, model_error *err)
{
    int64_t layers;
    const char *type;

    if (p->a.hidden % p->a.heads)
        return hf_value_fail(h, err,
                             "hidden_size %lld is not a multiple of num_attention_heads %lld: "
                             "Hugging Face's gemma3n_text refuses it",
                             (long long)p->a.hidden, (long long)p->a.heads);
    return layer_kind(h, p, &gemma3n, &layers, &type, err);
}

/* Scores scaled by 1.0; v's weightless norm (the config's eps). */
int hf_gemma4_params(hf_load *h, hf_plan *p, model_error *err)
{
    model *m = h->m;

    (void)p;
    m->v_norm = true;
    m->v_norm_eps = m->norm_eps;
    if (json_object_set_new(m->params, "score_scale", json_real(1.0)))
        return model_nomem(err, "the model");
    return 0;
}

/* rows[i][*] *= w[i] for a [rows][cols] weight in the contract's orientation. */
static void scale_rows(tensor *t, const float *w)
{
    for (size_t i = 0; t->data && i < t->dim[0]; i++)
        for (size_t j = 0; j < t->dim[1]; j++)
            t->data[i * t->dim[1] + j] *= w[i];
}

/* A kv-shared layer: each projection through its own layer's input norm
 * (L's for q, the source's for k and v), folded; the norm's weight 1. */
static int fold_norms(hf_load *h, const hf_tensor_names *n, size_t src, model_error *err)
{
    model *m = h->m;
    tensor *norm = &m->weights[W_NORM_WEIGHT];
    tensor own = {0}; /* owned: the source layer's input_layernorm weight */
    const char *dtype;

    if (hf_tensor(h, 1, m->d_model, 0, &own, &dtype, err, "%s.%zu.%s.weight", n->layer_dir, src,
                  n->norm))
        return -1;
    scale_rows(&m->weights[W_WQ], norm->data);
    scale_rows(&m->weights[W_WK], own.data);
    scale_rows(&m->weights[W_WV], own.data);
    for (size_t i = 0; i < m->d_model; i++)
        norm->data[i] = 1.0f;
    tensor_free(&own);
    return 0;
}

/* q (and q_norm) of layer L; k, v (and k_norm) of L or of the layer whose
 * k and v it shares; no v with k_eq_v. */
int hf_gemma4_weights(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_tensor_names *n = p->spec->names;
    model *m = h->m;
    size_t L = h->layer, S = m->kv_shared ? m->kv_shared_from : L, d = m->d_model;
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim, hd = m->head_dim;
    const char *dir = n->layer_dir;

    if (hf_linear(h, W_WQ, qd, d, err, "%s.%zu.%s.weight", dir, L, n->q) ||
        hf_linear(h, W_WK, kvd, d, err, "%s.%zu.%s.weight", dir, S, n->k) ||
        (!m->k_eq_v && hf_linear(h, W_WV, kvd, d, err, "%s.%zu.%s.weight", dir, S, n->v)) ||
        hf_weight(h, W_Q_NORM_WEIGHT, 1, hd, 0, err, "%s.%zu.%s.weight", dir, L, n->q_norm) ||
        hf_weight(h, W_K_NORM_WEIGHT, 1, hd, 0, err, "%s.%zu.%s.weight", dir, S, n->k_norm))
        return -1;
    if (p->bias &&
        (hf_weight(h, W_BQ, 1, qd, 0, err, "%s.%zu.%s.bias", dir, L, n->q) ||
         hf_weight(h, W_BK, 1, kvd, 0, err, "%s.%zu.%s.bias", dir, S, n->k) ||
         (!m->k_eq_v && hf_weight(h, W_BV, 1, kvd, 0, err, "%s.%zu.%s.bias", dir, S, n->v))))
        return -1;
    m->qk_norm = MODEL_QK_NORM_PER_HEAD;
    m->qk_norm_type = PE_NORM_RMS;
    m->qk_norm_eps = m->norm_eps;
    return m->kv_shared ? fold_norms(h, n, S, err) : 0;
}

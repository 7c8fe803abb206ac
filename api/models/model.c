/*
 * model.c - built-in and inline models (see model.h).
 */
#include "models/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"

/* The default model of the contract: d_model 512, 8 heads of 64,
 * sinusoidal (base 10000, interleaved), no biases, no norm, weights from
 * pe_default_weights with this seed. */
#define DEFAULT_SEED 0
#define DEFAULT_D_MODEL 512
#define DEFAULT_HEADS 8

const char *const weight_names[W_COUNT] = {"wq",
                                           "wk",
                                           "wv",
                                           "bq",
                                           "bk",
                                           "bv",
                                           "norm_weight",
                                           "norm_bias",
                                           "position_table",
                                           "t5_bias",
                                           "token_embedding",
                                           "input_bias",
                                           "embed_norm_weight",
                                           "embed_norm_bias",
                                           "q_norm_weight",
                                           "k_norm_weight",
                                           "q_norm_bias",
                                           "k_norm_bias",
                                           "q_a_proj",
                                           "q_a_norm_weight",
                                           "q_b_proj",
                                           "kv_a_proj",
                                           "kv_a_norm_weight",
                                           "kv_b_proj",
                                           "attention_sinks",
                                           "w_gate",
                                           "b_gate"};

/* An inline model's keys: the contract's, then the steps /info reports for
 * loaded models (model_steps.c). */
static const char *const model_keys[] = {"d_model",
                                         "heads",
                                         "kv_heads",
                                         "head_dim",
                                         "scheme",
                                         "params",
                                         "norm",
                                         "weights",
                                         "embed_norm",
                                         "qk_norm",
                                         "post_rope_qk_norm",
                                         "attn_temperature",
                                         "q_scale",
                                         "positions",
                                         "mla",
                                         "attention_sinks",
                                         "gate",
                                         "rotary_dim_rule",
                                         "rope_block",
                                         "v_norm",
                                         "k_eq_v",
                                         "kv_shared_from",
                                         "score_softcap",
                                         "clip_qkv",
                                         NULL};

void model_free(model *m)
{
    if (!m)
        return;
    free(m->name);
    free(m->source);
    free(m->architecture);
    json_decref(m->params);
    scheme_free(&m->decoded);
    for (int w = 0; w < W_COUNT; w++)
        tensor_free(&m->weights[w]);
    pe_qkv_weights_free(&m->qkv);
    free(m);
}

model *model_alloc(const char *name, const char *source, const char *architecture)
{
    model *m = calloc(1, sizeof *m);

    if (!m)
        return NULL;
    m->name = strdup(name);
    m->source = strdup(source);
    m->architecture = strdup(architecture);
    m->dtype = "F32";
    if (!m->name || !m->source || !m->architecture) {
        model_free(m);
        return NULL;
    }
    return m;
}

/* Fuse wq|wk|wv (+ biases) once, when the three matrices are present. */
int model_fuse(model *m, desc_error *err)
{
    if (m->mla) { /* its projection reads the loaded matrices as they are */
        m->mla_w.q_a = m->weights[W_MLA_Q_A].data;
        m->mla_w.q_a_norm = m->weights[W_MLA_Q_A_NORM].data;
        m->mla_w.q_b = m->weights[W_MLA_Q_B].data;
        m->mla_w.kv_a = m->weights[W_MLA_KV_A].data;
        m->mla_w.kv_a_norm = m->weights[W_MLA_KV_A_NORM].data;
        m->mla_w.kv_b = m->weights[W_MLA_KV_B].data;
        return 0;
    }
    /* k_eq_v: v is k's projection (Gemma 4's full layers) */
    weight_id v = m->k_eq_v ? W_WK : W_WV, bv = m->k_eq_v ? W_BK : W_BV;
    if (!model_has(m, W_WQ) || !model_has(m, W_WK) || !model_has(m, v))
        return 0;
    if (pe_qkv_weights_init(&m->qkv, m->d_model, m->heads, m->kv_heads, m->head_dim,
                            m->weights[W_WQ].data, m->weights[W_WK].data, m->weights[v].data,
                            m->weights[W_BQ].data, m->weights[W_BK].data,
                            m->weights[bv].data) != PE_OK)
        return desc_fail_oom(err);
    return 0;
}

void model_apply_qk_norm(const model *m, size_t rows, float *qkv)
{
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    size_t width = qd + 2 * kvd;
    const float *wq = m->weights[W_Q_NORM_WEIGHT].data, *wk = m->weights[W_K_NORM_WEIGHT].data;
    bool whole = m->qk_norm == MODEL_QK_NORM_WIDTH;

    if (m->qk_norm == MODEL_QK_NORM_NONE)
        return;
    if (m->qk_norm_type == PE_NORM_LAYER) {
        size_t ws = m->qk_norm == MODEL_QK_NORM_HEAD_WEIGHTS ? m->head_dim : 0;
        const float *bq = m->weights[W_Q_NORM_BIAS].data, *bk = m->weights[W_K_NORM_BIAS].data;
        pe_group_layer_norm(rows, qd, whole ? qd : m->head_dim, wq, bq, ws, m->qk_norm_eps, qkv,
                            width);
        pe_group_layer_norm(rows, kvd, whole ? kvd : m->head_dim, wk, bk, ws, m->qk_norm_eps,
                            qkv + qd, width);
        return;
    }
    pe_group_rms_norm(rows, qd, whole ? qd : m->head_dim, wq, m->qk_norm_eps, qkv, width);
    pe_group_rms_norm(rows, kvd, whole ? kvd : m->head_dim, wk, m->qk_norm_eps, qkv + qd, width);
}

/* x = min(max(x, -c), c), in place. */
static void clamp_values(float *x, size_t n, float c)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] < -c ? -c : x[i] > c ? c : x[i];
}

int model_project(const model *m, const float *z, size_t rows, float *qkv)
{
    if (!m->mla) {
        pe_project_qkv(&m->qkv, z, rows, qkv);
        if (m->qkv_clip > 0.0) /* MPT: qkv.clamp(-clip, clip) on the fused output */
            clamp_values(qkv, rows * pe_qkv_width(&m->qkv), (float)m->qkv_clip);
        if (m->v_norm) { /* Gemma 4: v_norm, an RMSNorm without weight, per head */
            size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
            pe_group_rms_norm(rows, kvd, m->head_dim, NULL, m->v_norm_eps, qkv + qd + kvd,
                              qd + 2 * kvd);
        }
        return 0;
    }
    return pe_mla_project(&m->mla_w, z, rows, qkv) == PE_OK ? 0 : -1;
}

void model_project_gate(const model *m, const float *z, size_t rows, float *out)
{
    pe_project_linear(m->weights[W_GATE].data, m->weights[W_GATE_BIAS].data, m->d_model,
                      m->heads * m->head_dim, z, rows, out);
}

void model_mla_rotate(const model *m, const pe_rope *rope, const double *inv_freq,
                      double attention_factor, const int64_t *positions, size_t rows, float *qkv)
{
    size_t qk_head = m->mla_w.nope_dim + m->mla_w.rope_dim, qd = m->heads * qk_head;
    size_t width = 2 * qd + model_v_width(m);

    for (size_t h = 0; h < m->heads; h++) {
        float *q_rot = qkv + h * qk_head + m->mla_w.nope_dim, *k_rot = q_rot + qd;
        pe_rope_apply(rope, inv_freq, attention_factor, positions, rows, m->mla_w.rope_dim, q_rot,
                      width, q_rot, width);
        pe_rope_apply(rope, inv_freq, attention_factor, positions, rows, m->mla_w.rope_dim, k_rot,
                      width, k_rot, width);
    }
}

void model_apply_post_rope(const model *m, size_t rows, const int64_t *positions, float *qkv)
{
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    size_t width = qd + 2 * kvd;

    if (m->post_rope_qk_norm) {
        /* HunYuan's norms have a weight [head_dim]; Llama 4's none (NULL) */
        const float *wq = m->qk_norm ? NULL : m->weights[W_Q_NORM_WEIGHT].data;
        const float *wk = m->qk_norm ? NULL : m->weights[W_K_NORM_WEIGHT].data;
        pe_group_rms_norm(rows, qd, m->head_dim, wq, m->post_rope_qk_norm_eps, qkv, width);
        pe_group_rms_norm(rows, kvd, m->head_dim, wk, m->post_rope_qk_norm_eps, qkv + qd, width);
    }
    if (m->attn_temperature)
        pe_attn_temperature(rows, positions, m->attn_floor_scale, m->attn_temperature_scale, qd,
                            qkv, width);
}

void model_apply_q_scale(const model *m, size_t rows, const int64_t *position_ids, float *qkv)
{
    size_t qd = m->heads * m->head_dim, width = qd + 2 * m->kv_heads * m->head_dim;

    if (m->q_scale)
        pe_query_scale_mistral(rows, position_ids, m->q_scale_beta, m->q_scale_orig, qd, qkv,
                               width);
}

static int alloc_square(tensor *t, size_t d)
{
    t->data = malloc(d * d * sizeof *t->data);
    t->ndim = 2;
    t->dim[0] = t->dim[1] = d;
    return t->data ? 0 : -1;
}

model *model_new_default(void)
{
    desc_error err;
    model *m = model_alloc("default", "built-in (SplitMix64 seed 0, Xavier-uniform)", "posenc");

    if (!m)
        return NULL;
    m->params = json_pack("{s:f, s:s}", "base", 10000.0, "layout", "interleaved");
    if (!m->params)
        goto fail;
    m->d_model = DEFAULT_D_MODEL;
    m->heads = m->kv_heads = DEFAULT_HEADS;
    m->head_dim = DEFAULT_D_MODEL / DEFAULT_HEADS;
    m->scheme = SCHEME_SINUSOIDAL;
    m->norm = PE_NORM_NONE;
    if (alloc_square(&m->weights[W_WQ], DEFAULT_D_MODEL) ||
        alloc_square(&m->weights[W_WK], DEFAULT_D_MODEL) ||
        alloc_square(&m->weights[W_WV], DEFAULT_D_MODEL))
        goto fail;
    pe_default_weights(DEFAULT_SEED, DEFAULT_D_MODEL, m->weights[W_WQ].data, m->weights[W_WK].data,
                       m->weights[W_WV].data);
    if (model_fuse(m, &err) || model_decode_scheme(m, &err))
        goto fail;
    return m;
fail:
    model_free(m);
    return NULL;
}

/* ---- inline models ---------------------------------------------------- */

static int parse_dims(const json_doc *doc, const json_t *obj, const char *path, model *m,
                      desc_error *err)
{
    bool present;
    int64_t n;

    if (desc_json(err,
                  jf_int(doc, obj, path, "d_model", 1, SCHEME_MAX_DIM, &present, &n, &err->json)))
        return -1;
    if (!present) {
        jpath at = jpath_key(path, "d_model");
        return desc_fail(err, DESC_E_KEY, at.s, "missing field '%s'", at.s);
    }
    m->d_model = (size_t)n;
    if (desc_json(err,
                  jf_int(doc, obj, path, "heads", 1, SCHEME_MAX_DIM, &present, &n, &err->json)))
        return -1;
    if (!present) {
        jpath at = jpath_key(path, "heads");
        return desc_fail(err, DESC_E_KEY, at.s, "missing field '%s'", at.s);
    }
    m->heads = (size_t)n;
    if (desc_json(err,
                  jf_int(doc, obj, path, "kv_heads", 1, SCHEME_MAX_DIM, &present, &n, &err->json)))
        return -1;
    m->kv_heads = present ? (size_t)n : m->heads;
    if (m->heads % m->kv_heads != 0) {
        jpath at = jpath_key(path, "kv_heads");
        return desc_fail(err, DESC_E_SHAPE, at.s,
                         "heads (%zu) must be a multiple of kv_heads (%zu)", m->heads, m->kv_heads);
    }
    if (desc_json(err,
                  jf_int(doc, obj, path, "head_dim", 1, SCHEME_MAX_DIM, &present, &n, &err->json)))
        return -1;
    if (present) {
        m->head_dim = (size_t)n;
    } else if (m->d_model % m->heads != 0) {
        jpath at = jpath_key(path, "heads");
        return desc_fail(err, DESC_E_SHAPE, at.s,
                         "d_model (%zu) is not divisible by heads (%zu); give head_dim", m->d_model,
                         m->heads);
    } else {
        m->head_dim = m->d_model / m->heads;
    }
    if ((m->heads + 2 * m->kv_heads) * m->head_dim > (size_t)1 << 24) {
        jpath at = jpath_key(path, "head_dim");
        return desc_fail(err, DESC_E_TOO_LARGE, at.s, "(heads + 2*kv_heads)*head_dim is too large");
    }
    return 0;
}

/* The rank a weight of an inline model may have: 1 or 2 (q/k norms' are
 * [heads][head_dim] when each head has its own). */
static void weight_ranks(weight_id w, size_t *lo, size_t *hi)
{
    static const weight_id matrices[] = {W_WQ,       W_WK,
                                         W_WV,       W_POSITION_TABLE,
                                         W_T5_BIAS,  W_TOKEN_EMBEDDING,
                                         W_MLA_Q_A,  W_MLA_Q_B,
                                         W_MLA_KV_A, W_MLA_KV_B,
                                         W_GATE};
    *lo = *hi = 1;
    for (size_t i = 0; i < sizeof matrices / sizeof matrices[0]; i++)
        if (matrices[i] == w)
            *lo = *hi = 2;
    if (w >= W_Q_NORM_WEIGHT && w <= W_K_NORM_BIAS)
        *hi = 2;
}

static int parse_weights(json_doc *doc, const json_t *obj, const char *path, model *m,
                         desc_error *err)
{
    const char *allowed[2 * W_COUNT + 1];
    char shape_keys[W_COUNT][40];
    const json_t *weights = jf_get(obj, "weights");
    jpath wpath = jpath_key(path, "weights");

    if (!weights)
        return 0;
    for (int w = 0; w < W_COUNT; w++) {
        snprintf(shape_keys[w], sizeof shape_keys[w], "%s_shape", weight_names[w]);
        allowed[2 * w] = weight_names[w];
        allowed[2 * w + 1] = shape_keys[w];
    }
    allowed[2 * W_COUNT] = NULL;
    if (desc_json(err, jf_check_object(weights, wpath.s, allowed, &err->json)))
        return -1;
    for (int w = 0; w < W_COUNT; w++) {
        jpath at = jpath_key(wpath.s, weight_names[w]);
        jpath shape_at = jpath_key(wpath.s, shape_keys[w]);
        const json_t *value = jf_get(weights, weight_names[w]);
        const json_t *shape = jf_get(weights, shape_keys[w]);
        size_t lo, hi;
        if (!value) {
            if (shape)
                return desc_fail(err, DESC_E_KEY, shape_at.s, "%s is given without %s", shape_at.s,
                                 at.s);
            continue;
        }
        weight_ranks((weight_id)w, &lo, &hi);
        if (desc_json(err, tensor_from_json(doc, value, at.s, shape, shape_at.s, lo, hi,
                                            &m->weights[w], &err->json)))
            return -1;
    }
    return 0;
}

static int check_weight_shape(const model *m, weight_id w, size_t rows, size_t cols,
                              const char *wpath, desc_error *err)
{
    const tensor *t = &m->weights[w];
    jpath at = jpath_key(wpath, weight_names[w]);

    if (!t->data)
        return 0;
    bool ok = t->ndim == 2 ? (rows == 0 || t->dim[0] == rows) && t->dim[1] == cols
                           : t->dim[0] == cols;
    if (ok)
        return 0;
    if (t->ndim == 2 && rows == 0)
        return desc_fail(err, DESC_E_SHAPE, at.s, "%s has shape [%zu, %zu], expected [rows, %zu]",
                         at.s, t->dim[0], t->dim[1], cols);
    if (t->ndim == 2)
        return desc_fail(err, DESC_E_SHAPE, at.s, "%s has shape [%zu, %zu], expected [%zu, %zu]",
                         at.s, t->dim[0], t->dim[1], rows, cols);
    return desc_fail(err, DESC_E_SHAPE, at.s, "%s has shape [%zu], expected [%zu]", at.s, t->dim[0],
                     cols);
}

static int check_weights(const model *m, const char *path, desc_error *err)
{
    jpath wpath = jpath_key(path, "weights");
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;

    if (check_weight_shape(m, W_WQ, m->d_model, qd, wpath.s, err) ||
        check_weight_shape(m, W_WK, m->d_model, kvd, wpath.s, err) ||
        check_weight_shape(m, W_WV, m->d_model, kvd, wpath.s, err) ||
        check_weight_shape(m, W_BQ, 0, qd, wpath.s, err) ||
        check_weight_shape(m, W_BK, 0, kvd, wpath.s, err) ||
        check_weight_shape(m, W_BV, 0, kvd, wpath.s, err) ||
        check_weight_shape(m, W_NORM_WEIGHT, 0, m->d_model, wpath.s, err) ||
        check_weight_shape(m, W_NORM_BIAS, 0, m->d_model, wpath.s, err) ||
        check_weight_shape(m, W_POSITION_TABLE, 0, m->d_model, wpath.s, err) ||
        check_weight_shape(m, W_TOKEN_EMBEDDING, 0, m->d_model, wpath.s, err))
        return -1;
    /* A norm and its weights go together: a weight nothing uses is a
     * mistake, not a no-op. */
    for (weight_id w = W_NORM_WEIGHT; w <= W_NORM_BIAS; w++)
        if (model_has(m, w) && m->norm == PE_NORM_NONE) {
            jpath at = jpath_key(wpath.s, weight_names[w]);
            return desc_fail(err, DESC_E_KEY, at.s, "%s is given but the model has no norm", at.s);
        }
    if (m->norm != PE_NORM_NONE && !model_has(m, W_NORM_WEIGHT)) {
        jpath at = jpath_key(wpath.s, "norm_weight");
        return desc_fail(err, DESC_E_MISSING_WEIGHT, at.s,
                         "the model's norm needs a weight: %s is missing", at.s);
    }
    if (m->norm == PE_NORM_RMS && model_has(m, W_NORM_BIAS)) {
        jpath at = jpath_key(wpath.s, "norm_bias");
        return desc_fail(err, DESC_E_KEY, at.s, "%s: rmsnorm takes no bias", at.s);
    }
    return 0;
}

/* model_parse_description() with the document the object comes from. */
static int parse_description(json_doc *doc, const json_t *obj, const char *path, bool with_weights,
                             model *m, desc_error *err)
{
    static const char *const config_keys[] = {"d_model", "heads",  "kv_heads", "head_dim",
                                              "scheme",  "params", "norm",     NULL};
    bool present;
    int which = SCHEME_SINUSOIDAL;

    if (desc_json(err, jf_check_object(obj, path, with_weights ? model_keys : config_keys,
                                       &err->json)) ||
        parse_dims(doc, obj, path, m, err) ||
        desc_json(err,
                  jf_choice(doc, obj, path, "scheme", scheme_names, &present, &which, &err->json)))
        return -1;
    m->scheme = (scheme_kind)which;
    if (m->scheme == SCHEME_ROPE2D) {
        jpath at = jpath_key(path, "scheme");
        return desc_fail(err, DESC_E_KEY, at.s,
                         "%s rope2d is an /encode scheme of vision encoders; a model serves text "
                         "attention",
                         at.s);
    }
    const json_t *params = jf_get(obj, "params");
    jpath ppath = jpath_key(path, "params");
    /* A bad model param fails here, once, rather than on every use; the
     * decoded scheme is what requests start from. */
    scheme_free(&m->decoded);
    if (scheme_decode(doc, m->scheme, params, ppath.s, NULL, &m->decoded, err))
        return -1;
    m->has_decoded = true;
    m->params = params ? json_deep_copy(params) : json_object();
    if (!m->params)
        return desc_fail_oom(err);
    return model_parse_norm(doc, obj, path, "norm", &m->norm, &m->norm_eps, err);
}

int model_parse_description(const json_t *obj, const char *path, bool with_weights, model *m,
                            desc_error *err)
{
    return parse_description(NULL, obj, path, with_weights, m, err);
}

int model_decode_scheme(model *m, desc_error *err)
{
    scheme_free(&m->decoded);
    m->has_decoded = false;
    if (scheme_parse(m->scheme, m->params, "params", &m->decoded, err))
        return -1;
    m->has_decoded = true;
    return 0;
}

model *model_from_json(json_doc *doc, const json_t *obj, const char *path, desc_error *err)
{
    model *m = model_alloc("inline", "inline", "posenc");

    if (!m) {
        desc_fail_oom(err);
        return NULL;
    }
    if (parse_description(doc, obj, path, true, m, err) || parse_weights(doc, obj, path, m, err) ||
        model_parse_steps(doc, obj, path, m, err) || check_weights(m, path, err) ||
        model_fuse(m, err))
        goto fail;
    return m;
fail:
    model_free(m);
    return NULL;
}

/*
 * model_steps.c - the steps of an inline model beyond the contract's
 * pipeline (contract 1.3, "Inline models say what loaded models do"): every
 * step a loaded model's forward pass can have, under the names and with
 * the values /info writes for it (api/info.c), read back from an inline
 * model object, and the weights each step needs checked against it.
 */
#include <string.h>

#include "models/model.h"
#include "json/json_fields.h"

const char *const model_norm_names[] =
    {[PE_NORM_NONE] = "none", [PE_NORM_LAYER] = "layernorm", [PE_NORM_RMS] = "rmsnorm", NULL};

const char *const model_position_rule_names[] = {[MODEL_POSITIONS_CUMSUM] = "cumsum(mask)-1",
                                                 [MODEL_POSITIONS_BLOOM] = "bloom",
                                                 [MODEL_POSITIONS_SLOT] = "slot",
                                                 [MODEL_POSITIONS_PAD_IDS] = "token_ids",
                                                 [MODEL_POSITIONS_OPT] = "opt",
                                                 NULL};

/* "<path>.<key> is required" for a key of an object at path. */
static int missing(desc_error *err, const char *path, const char *key)
{
    jpath at = jpath_key(path, key);
    return desc_fail(err, DESC_E_KEY, at.s, "missing field '%s'", at.s);
}

/* A norm's type (required) and eps (default the type's) in object norm at. */
static int norm_type_eps(const json_doc *doc, const json_t *norm, const char *at,
                         pe_norm_kind *kind, double *eps, desc_error *err)
{
    static const char *const types[] = {"layernorm", "rmsnorm", NULL};
    bool present;
    int which = 0;

    if (desc_json(err, jf_choice(doc, norm, at, "type", types, &present, &which, &err->json)))
        return -1;
    if (!present)
        return missing(err, at, "type");
    *kind = which ? PE_NORM_RMS : PE_NORM_LAYER;
    *eps = pe_norm_default_eps(*kind);
    return desc_json(err, jf_number(doc, norm, at, "eps", true, &present, eps, &err->json));
}

int model_parse_norm(const json_doc *doc, const json_t *obj, const char *path, const char *key,
                     pe_norm_kind *kind, double *eps, desc_error *err)
{
    static const char *const keys[] = {"type", "eps", NULL};
    const json_t *norm = jf_get(obj, key);
    jpath at = jpath_key(path, key);

    *kind = PE_NORM_NONE;
    if (!norm) /* absent, or null as /info writes "none" */
        return 0;
    if (desc_json(err, jf_check_object(norm, at.s, keys, &err->json)))
        return -1;
    return norm_type_eps(doc, norm, at.s, kind, eps, err);
}

/* qk_norm: {type, over: head | width, weights: shared | per_head, bias, eps}. */
static int parse_qk_norm(const json_doc *doc, const json_t *obj, const char *path, model *m,
                         bool *bias_out, desc_error *err)
{
    static const char *const keys[] = {"type", "over", "weights", "bias", "eps", NULL};
    static const char *const overs[] = {"head", "width", NULL};
    static const char *const sharing[] = {"shared", "per_head", NULL};
    const json_t *qk = jf_get(obj, "qk_norm");
    jpath at = jpath_key(path, "qk_norm");
    bool present, bias = false;
    int over = 0, shared = 0;

    if (!qk)
        return 0;
    if (desc_json(err, jf_check_object(qk, at.s, keys, &err->json)) ||
        norm_type_eps(doc, qk, at.s, &m->qk_norm_type, &m->qk_norm_eps, err) ||
        desc_json(err, jf_choice(doc, qk, at.s, "over", overs, &present, &over, &err->json)) ||
        desc_json(err,
                  jf_choice(doc, qk, at.s, "weights", sharing, &present, &shared, &err->json)) ||
        desc_json(err, jf_bool(qk, at.s, "bias", &present, &bias, &err->json)))
        return -1;
    jpath w = jpath_key(at.s, "weights");
    if (shared && over) /* per_head over the width */
        return desc_fail(err, DESC_E_KEY, w.s, "%s: per_head weights need over: head", w.s);
    if ((shared || bias) && m->qk_norm_type != PE_NORM_LAYER)
        return desc_fail(err, DESC_E_KEY, shared ? w.s : jpath_key(at.s, "bias").s,
                         "%s: %s needs type layernorm", at.s, shared ? "per_head" : "bias");
    m->qk_norm = over     ? MODEL_QK_NORM_WIDTH
                 : shared ? MODEL_QK_NORM_HEAD_WEIGHTS
                          : MODEL_QK_NORM_PER_HEAD;
    *bias_out = bias;
    return 0;
}

/* post_rope_qk_norm: {type: l2norm, over: head, eps} (Llama 4), or type
 * rmsnorm with weights "shared" (HunYuan: q_norm_weight and k_norm_weight
 * [head_dim], one for the heads; not beside a qk_norm). *weighted: the
 * latter. */
static int parse_post_rope(const json_doc *doc, const json_t *obj, const char *path, model *m,
                           bool *weighted, desc_error *err)
{
    static const char *const keys[] = {"type", "over", "weights", "eps", NULL};
    static const char *const types[] = {"l2norm", "rmsnorm", NULL};
    static const char *const overs[] = {"head", NULL};
    static const char *const shared[] = {"shared", NULL};
    const json_t *post = jf_get(obj, "post_rope_qk_norm");
    jpath at = jpath_key(path, "post_rope_qk_norm");
    bool present, has_weights;
    int type = 0, which = 0;

    *weighted = false;
    if (!post)
        return 0;
    m->post_rope_qk_norm = true;
    m->post_rope_qk_norm_eps = 1e-6;
    if (desc_json(err, jf_check_object(post, at.s, keys, &err->json)) ||
        desc_json(err, jf_choice(doc, post, at.s, "type", types, &present, &type, &err->json)) ||
        desc_json(err, jf_choice(doc, post, at.s, "over", overs, &present, &which, &err->json)) ||
        desc_json(err, jf_choice(doc, post, at.s, "weights", shared, &has_weights, &which,
                                 &err->json)) ||
        desc_json(err, jf_number(doc, post, at.s, "eps", true, &present, &m->post_rope_qk_norm_eps,
                                 &err->json)))
        return -1;
    *weighted = type == 1;
    if (*weighted && !has_weights)
        return missing(err, at.s, "weights");
    if (has_weights && !*weighted) {
        jpath wat = jpath_key(at.s, "weights");
        return desc_fail(err, DESC_E_KEY, wat.s, "%s goes with type rmsnorm", wat.s);
    }
    if (*weighted && jf_get(obj, "qk_norm"))
        return desc_fail(err, DESC_E_KEY, at.s,
                         "%s of type rmsnorm does not go with a qk_norm (one pair of norm "
                         "weights)",
                         at.s);
    return 0;
}

/* v_norm: {type: rmsnorm, eps} (Gemma 4: no weight, per head). */
static int parse_v_norm(const json_doc *doc, const json_t *obj, const char *path, model *m,
                        desc_error *err)
{
    static const char *const keys[] = {"type", "eps", NULL};
    static const char *const types[] = {"rmsnorm", NULL};
    const json_t *v = jf_get(obj, "v_norm");
    jpath at = jpath_key(path, "v_norm");
    bool present;
    int which = 0;

    if (!v)
        return 0;
    m->v_norm_eps = 1e-6;
    if (desc_json(err, jf_check_object(v, at.s, keys, &err->json)) ||
        desc_json(err, jf_choice(doc, v, at.s, "type", types, &present, &which, &err->json)))
        return -1;
    if (!present)
        return missing(err, at.s, "type");
    m->v_norm = true;
    return desc_json(err,
                     jf_number(doc, v, at.s, "eps", true, &present, &m->v_norm_eps, &err->json));
}

/* k_eq_v: true (v is k's projection: no wv, bv) and kv_shared_from: the
 * layer whose k and v a kv-shared layer reuses (provenance, as /info
 * reports it: the weights carry it). */
static int parse_kv_steps(const json_doc *doc, const json_t *obj, const char *path, model *m,
                          desc_error *err)
{
    bool present;
    int64_t from = 0;

    if (desc_json(err, jf_bool(obj, path, "k_eq_v", &present, &m->k_eq_v, &err->json)) ||
        desc_json(err, jf_int(doc, obj, path, "kv_shared_from", 0, SCHEME_MAX_DIM, &m->kv_shared,
                              &from, &err->json)))
        return -1;
    m->kv_shared_from = (size_t)from;
    static const weight_id v_weights[] = {W_WV, W_BV};
    for (size_t i = 0; m->k_eq_v && i < 2; i++)
        if (m->weights[v_weights[i]].data) {
            jpath at = jpath_key(jpath_key(path, "weights").s, weight_names[v_weights[i]]);
            return desc_fail(err, DESC_E_KEY, at.s,
                             "%s is given but the model has k_eq_v: v is k's projection", at.s);
        }
    return 0;
}

/* attn_temperature: {floor_scale, attn_scale}, both required (Llama 4). */
static int parse_temperature(const json_doc *doc, const json_t *obj, const char *path, model *m,
                             desc_error *err)
{
    static const char *const keys[] = {"floor_scale", "attn_scale", NULL};
    const json_t *t = jf_get(obj, "attn_temperature");
    jpath at = jpath_key(path, "attn_temperature");
    bool floor_present, scale_present;

    if (!t)
        return 0;
    if (desc_json(err, jf_check_object(t, at.s, keys, &err->json)) ||
        desc_json(err, jf_number(doc, t, at.s, "floor_scale", true, &floor_present,
                                 &m->attn_floor_scale, &err->json)) ||
        desc_json(err, jf_number(doc, t, at.s, "attn_scale", false, &scale_present,
                                 &m->attn_temperature_scale, &err->json)))
        return -1;
    if (!floor_present || !scale_present)
        return missing(err, at.s, floor_present ? "attn_scale" : "floor_scale");
    m->attn_temperature = true;
    return 0;
}

/* q_scale: {form "mistral", beta, original_max_position_embeddings > 0},
 * all required (Ministral 3's query scale by position). */
static int parse_q_scale(const json_doc *doc, const json_t *obj, const char *path, model *m,
                         desc_error *err)
{
    static const char *const keys[] = {"form", "beta", "original_max_position_embeddings", NULL};
    static const char *const forms[] = {"mistral", NULL};
    const json_t *t = jf_get(obj, "q_scale");
    jpath at = jpath_key(path, "q_scale");
    bool form_present, beta_present, orig_present;
    int form = 0;

    if (!t)
        return 0;
    if (desc_json(err, jf_check_object(t, at.s, keys, &err->json)) ||
        desc_json(err, jf_choice(doc, t, at.s, "form", forms, &form_present, &form, &err->json)) ||
        desc_json(err, jf_number(doc, t, at.s, "beta", false, &beta_present, &m->q_scale_beta,
                                 &err->json)) ||
        desc_json(err, jf_number(doc, t, at.s, "original_max_position_embeddings", true,
                                 &orig_present, &m->q_scale_orig, &err->json)))
        return -1;
    if (!form_present || !beta_present || !orig_present)
        return missing(err, at.s,
                       !form_present   ? "form"
                       : !beta_present ? "beta"
                                       : "original_max_position_embeddings");
    m->q_scale = true;
    return 0;
}

/* positions: {rule, pad_token_id (token_ids only), table_offset}. */
static int parse_positions(const json_doc *doc, const json_t *obj, const char *path, model *m,
                           desc_error *err)
{
    static const char *const keys[] = {"rule", "pad_token_id", "table_offset", NULL};
    const json_t *p = jf_get(obj, "positions");
    jpath at = jpath_key(path, "positions");
    bool present, has_pad;
    int rule = 0;

    if (!p)
        return 0;
    if (desc_json(err, jf_check_object(p, at.s, keys, &err->json)) ||
        desc_json(err, jf_choice(doc, p, at.s, "rule", model_position_rule_names, &present, &rule,
                                 &err->json)))
        return -1;
    if (!present)
        return missing(err, at.s, "rule");
    m->position_rule = (model_position_rule)rule;
    m->pad_token_id = 1; /* RoBERTa's */
    if (desc_json(err, jf_int(doc, p, at.s, "pad_token_id", 0, PE_MAX_POSITION - 1, &has_pad,
                              &m->pad_token_id, &err->json)) ||
        /* a table's first rows (OPT: 2), not a position range */
        desc_json(err, jf_int(doc, p, at.s, "table_offset", 0, SCHEME_MAX_DIM, &present,
                              &m->table_offset, &err->json)))
        return -1;
    if (has_pad && m->position_rule != MODEL_POSITIONS_PAD_IDS) {
        jpath pad = jpath_key(at.s, "pad_token_id");
        return desc_fail(err, DESC_E_KEY, pad.s, "%s is for rule token_ids only", pad.s);
    }
    return 0;
}

/* mla: multi-head latent attention's sizes (DeepSeek), and its norms' eps. */
static int parse_mla(const json_doc *doc, const json_t *obj, const char *path, model *m,
                     desc_error *err)
{
    static const char *const keys[] =
        {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "eps",
         NULL};
    const json_t *mla = jf_get(obj, "mla");
    jpath at = jpath_key(path, "mla");
    int64_t v[5];
    bool present;

    if (!mla)
        return 0;
    if (desc_json(err, jf_check_object(mla, at.s, keys, &err->json)))
        return -1;
    for (int i = 0; i < 5; i++) { /* q_lora_rank 0 is a plain q_proj (q_b_proj from d_model) */
        int64_t lo = i == 0 || i == 2 ? 0 : 1;
        if (desc_json(err, jf_int(doc, mla, at.s, keys[i], lo, SCHEME_MAX_DIM, &present, &v[i],
                                  &err->json)))
            return -1;
        if (!present)
            return missing(err, at.s, keys[i]);
    }
    double eps = 1e-6; /* DeepseekV3RMSNorm(rank), built without an eps */
    if (desc_json(err, jf_number(doc, mla, at.s, "eps", true, &present, &eps, &err->json)))
        return -1;
    jpath rope = jpath_key(at.s, "qk_rope_head_dim");
    if (v[3] % 2)
        return desc_fail(err, DESC_E_RANGE, rope.s, "%s must be even", rope.s);
    if ((size_t)(v[2] + v[3]) != m->head_dim || m->kv_heads != m->heads)
        return desc_fail(err, DESC_E_SHAPE, at.s,
                         "%s: head_dim (%zu) must be qk_nope_head_dim + qk_rope_head_dim and "
                         "kv_heads (%zu) must equal heads (%zu)",
                         at.s, m->head_dim, m->kv_heads, m->heads);
    if (m->heads * (2 * m->head_dim + (size_t)v[4]) > (size_t)1 << 24)
        return desc_fail(err, DESC_E_TOO_LARGE, at.s, "%s: q, k and v are too wide", at.s);
    m->mla = true;
    m->mla_w = (pe_mla_weights){.d_model = m->d_model,
                                .heads = m->heads,
                                .q_lora_rank = (size_t)v[0],
                                .kv_lora_rank = (size_t)v[1],
                                .nope_dim = (size_t)v[2],
                                .rope_dim = (size_t)v[3],
                                .v_dim = (size_t)v[4],
                                .q_norm_eps = eps,
                                .kv_norm_eps = eps};
    return 0;
}

/* attention_sinks: [heads] numbers, as /info lists them; the same values
 * as weights.attention_sinks when both are given. */
static int parse_sinks(json_doc *doc, const json_t *obj, const char *path, model *m,
                       desc_error *err)
{
    const json_t *value = jf_get(obj, "attention_sinks");
    jpath at = jpath_key(path, "attention_sinks");
    tensor t = {0}; /* owned until moved into the model */

    if (!value)
        return 0;
    if (desc_json(err, tensor_from_json(doc, value, at.s, NULL, NULL, 1, 1, &t, &err->json)))
        return -1;
    tensor *w = &m->weights[W_ATTN_SINKS];
    if (!w->data) {
        *w = t;
        return 0;
    }
    bool same = w->ndim == 1 && w->dim[0] == t.dim[0] &&
                memcmp(w->data, t.data, t.dim[0] * sizeof *t.data) == 0;
    tensor_free(&t);
    return same ? 0
                : desc_fail(err, DESC_E_SHAPE, at.s,
                            "%s differs from weights.attention_sinks: give the sinks once", at.s);
}

/* What the steps need of weight w: whether a step uses it, requires it,
 * and its shape (ndim, d0, d1). */
typedef struct weight_need {
    const char *step; /* NULL: no step uses it */
    bool required;
    size_t ndim, d0, d1;
} weight_need;

static void need(weight_need *n, weight_id w, const char *step, bool required, size_t ndim,
                 size_t d0, size_t d1)
{
    n[w] = (weight_need){step, required, ndim, d0, d1};
}

/* The weights of the qk_norm (bias: its layernorm's bias too). */
static void qk_norm_needs(const model *m, bool bias, weight_need *n)
{
    size_t hd = m->head_dim, qd = m->heads * hd, kvd = m->kv_heads * hd;
    bool each = m->qk_norm == MODEL_QK_NORM_HEAD_WEIGHTS, wide = m->qk_norm == MODEL_QK_NORM_WIDTH;

    for (int b = 0; b <= (bias ? 1 : 0); b++) {
        weight_id q = b ? W_Q_NORM_BIAS : W_Q_NORM_WEIGHT, k = b ? W_K_NORM_BIAS : W_K_NORM_WEIGHT;
        if (each) {
            need(n, q, "qk_norm", true, 2, m->heads, hd);
            need(n, k, "qk_norm", true, 2, m->kv_heads, hd);
        } else {
            need(n, q, "qk_norm", true, 1, wide ? qd : hd, 0);
            need(n, k, "qk_norm", true, 1, wide ? kvd : hd, 0);
        }
    }
}

/* MLA's weights; q, k and v's own must then be absent. */
static void mla_needs(const model *m, weight_need *n)
{
    const pe_mla_weights *w = &m->mla_w;
    size_t d = m->d_model, qr = w->q_lora_rank, kvr = w->kv_lora_rank;

    if (qr) {
        need(n, W_MLA_Q_A, "mla", true, 2, d, qr);
        need(n, W_MLA_Q_A_NORM, "mla", true, 1, qr, 0);
    }
    need(n, W_MLA_Q_B, "mla", true, 2, qr ? qr : d, m->heads * m->head_dim);
    need(n, W_MLA_KV_A, "mla", true, 2, d, kvr + w->rope_dim);
    need(n, W_MLA_KV_A_NORM, "mla", true, 1, kvr, 0);
    need(n, W_MLA_KV_B, "mla", true, 2, kvr, m->heads * (w->nope_dim + w->v_dim));
    for (weight_id q = W_WQ; q <= W_BV; q++)
        n[q].step = NULL; /* MLA projects q, k, v itself */
}

/* The step key that uses weight w, for messages. */
static const char *user_of(weight_id w)
{
    if (w <= W_BV)
        return "wq, wk and wv (it has mla)";
    if (w == W_EMBED_NORM_WEIGHT || w == W_EMBED_NORM_BIAS)
        return "embed_norm";
    if (w >= W_Q_NORM_WEIGHT && w <= W_K_NORM_BIAS)
        return "qk_norm (or its bias)";
    if (w >= W_MLA_Q_A && w <= W_MLA_KV_B)
        return "mla (or a q_lora_rank that uses it)";
    return w == W_GATE || w == W_GATE_BIAS ? "gate" : "step that uses it";
}

/* Every weight against what the steps need: a weight no step uses, a
 * missing one, a wrong shape. */
static int check_needs(const model *m, const weight_need *n, const char *path, desc_error *err)
{
    jpath wpath = jpath_key(path, "weights");

    for (int w = 0; w < W_COUNT; w++) {
        const tensor *t = &m->weights[w];
        jpath at = jpath_key(wpath.s, weight_names[w]);
        if (!n[w].step && t->data)
            return desc_fail(err, DESC_E_KEY, at.s, "%s is given but the model has no %s", at.s,
                             user_of((weight_id)w));
        if (!n[w].step || n[w].ndim == 0)
            continue;
        if (!t->data && n[w].required)
            return desc_fail(err, DESC_E_MISSING_WEIGHT, at.s, "the model's %s needs %s", n[w].step,
                             at.s);
        if (!t->data || (t->ndim == n[w].ndim && t->dim[0] == n[w].d0 &&
                         (n[w].ndim == 1 || t->dim[1] == n[w].d1)))
            continue;
        if (n[w].ndim == 1)
            return desc_fail(err, DESC_E_SHAPE, at.s, "%s must be [%zu] for the model's %s", at.s,
                             n[w].d0, n[w].step);
        return desc_fail(err, DESC_E_SHAPE, at.s, "%s must be [%zu, %zu] for the model's %s", at.s,
                         n[w].d0, n[w].d1, n[w].step);
    }
    return 0;
}

/* Steps that multi-head latent attention's layout does not carry. */
static int check_mla_steps(const json_t *obj, const char *path, desc_error *err)
{
    static const char *const steps[] =
        {"qk_norm", "post_rope_qk_norm", "attn_temperature", "clip_qkv", "v_norm", "k_eq_v", NULL};
    for (const char *const *s = steps; *s; s++)
        if (jf_get(obj, *s)) {
            jpath at = jpath_key(path, *s);
            return desc_fail(err, DESC_E_KEY, at.s, "%s is not available with mla", at.s);
        }
    return 0;
}

/* The needs of m's steps (contract weights: the contract's own checks). */
static void step_needs(const model *m, bool qk_bias, weight_need *n)
{
    size_t d = m->d_model, qd = m->heads * m->head_dim;

    memset(n, 0, W_COUNT * sizeof *n);
    for (int w = 0; w < W_CONTRACT_COUNT; w++)
        n[w].step = "contract";
    need(n, W_INPUT_BIAS, "input", false, 1, d, 0);
    need(n, W_ATTN_SINKS, "attention_sinks", false, 1, m->heads, 0);
    if (m->embed_norm != PE_NORM_NONE) {
        need(n, W_EMBED_NORM_WEIGHT, "embed_norm", true, 1, d, 0);
        if (m->embed_norm == PE_NORM_LAYER)
            need(n, W_EMBED_NORM_BIAS, "embed_norm", false, 1, d, 0);
    }
    if (m->qk_norm != MODEL_QK_NORM_NONE)
        qk_norm_needs(m, qk_bias, n);
    if (m->gated) {
        need(n, W_GATE, "gate", true, 2, d, qd);
        need(n, W_GATE_BIAS, "gate", false, 1, qd, 0);
    }
    if (m->mla)
        mla_needs(m, n);
}

int model_parse_steps(json_doc *doc, const json_t *obj, const char *path, model *m, desc_error *err)
{
    static const char *const gates[] = {"sigmoid", NULL};
    static const char *const rules[] = {"partial", NULL};
    /* provenance, as /info reports a loaded layer's block of a nested
     * rope_parameters: the params object carries its values */
    static const char *const blocks[] = {"full_attention", "sliding_attention", NULL};
    weight_need needs[W_COUNT];
    bool rule, capped, clipped, qk_bias = false, block, post_weighted;
    int which = 0, block_which = 0;

    if (model_parse_norm(doc, obj, path, "embed_norm", &m->embed_norm, &m->embed_norm_eps, err) ||
        parse_qk_norm(doc, obj, path, m, &qk_bias, err) ||
        parse_post_rope(doc, obj, path, m, &post_weighted, err) ||
        parse_temperature(doc, obj, path, m, err) || parse_q_scale(doc, obj, path, m, err) ||
        parse_positions(doc, obj, path, m, err) || parse_mla(doc, obj, path, m, err) ||
        parse_sinks(doc, obj, path, m, err) || parse_v_norm(doc, obj, path, m, err) ||
        parse_kv_steps(doc, obj, path, m, err) ||
        desc_json(err, jf_choice(doc, obj, path, "gate", gates, &m->gated, &which, &err->json)) ||
        desc_json(err,
                  jf_choice(doc, obj, path, "rotary_dim_rule", rules, &rule, &which, &err->json)) ||
        desc_json(err, jf_choice(doc, obj, path, "rope_block", blocks, &block, &block_which,
                                 &err->json)) ||
        desc_json(err, jf_number(doc, obj, path, "score_softcap", true, &capped, &m->score_softcap,
                                 &err->json)) ||
        desc_json(err, jf_number(doc, obj, path, "clip_qkv", true, &clipped, &m->qkv_clip,
                                 &err->json)) ||
        (m->mla && check_mla_steps(obj, path, err)))
        return -1;
    m->rotary_dim_rule = rule ? rules[0] : NULL;
    m->rope_block = block ? blocks[block_which] : NULL;
    step_needs(m, qk_bias, needs);
    if (post_weighted) {
        need(needs, W_Q_NORM_WEIGHT, "post_rope_qk_norm", true, 1, m->head_dim, 0);
        need(needs, W_K_NORM_WEIGHT, "post_rope_qk_norm", true, 1, m->head_dim, 0);
    }
    return check_needs(m, needs, path, err);
}

/*
 * apply.c - POST /apply: position-aware Q, K, V of a model's attention.
 *
 *   z = norm(embed_norm(embed_scale*x + PE + input_bias))  (sinusoidal, learned)
 *   z = norm(embed_norm(x + input_bias))                   (rope, alibi, t5, none)
 *   (embed_norm and input_bias exist only in some loaded checkpoints: model.h)
 *   [q | k | v] = z . [Wq | Wk | Wv] + [bq | bk | bv]   (one fused sgemm)
 *   rope: q and k rotated per head; alibi/t5: a bias on the scores
 *
 * Response: {"model", "scheme", "shape": {...}, ["attention_factor"], then
 * the arrays named in `return` in that order}.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "json/array_writer.h"
#include "json/json_fields.h"
#include "relative.h"
#include "respond.h"
#include "request.h"
#include "json/strbuf.h"

static const char *const apply_keys[] = {"embeddings", "token_ids", "shape", "scheme",
                                         "params", "model", "offset", "positions",
                                         "encoding", "embed_scale", "return", NULL};

typedef enum output_id { OUT_Q, OUT_K, OUT_V, OUT_ENCODED, OUT_BIAS, OUT_SCORES, OUT_COUNT } output_id;
static const char *const output_names[] = {"q", "k", "v", "encoded", "bias", "scores", NULL};

/* The `return` list, deduplicated, in the order given. */
typedef struct outputs {
    output_id order[OUT_COUNT];
    size_t count;
    bool wanted[OUT_COUNT];
} outputs;

static int parse_outputs(const json_t *root, outputs *o, api_error *err)
{
    const json_t *list = jf_get(root, "return");
    const json_t *item;
    size_t i;

    memset(o, 0, sizeof *o);
    if (!list) {
        for (output_id id = OUT_Q; id <= OUT_V; id++) {
            o->order[o->count++] = id;
            o->wanted[id] = true;
        }
        return 0;
    }
    if (!json_is_array(list))
        return api_fail(err, API_E_INVALID_REQUEST, "return", "return must be a list of strings");
    json_array_foreach(list, i, item) {
        jpath at = jpath_index("return", i);
        int which = -1;
        for (int k = 0; json_is_string(item) && output_names[k]; k++)
            if (strcmp(output_names[k], json_string_value(item)) == 0)
                which = k;
        if (which < 0)
            return api_fail(err, API_E_INVALID_REQUEST, at.s,
                            "%s must be one of q, k, v, encoded, bias, scores", at.s);
        if (!o->wanted[which]) {
            o->wanted[which] = true;
            o->order[o->count++] = (output_id)which;
        }
    }
    return 0;
}

/* token_ids -> embeddings rows of the model's token_embedding table. */
static int gather_tokens(const api_service *svc, request *rq, const json_t *ids_value,
                         api_error *err)
{
    const tensor *table = &rq->model->weights[W_TOKEN_EMBEDDING];
    int_array ids;

    if (rq->model->layer > 0)
        return api_fail(err, API_E_MISSING_WEIGHT, "token_ids",
                        "model '%s' serves layer %zu, whose input is the hidden state of the "
                        "layer before: send embeddings, not token_ids",
                        rq->model->name, rq->model->layer);
    if (!table->data)
        return api_fail(err, API_E_MISSING_WEIGHT, "token_ids",
                        "token_ids need weights.token_embedding, which model '%s' lacks",
                        rq->model->name);
    if (int_array_from_json(ids_value, "token_ids", 0, (int64_t)table->dim[0] - 1,
                            API_E_OUT_OF_RANGE, &ids, err))
        return -1;
    size_t n = ids.dim[0] * (ids.ndim == 2 ? ids.dim[1] : 1), d = table->dim[1];
    /* The token and batch limits, before the gathered rows are allocated
     * (request_common checks them again on the result). */
    if (n > svc->limits.max_tokens || (ids.ndim == 2 && ids.dim[0] > svc->limits.max_batch)) {
        int_array_free(&ids);
        return api_fail(err, API_E_TOO_LARGE, "token_ids",
                        "token_ids holds %zu tokens; the limits are %zu tokens and a batch "
                        "of %zu", n, svc->limits.max_tokens, svc->limits.max_batch);
    }
    rq->x.data = malloc(n * d * sizeof *rq->x.data);
    if (!rq->x.data) {
        int_array_free(&ids);
        return api_fail(err, API_E_INTERNAL, NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        memcpy(rq->x.data + i * d, table->data + (size_t)ids.data[i] * d, d * sizeof(float));
    rq->x.ndim = ids.ndim + 1;
    memcpy(rq->x.dim, ids.dim, ids.ndim * sizeof *ids.dim);
    rq->x.dim[ids.ndim] = d;
    int_array_free(&ids);
    return 0;
}

/* z = norm(embed_norm(embed_scale*x + PE + input_bias)), rounded to
 * float32 once. */
static int attention_input(const api_service *svc, const request *rq, float *z,
                           api_error *err)
{
    const model *m = rq->model;
    pe_norm norm = {.kind = m->norm, .eps = m->norm_eps,
                    .weight = m->weights[W_NORM_WEIGHT].data,
                    .bias = m->weights[W_NORM_BIAS].data};
    pe_norm embed_norm = {.kind = m->embed_norm, .eps = m->embed_norm_eps,
                          .weight = m->weights[W_EMBED_NORM_WEIGHT].data,
                          .bias = m->weights[W_EMBED_NORM_BIAS].data};
    pe_absolute pe;
    size_t bad = 0;

    if (absolute_plan(svc, rq, &pe, err))
        return -1;
    /* embed_scale applies to the absolute schemes only */
    pe_input in = {.pe = &pe, .embed_scale = pe.kind == PE_ABS_NONE ? 1.0 : rq->embed_scale,
                   .add = m->weights[W_INPUT_BIAS].data, .pre_norm = &embed_norm,
                   .norm = &norm};
    pe_status st = pe_encode_input(&in, rq->x.data, rq->positions, request_rows(rq), rq->d, z,
                                   &bad);
    pe_cache_release(pe.cache);
    return st == PE_OK ? 0 : absolute_fail(rq, &pe, st, bad, "encoded (z)", err);
}

/* Views of the results, for checking and writing. */
typedef struct results {
    float *z, *qkv, *bias, *scores; /* owned */
    size_t heads;                   /* of the bias */
    rope_plan rope;
} results;

static void results_free(results *r)
{
    free(r->z);
    free(r->qkv);
    free(r->bias);
    free(r->scores);
    rope_plan_free(&r->rope);
}

static array_view view_of(const request *rq, output_id id, const results *r)
{
    const model *m = rq->model;
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    size_t width = qd + 2 * kvd;
    size_t dim[4], n = 0;
    array_view v;

    if (rq->batched)
        dim[n++] = rq->batch;
    switch (id) {
    case OUT_Q:
    case OUT_K:
    case OUT_V:
        dim[n++] = rq->tokens;
        dim[n++] = id == OUT_Q ? qd : kvd;
        v = array_dense(r->qkv + (id == OUT_Q ? 0 : id == OUT_K ? qd : qd + kvd), n, dim);
        v.row_stride = width;
        return v;
    case OUT_ENCODED:
        dim[n++] = rq->tokens;
        dim[n++] = rq->d;
        return array_dense(r->z, n, dim);
    default:
        dim[n++] = m->heads;
        dim[n++] = rq->tokens;
        dim[n++] = rq->tokens;
        return array_dense(id == OUT_BIAS ? r->bias : r->scores, n, dim);
    }
}

static int compute(const api_service *svc, const request *rq, const outputs *o, results *r,
                   api_error *err)
{
    const model *m = rq->model;
    size_t rows = request_rows(rq), t = rq->tokens;
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    size_t width = qd + 2 * kvd, n = 0, per_row = 0;
    bool need_bias = o->wanted[OUT_BIAS] || o->wanted[OUT_SCORES];

    if (mul_size(rows, width, &n))
        return api_fail(err, API_E_TOO_LARGE, NULL, "q, k and v would be too large");
    if (request_check_output(svc, n, "q, k and v", err))
        return -1;
    if (need_bias) {
        if (mul_size(m->heads, t, &per_row) || mul_size(per_row, t, &per_row) ||
            mul_size(per_row, rq->batch, &n))
            return api_fail(err, API_E_TOO_LARGE, NULL, "scores would be too large");
        if (request_check_output(svc, n, "scores", err))
            return -1;
    }
    r->z = malloc(rows * rq->d * sizeof *r->z);
    r->qkv = malloc(rows * width * sizeof *r->qkv);
    if (!r->z || !r->qkv)
        return api_fail(err, API_E_INTERNAL, NULL, "out of memory");
    if (attention_input(svc, rq, r->z, err))
        return -1;
    pe_project_qkv(&m->qkv, r->z, rows, r->qkv);
    model_apply_qk_norm(m, rows, r->qkv); /* Qwen3, OLMo 2, Gemma 3: before the rotation */
    if (rq->scheme.kind == SCHEME_ROPE) {
        if (rope_plan_init(svc, rq, qd, m->head_dim, &r->rope, err))
            return -1;
        pe_rope_apply(&r->rope.rope, r->rope.inv_freq, r->rope.attention_factor, rq->positions,
                      rows, qd, r->qkv, width, r->qkv, width);
        pe_rope_apply(&r->rope.rope, r->rope.inv_freq, r->rope.attention_factor, rq->positions,
                      rows, kvd, r->qkv + qd, width, r->qkv + qd, width);
    }
    if (!need_bias)
        return 0;
    if (rq->scheme.kind == SCHEME_ALIBI || rq->scheme.kind == SCHEME_T5) {
        if (relative_bias(svc, rq, m->heads, &r->bias, &r->heads, err))
            return -1;
    } else {
        r->bias = calloc(per_row * rq->batch, sizeof *r->bias);
        if (!r->bias)
            return api_fail(err, API_E_INTERNAL, NULL, "out of memory");
    }
    if (!o->wanted[OUT_SCORES])
        return 0;
    r->scores = malloc(per_row * rq->batch * sizeof *r->scores);
    if (!r->scores)
        return api_fail(err, API_E_INTERNAL, NULL, "out of memory");
    const scheme *s = &rq->scheme;
    double scale = s->has_score_scale ? s->score_scale
                   : s->kind == SCHEME_T5 ? 1.0
                                          : 1.0 / sqrt((double)m->head_dim);
    for (size_t b = 0; b < rq->batch; b++) {
        const float *q = r->qkv + b * t * width;
        /* Gemma 2: the soft cap goes on the scaled scores, before the bias */
        bool capped = m->score_softcap > 0.0;
        pe_attention_scores(q, width, q + qd, width, t, m->heads, m->kv_heads, m->head_dim,
                            scale, capped ? NULL : r->bias + b * per_row,
                            r->scores + b * per_row);
        if (capped)
            pe_softcap_scores(r->scores + b * per_row, r->bias + b * per_row, per_row,
                              m->score_softcap);
    }
    return 0;
}

static void write_shape(strbuf *sb, const request *rq)
{
    const model *m = rq->model;

    strbuf_puts(sb, ",\"shape\":{");
    if (rq->batched)
        strbuf_printf(sb, "\"batch\":%zu,", rq->batch);
    strbuf_printf(sb, "\"tokens\":%zu,\"d_model\":%zu,\"heads\":%zu,\"kv_heads\":%zu,"
                      "\"head_dim\":%zu}",
                  rq->tokens, m->d_model, m->heads, m->kv_heads, m->head_dim);
}

void api_apply(const api_service *svc, const api_budget *budget,
               const char *body, size_t len, api_response *out)
{
    (void)budget; /* not charged yet */
    request rq;
    api_error err;
    outputs o;
    results r = {0};
    strbuf sb = {0};

    memset(out, 0, sizeof *out);
    if (request_parse(svc, body, len, apply_keys, &rq, &err) ||
        request_model(svc, &rq, "default", &err))
        goto fail;
    for (weight_id w = W_WQ; w <= W_WV && !rq.model->qkv.w_qkv; w++)
        if (!model_has(rq.model, w)) {
            api_fail(&err, API_E_MISSING_WEIGHT, "model",
                     "/apply needs weights.%s, which model '%s' lacks", weight_names[w],
                     rq.model->name);
            goto fail;
        }
    const json_t *ids = jf_get(rq.root, "token_ids");
    if (ids && jf_get(rq.root, "embeddings")) {
        api_fail(&err, API_E_INVALID_REQUEST, "token_ids", "give embeddings or token_ids, not both");
        goto fail;
    }
    if (!ids && !jf_get(rq.root, "embeddings")) {
        api_fail(&err, API_E_INVALID_REQUEST, "embeddings", "give embeddings or token_ids");
        goto fail;
    }
    if ((ids && gather_tokens(svc, &rq, ids, &err)) || request_common(svc, &rq, &err) ||
        parse_outputs(rq.root, &o, &err))
        goto fail;
    if (rq.d != rq.model->d_model) {
        api_fail(&err, API_E_INVALID_SHAPE, "embeddings",
                 "embeddings have d = %zu but model '%s' has d_model %zu", rq.d, rq.model->name,
                 rq.model->d_model);
        goto fail;
    }
    /* The contract: a scheme that needs a table the model lacks is a 422,
     * whatever the request asks to see (t5 changes scores, not q/k/v). */
    if (rq.scheme.kind == SCHEME_T5 && !model_has(rq.model, W_T5_BIAS)) {
        api_fail(&err, API_E_MISSING_WEIGHT, "model",
                 "scheme t5 needs weights.t5_bias, which model '%s' lacks", rq.model->name);
        goto fail;
    }
    if (compute(svc, &rq, &o, &r, &err))
        goto fail;
    for (size_t i = 0; i < o.count; i++) {
        array_view v = view_of(&rq, o.order[i], &r);
        if (array_check_finite(&v, output_names[o.order[i]], &err))
            goto fail;
    }
    strbuf_puts(&sb, "{\"model\":");
    strbuf_put_json_string(&sb, rq.model->name);
    strbuf_puts(&sb, ",\"scheme\":");
    strbuf_put_json_string(&sb, scheme_names[rq.scheme.kind]);
    write_shape(&sb, &rq);
    if (scheme_reports_attention_factor(&rq.scheme))
        json_write_float_field(&sb, "attention_factor", r.rope.attention_factor);
    for (size_t i = 0; i < o.count; i++) {
        array_view v = view_of(&rq, o.order[i], &r);
        strbuf_putc(&sb, ',');
        array_write(&sb, output_names[o.order[i]], &v, rq.base64);
    }
    strbuf_putc(&sb, '}');
    if (respond_json(out, &sb, request_rows(&rq), &err))
        goto fail;
    goto done;
fail:
    strbuf_free(&sb);
    api_respond_error(out, &err);
done:
    results_free(&r);
    request_free(&rq);
}

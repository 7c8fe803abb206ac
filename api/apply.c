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

static int parse_outputs(const json_doc *doc, outputs *o, api_error *err)
{
    const json_t *list = jf_get(doc->root, "return");
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
    if (json_doc_array(doc, list)) /* a list of numbers: its first is wrong */
        return api_fail(err, API_E_INVALID_REQUEST, "return[0]",
                        "return[0] must be one of q, k, v, encoded, bias, scores");
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
    if (int_array_from_json(&rq->doc, ids_value, "token_ids", 0, (int64_t)table->dim[0] - 1,
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
        return api_fail_oom(err);
    }
    for (size_t i = 0; i < n; i++)
        memcpy(rq->x.data + i * d, table->data + (size_t)ids.data[i] * d, d * sizeof(float));
    rq->x.ndim = ids.ndim + 1;
    memcpy(rq->x.dim, ids.dim, ids.ndim * sizeof *ids.dim);
    rq->x.dim[ids.ndim] = d;
    int_array_free(&ids);
    return 0;
}

/* Everything /apply will compute, decided before any arithmetic: sizes,
 * the absolute encoding, the rope and the bias. */
typedef struct apply_plan {
    size_t rows, qd, kvd, width;
    bool need_bias;
    size_t per_row;      /* floats of bias and scores per batch row */
    pe_absolute pe;
    rope_plan rope;      /* owns its frequencies */
    bias_plan bias;      /* alibi, t5 */
    double score_scale;
} apply_plan;

/* Views of the results, for checking and writing. */
typedef struct results {
    float *z, *qkv, *bias, *scores; /* owned */
} results;

static void results_free(results *r)
{
    free(r->z);
    free(r->qkv);
    free(r->bias);
    free(r->scores);
}

static array_view view_of(const request *rq, const apply_plan *p, output_id id,
                          const results *r)
{
    const model *m = rq->model;
    size_t dim[4], n = 0;
    array_view v;

    if (rq->batched)
        dim[n++] = rq->batch;
    switch (id) {
    case OUT_Q:
    case OUT_K:
    case OUT_V:
        dim[n++] = rq->tokens;
        dim[n++] = id == OUT_Q ? p->qd : p->kvd;
        v = array_dense(r->qkv + (id == OUT_Q ? 0 : id == OUT_K ? p->qd : p->qd + p->kvd), n,
                        dim);
        v.row_stride = p->width;
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

/* Every check of /apply after decoding, each in one place. */
static int plan_apply(const api_service *svc, const request *rq, const outputs *o,
                      apply_plan *p, api_error *err)
{
    const model *m = rq->model;
    const scheme *s = &rq->scheme;
    size_t t = rq->tokens, n = 0;

    p->rows = request_rows(rq);
    p->qd = m->heads * m->head_dim;
    p->kvd = m->kv_heads * m->head_dim;
    p->width = p->qd + 2 * p->kvd;
    p->need_bias = o->wanted[OUT_BIAS] || o->wanted[OUT_SCORES];
    if (mul_size(p->rows, p->width, &n))
        return api_fail(err, API_E_TOO_LARGE, NULL, "q, k and v would be too large");
    if (request_check_output(svc, n, "q, k and v", err))
        return -1;
    if (p->need_bias) {
        if (mul_size(m->heads, t, &p->per_row) || mul_size(p->per_row, t, &p->per_row) ||
            mul_size(p->per_row, rq->batch, &n))
            return api_fail(err, API_E_TOO_LARGE, NULL, "scores would be too large");
        if (request_check_output(svc, n, "scores", err))
            return -1;
    }
    if (absolute_plan(svc, rq, &p->pe, err))
        return -1;
    if (s->kind == SCHEME_ROPE && rope_plan_init(svc, rq, p->qd, m->head_dim, &p->rope, err))
        return -1;
    if (p->need_bias && (s->kind == SCHEME_ALIBI || s->kind == SCHEME_T5) &&
        relative_plan(svc, rq, m->heads, &p->bias, err))
        return -1;
    p->score_scale = s->has_score_scale ? s->score_scale
                     : s->kind == SCHEME_T5 ? 1.0
                                            : 1.0 / sqrt((double)m->head_dim);
    return 0;
}

/* z = norm(embed_norm(embed_scale*x + PE + input_bias)), rounded to
 * float32 once, straight from the decoded input. */
static int attention_input(const request *rq, const apply_plan *p, float *z, api_error *err)
{
    const model *m = rq->model;
    pe_norm norm = {.kind = m->norm, .eps = m->norm_eps,
                    .weight = m->weights[W_NORM_WEIGHT].data,
                    .bias = m->weights[W_NORM_BIAS].data};
    pe_norm embed_norm = {.kind = m->embed_norm, .eps = m->embed_norm_eps,
                          .weight = m->weights[W_EMBED_NORM_WEIGHT].data,
                          .bias = m->weights[W_EMBED_NORM_BIAS].data};
    size_t bad = 0;

    /* embed_scale applies to the absolute schemes only */
    pe_input in = {.pe = &p->pe,
                   .embed_scale = p->pe.kind == PE_ABS_NONE ? 1.0 : rq->embed_scale,
                   .add = m->weights[W_INPUT_BIAS].data, .pre_norm = &embed_norm,
                   .norm = &norm};
    pe_status st = pe_encode_input(&in, rq->x.data, rq->positions, p->rows, rq->d, z, &bad);
    return st == PE_OK ? 0 : absolute_fail(rq, &p->pe, st, bad, "encoded (z)", err);
}

/* The arithmetic: fails only for memory or a non-finite result. */
static int compute(const request *rq, const outputs *o, const apply_plan *p, results *r,
                   api_error *err)
{
    const model *m = rq->model;
    size_t t = rq->tokens;

    r->z = malloc(p->rows * rq->d * sizeof *r->z);
    r->qkv = malloc(p->rows * p->width * sizeof *r->qkv);
    if (!r->z || !r->qkv)
        return api_fail_oom(err);
    if (attention_input(rq, p, r->z, err))
        return -1;
    pe_project_qkv(&m->qkv, r->z, p->rows, r->qkv);
    if (rq->scheme.kind == SCHEME_ROPE) {
        const rope_plan *rp = &p->rope;
        pe_rope_apply(&rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows,
                      p->qd, r->qkv, p->width, r->qkv, p->width);
        pe_rope_apply(&rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows,
                      p->kvd, r->qkv + p->qd, p->width, r->qkv + p->qd, p->width);
    }
    if (!p->need_bias)
        return 0;
    r->bias = calloc(p->per_row * rq->batch, sizeof *r->bias);
    if (!r->bias)
        return api_fail_oom(err);
    if (rq->scheme.kind == SCHEME_ALIBI || rq->scheme.kind == SCHEME_T5)
        relative_fill(rq, &p->bias, r->bias);
    if (!o->wanted[OUT_SCORES])
        return 0;
    r->scores = malloc(p->per_row * rq->batch * sizeof *r->scores);
    if (!r->scores)
        return api_fail_oom(err);
    for (size_t b = 0; b < rq->batch; b++) {
        const float *q = r->qkv + b * t * p->width;
        pe_attention_scores(q, p->width, q + p->qd, p->width, t, m->heads, m->kv_heads,
                            m->head_dim, p->score_scale, r->bias + b * p->per_row,
                            r->scores + b * p->per_row);
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
    apply_plan plan = {0};
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
    const json_t *ids = jf_get(rq.doc.root, "token_ids");
    if (ids && jf_get(rq.doc.root, "embeddings")) {
        api_fail(&err, API_E_INVALID_REQUEST, "token_ids", "give embeddings or token_ids, not both");
        goto fail;
    }
    if (!ids && !jf_get(rq.doc.root, "embeddings")) {
        api_fail(&err, API_E_INVALID_REQUEST, "embeddings", "give embeddings or token_ids");
        goto fail;
    }
    if ((ids && gather_tokens(svc, &rq, ids, &err)) || request_common(svc, &rq, &err) ||
        parse_outputs(&rq.doc, &o, &err))
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
    if (plan_apply(svc, &rq, &o, &plan, &err) || compute(&rq, &o, &plan, &r, &err))
        goto fail;
    for (size_t i = 0; i < o.count; i++) {
        array_view v = view_of(&rq, &plan, o.order[i], &r);
        if (array_check_finite(&v, output_names[o.order[i]], &err))
            goto fail;
    }
    strbuf_puts(&sb, "{\"model\":");
    strbuf_put_json_string(&sb, rq.model->name);
    strbuf_puts(&sb, ",\"scheme\":");
    strbuf_put_json_string(&sb, scheme_names[rq.scheme.kind]);
    write_shape(&sb, &rq);
    if (scheme_reports_attention_factor(&rq.scheme))
        json_write_float_field(&sb, "attention_factor", plan.rope.attention_factor);
    for (size_t i = 0; i < o.count; i++) {
        array_view v = view_of(&rq, &plan, o.order[i], &r);
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
    rope_plan_free(&plan.rope);
    request_free(&rq);
}

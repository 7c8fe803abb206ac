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

#include "answer.h"
#include "api.h"
#include "json/array_writer.h"
#include "relative.h"
#include "respond.h"
#include "request.h"
#include "json/strbuf.h"

/* Everything /apply will compute, decided before any arithmetic: sizes,
 * the absolute encoding, the rope and the bias. */
typedef struct apply_plan {
    size_t rows, qd, kvd, vd, width;
    bool need_bias;
    size_t per_row; /* floats of bias and scores per batch row */
    pe_absolute pe;
    rope_plan rope; /* owns its frequencies */
    bias_plan bias; /* alibi, t5 */
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

static array_view view_of(const request *rq, const apply_plan *p, output_id id, const results *r)
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
        dim[n++] = id == OUT_Q ? p->qd : id == OUT_K ? p->kvd : p->vd;
        /* r->qkv is NULL when only the shape is asked for (the budget) */
        v = array_dense(r->qkv ? r->qkv + (id == OUT_Q   ? 0
                                           : id == OUT_K ? p->qd
                                                         : p->qd + p->kvd)
                               : NULL,
                        n, dim);
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
static int plan_apply(const api_service *svc, const request *rq, const request_outputs *o,
                      apply_plan *p, api_error *err)
{
    const model *m = rq->model;
    const scheme *s = &rq->scheme;
    size_t t = rq->tokens, n = 0;

    p->rows = request_rows(rq);
    p->qd = m->heads * m->head_dim;
    p->kvd = m->kv_heads * m->head_dim;
    p->vd = model_v_width(m); /* kvd but for MLA (DeepSeek) */
    p->width = p->qd + p->kvd + p->vd;
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
    /* MLA rotates the last rope_dim channels of each head (model_mla_rotate) */
    size_t rope_width = m->mla ? m->heads * m->mla_w.rope_dim : p->qd;
    size_t rope_head = m->mla ? m->mla_w.rope_dim : m->head_dim;
    if (s->kind == SCHEME_ROPE && rope_plan_init(svc, rq, rope_width, rope_head, &p->rope, err))
        return -1;
    if (p->need_bias && (s->kind == SCHEME_ALIBI || s->kind == SCHEME_T5) &&
        relative_plan(svc, rq, m->heads, &p->bias, err))
        return -1;
    p->score_scale = s->has_score_scale     ? s->score_scale
                     : s->kind == SCHEME_T5 ? 1.0
                                            : 1.0 / sqrt((double)m->head_dim);
    return 0;
}

/* z = norm(embed_norm(embed_scale*x + PE + input_bias)), rounded to
 * float32 once, straight from the decoded input. */
static int attention_input(const request *rq, const apply_plan *p, float *z, api_error *err)
{
    const model *m = rq->model;
    pe_norm norm = {.kind = m->norm,
                    .eps = m->norm_eps,
                    .weight = m->weights[W_NORM_WEIGHT].data,
                    .bias = m->weights[W_NORM_BIAS].data};
    pe_norm embed_norm = {.kind = m->embed_norm,
                          .eps = m->embed_norm_eps,
                          .weight = m->weights[W_EMBED_NORM_WEIGHT].data,
                          .bias = m->weights[W_EMBED_NORM_BIAS].data};
    size_t bad = 0;

    /* embed_scale applies to the absolute schemes only */
    pe_input in = {.pe = &p->pe,
                   .embed_scale = p->pe.kind == PE_ABS_NONE ? 1.0 : rq->embed_scale,
                   .add = m->weights[W_INPUT_BIAS].data,
                   .pre_norm = &embed_norm,
                   .norm = &norm};
    pe_status st = pe_encode_input(&in, rq->x.data, rq->positions, p->rows, rq->d, z, &bad);
    return st == PE_OK ? 0 : absolute_fail(rq, &p->pe, st, bad, "encoded (z)", err);
}

/* The arithmetic: fails only for memory or a non-finite result. */
static int compute(const request *rq, const request_outputs *o, const apply_plan *p, results *r,
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
    if (model_project(m, r->z, p->rows, r->qkv))
        return api_fail_oom(err);
    model_apply_qk_norm(m, p->rows, r->qkv); /* Qwen3, OLMo 2, Gemma 3: before the rotation */
    if (rq->scheme.kind == SCHEME_ROPE && m->mla) {
        model_mla_rotate(m, &p->rope.rope, p->rope.inv_freq, p->rope.attention_factor,
                         rq->positions, p->rows, r->qkv);
    } else if (rq->scheme.kind == SCHEME_ROPE) {
        const rope_plan *rp = &p->rope;
        pe_rope_apply(&rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows, p->qd,
                      r->qkv, p->width, r->qkv, p->width);
        pe_rope_apply(&rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows, p->kvd,
                      r->qkv + p->qd, p->width, r->qkv + p->qd, p->width);
    }
    model_apply_post_rope(m, p->rows, rq->positions, r->qkv); /* Llama 4 */
    if (!p->need_bias)
        return 0;
    r->bias = calloc(p->per_row * rq->batch, sizeof *r->bias);
    if (!r->bias)
        return api_fail_oom(err);
    if (rq->scheme.kind == SCHEME_ALIBI || rq->scheme.kind == SCHEME_T5)
        relative_fill(rq, &p->bias, r->bias);
    relative_mask_keys(rq, m->heads, r->bias);
    if (!o->wanted[OUT_SCORES])
        return 0;
    r->scores = malloc(p->per_row * rq->batch * sizeof *r->scores);
    if (!r->scores)
        return api_fail_oom(err);
    for (size_t b = 0; b < rq->batch; b++) {
        const float *q = r->qkv + b * t * p->width;
        /* Gemma 2: the soft cap goes on the scaled scores, before the bias */
        bool capped = m->score_softcap > 0.0;
        pe_attention_scores(q, p->width, q + p->qd, p->width, t, m->heads, m->kv_heads, m->head_dim,
                            p->score_scale, capped ? NULL : r->bias + b * p->per_row,
                            r->scores + b * p->per_row);
        if (capped)
            pe_softcap_scores(r->scores + b * p->per_row, r->bias + b * p->per_row, p->per_row,
                              m->score_softcap);
    }
    /* a masked key's score is the mask's value itself, not value + mask */
    relative_mask_keys(rq, m->heads, r->scores);
    return 0;
}

static void write_shape(strbuf *sb, const request *rq)
{
    const model *m = rq->model;

    strbuf_puts(sb, ",\"shape\":{");
    if (rq->batched)
        strbuf_printf(sb, "\"batch\":%zu,", rq->batch);
    strbuf_printf(sb,
                  "\"tokens\":%zu,\"d_model\":%zu,\"heads\":%zu,\"kv_heads\":%zu,"
                  "\"head_dim\":%zu",
                  rq->tokens, m->d_model, m->heads, m->kv_heads, m->head_dim);
    if (m->mla) /* DeepSeek: q/k heads and v heads differ; head_dim is q/k's */
        strbuf_printf(sb, ",\"qk_head_dim\":%zu,\"v_head_dim\":%zu", m->head_dim, m->mla_w.v_dim);
    strbuf_putc(sb, '}');
}

void api_apply(const api_service *svc, const api_budget *budget, const char *body, size_t len,
               api_response *out)
{
    request rq;
    api_error err;
    apply_plan plan = {0};
    results r = {0};
    answer ans;
    reservation held = {0};

    memset(out, 0, sizeof *out);
    answer_init(&ans);
    if (request_decode(svc, REQUEST_APPLY, body, len, &rq, &err))
        goto fail;
    if (rq.d != rq.model->d_model) {
        api_fail(&err, API_E_INVALID_SHAPE, "embeddings",
                 "embeddings have d = %zu but model '%s' has d_model %zu", rq.d, rq.model->name,
                 rq.model->d_model);
        goto fail;
    }
    if (t5_table_check(&rq, &err))
        goto fail;
    if (plan_apply(svc, &rq, &rq.outputs, &plan, &err))
        goto fail;
    /* what the request holds until its answer is sent: input, positions,
     * z, q|k|v, bias, scores and the answer's text (a window when streamed) */
    size_t text = 512;
    for (size_t i = 0; i < rq.outputs.count; i++) {
        array_view v = view_of(&rq, &plan, rq.outputs.order[i], &r);
        text += array_text_bound(&v, rq.base64) + 32;
    }
    size_t work = plan.rows * (rq.d + plan.width) * sizeof(float) +
                  (plan.need_bias ? plan.per_row * rq.batch * sizeof(float) : 0) *
                      (rq.outputs.wanted[OUT_SCORES] ? 2 : 1);
    if (reservation_take(&held, budget,
                         request_held_bytes(&rq) + work + answer_held_bytes(svc, text), &err) ||
        compute(&rq, &rq.outputs, &plan, &r, &err))
        goto fail;
    for (size_t i = 0; i < rq.outputs.count; i++) {
        array_view v = view_of(&rq, &plan, rq.outputs.order[i], &r);
        if (api_json(&err, array_check_finite(&v, output_names[rq.outputs.order[i]], &err.json)))
            goto fail;
    }
    /* write: small answers whole, large ones streamed */
    strbuf *sb = answer_text(&ans);
    strbuf_puts(sb, "{\"model\":");
    strbuf_put_json_string(sb, rq.model->name);
    strbuf_puts(sb, ",\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[rq.scheme.kind]);
    write_shape(sb, &rq);
    if (scheme_reports_attention_factor(&rq.scheme))
        json_write_float_field(sb, "attention_factor", plan.rope.attention_factor);
    for (size_t i = 0; i < rq.outputs.count; i++) {
        array_view v = view_of(&rq, &plan, rq.outputs.order[i], &r);
        strbuf_putc(answer_text(&ans), ',');
        answer_array(&ans, output_names[rq.outputs.order[i]], &v, rq.base64);
    }
    strbuf_putc(answer_text(&ans), '}');
    answer_own(&ans, r.z);
    answer_own(&ans, r.qkv);
    answer_own(&ans, r.bias);
    answer_own(&ans, r.scores);
    r = (results){0};
    ans.held = held;
    held = (reservation){0};
    if (answer_respond(&ans, out, request_rows(&rq), stream_min_bytes(svc), &err))
        goto fail;
    goto done;
fail:
    api_respond_error(out, &err);
done:
    answer_free(&ans);
    reservation_release(&held);
    results_free(&r);
    rope_plan_free(&plan.rope);
    pe_cache_release(plan.pe.cache);
    request_free(&rq);
}

/*
 * apply.c - POST /apply: position-aware Q, K, V of a model's attention,
 * computed by the one forward pass (forward.h) and written out.
 *
 * Response: {"model", "scheme", "shape": {...}, ["attention_factor"], then
 * the arrays named in `return` in that order}.
 */
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "api.h"
#include "forward.h"
#include "json/array_writer.h"
#include "json/finite.h"
#include "positions_nd.h"
#include "relative.h"
#include "respond.h"
#include "request.h"
#include "json/strbuf.h"

/* A view of one array of the pass, for checking and writing. */
static array_view view_of(const request *rq, const forward_plan *p, output_id id,
                          const forward_result *r)
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
    case OUT_GATE:
        dim[n++] = rq->tokens;
        dim[n++] = p->qd;
        return array_dense(r->gate, n, dim);
    default:
        dim[n++] = m->heads;
        dim[n++] = rq->tokens;
        dim[n++] = rq->tokens;
        return array_dense(id == OUT_BIAS ? r->bias : r->scores, n, dim);
    }
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

/* What the request holds until its answer is sent: input, positions, the
 * pass's arrays and the answer's text (a window when streamed). */
static size_t held_bytes(const api_service *svc, const request *rq, const forward_plan *p)
{
    size_t text = 512;
    forward_result none = {0};

    for (size_t i = 0; i < rq->outputs.count; i++) {
        array_view v = view_of(rq, p, rq->outputs.order[i], &none);
        text += array_text_bound(&v, rq->base64) + 32;
    }
    return request_held_bytes(rq) + forward_work_bytes(rq, p, false) + answer_held_bytes(svc, text);
}

/* The answer's text: the envelope, then the arrays in `return` order. The
 * answer takes the pass's arrays (r is empty after). */
static int write_answer(const request *rq, const forward_plan *p, forward_result *r, answer *ans,
                        api_error *err)
{
    /* q, k and v are columns of one buffer: one pass over all of it (one
     * wake of the team, not three) clears them together; only when it finds
     * a NaN or infinity is each array checked for the message naming it. */
    size_t qkv_count = r->qkv ? p->rows * p->width : 0;
    bool qkv_finite = r->qkv && floats_first_non_finite(r->qkv, qkv_count) == qkv_count;
    for (size_t i = 0; i < rq->outputs.count; i++) {
        output_id id = rq->outputs.order[i];
        if (qkv_finite && (id == OUT_Q || id == OUT_K || id == OUT_V))
            continue;
        array_view v = view_of(rq, p, id, r);
        if (api_json(err, array_check_finite(&v, output_names[id], &err->json)))
            return -1;
    }
    strbuf *sb = answer_text(ans);
    strbuf_puts(sb, "{\"model\":");
    strbuf_put_json_string(sb, rq->model->name);
    strbuf_puts(sb, ",\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[rq->scheme.kind]);
    write_shape(sb, rq);
    if (scheme_reports_attention_factor(&rq->scheme))
        json_write_float_field(sb, "attention_factor", p->rope.attention_factor);
    positions_nd_write(sb, rq);
    for (size_t i = 0; i < rq->outputs.count; i++) {
        array_view v = view_of(rq, p, rq->outputs.order[i], r);
        strbuf_putc(answer_text(ans), ',');
        answer_array(ans, output_names[rq->outputs.order[i]], &v, rq->base64);
    }
    strbuf_putc(answer_text(ans), '}');
    answer_own(ans, r->z);
    answer_own(ans, r->qkv);
    answer_own(ans, r->bias);
    answer_own(ans, r->scores);
    answer_own(ans, r->gate);
    *r = (forward_result){0};
    return 0;
}

void api_apply(const api_service *svc, const api_budget *budget, const char *body, size_t len,
               api_response *out)
{
    request rq;
    api_error err;
    forward_plan plan = {0};
    forward_result r = {0};
    answer ans;
    reservation held = {0};

    memset(out, 0, sizeof *out);
    answer_init(&ans);
    if (request_decode(svc, budget, REQUEST_APPLY, body, len, &rq, &err) ||
        forward_plan_init(svc, &rq, rq.outputs.wanted[OUT_BIAS], rq.outputs.wanted[OUT_SCORES],
                          &plan, &err) ||
        request_reserve(&rq, held_bytes(svc, &rq, &plan), &held, &err) ||
        forward_run(&rq, &plan, false, &r, &err) || write_answer(&rq, &plan, &r, &ans, &err))
        goto fail;
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
    forward_result_free(&r);
    forward_plan_free(&plan);
    request_free(&rq);
}

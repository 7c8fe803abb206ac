/*
 * encode.c - POST /encode: add (or apply) the positional encoding to token
 * embeddings, or return the bare table when only a shape is given.
 *
 * Response: {"scheme", "shape", "encoded" | "bias", ["attention_factor"]}.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "api.h"
#include "json/array_writer.h"
#include "relative.h"
#include "respond.h"
#include "rope2d.h"
#include "request.h"
#include "json/strbuf.h"
#include "positions_nd.h"

static void write_header(strbuf *sb, const request *rq)
{
    strbuf_puts(sb, "{\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[rq->scheme.kind]);
    if (rq->batched)
        strbuf_printf(sb, ",\"shape\":[%zu,%zu,%zu]", rq->batch, rq->tokens, rq->d);
    else
        strbuf_printf(sb, ",\"shape\":[%zu,%zu]", rq->tokens, rq->d);
}

/* The bare table of sinusoidal, rope or none, made as it is sent: each row
 * depends on its position alone. Owns what it uses (no pointer into the
 * service's table cache, which may evict while the answer is sent). */
typedef struct table_rows {
    scheme_kind kind;
    pe_absolute pe;
    rope_plan rope;     /* owns its frequencies */
    int64_t *positions; /* owned */
    size_t d;
} table_rows;

static void table_fill(void *state, size_t r0, size_t r1, float *out)
{
    const table_rows *t = state;
    size_t n = r1 - r0;

    if (t->kind == SCHEME_ROPE)
        pe_rope_apply(&t->rope.rope, t->rope.inv_freq, t->rope.attention_factor, t->positions + r0,
                      n, t->d, NULL, t->d, out, t->d);
    else if (t->kind == SCHEME_NONE)
        memset(out, 0, n * t->d * sizeof *out);
    else /* sinusoidal: sines and cosines, always finite */
        (void)pe_encode_absolute(&t->pe, NULL, 1.0, NULL, t->positions + r0, n, t->d, out, NULL);
}

static void table_free(void *state)
{
    table_rows *t = state;

    free(t->positions);
    rope_plan_free(&t->rope);
    free(t);
}

/* Whether the answer is a bare table that table_fill can make while it is
 * sent: no input, a scheme whose rows are finite by construction (a rope
 * factor up to FLT_MAX keeps |cos|, |sin| times it finite), and large
 * enough to be streamed. */
static bool table_streams(const api_service *svc, const request *rq, const rope_plan *plan,
                          const array_view *view)
{
    scheme_kind k = rq->scheme.kind;
    return !rq->x.data && !rq->positions_nd &&
           (k == SCHEME_SINUSOIDAL || k == SCHEME_NONE ||
            (k == SCHEME_ROPE && fabs(plan->attention_factor) <= FLT_MAX)) &&
           array_text_bound(view, rq->base64) >= stream_min_bytes(svc);
}

/* Write the answer of a streamed bare table: rows are made a window at a
 * time, so the request holds its positions and a window, not the table. */
static int respond_table(const api_service *svc, request *rq, const pe_absolute *pe,
                         rope_plan *plan, const array_view *view, api_response *out, api_error *err)
{
    answer ans;
    table_rows *t;
    size_t bound = array_text_bound(view, rq->base64);
    reservation held;

    if (request_reserve(rq,
                        request_held_bytes(rq) + answer_held_bytes(svc, bound) +
                            ANSWER_WINDOW_BYTES,
                        &held, err))
        return -1;
    answer_init(&ans);
    ans.held = held;
    t = calloc(1, sizeof *t);
    if (!t) {
        answer_free(&ans);
        return api_fail_oom(err);
    }
    *t = (table_rows){.kind = rq->scheme.kind,
                      .pe = *pe,
                      .rope = *plan,
                      .positions = rq->positions,
                      .d = rq->d};
    t->pe.cache = NULL;
    t->pe.cache_rows = 0;
    t->rope.rope.cache = NULL;
    t->rope.rope.cache_rows = 0;
    rq->positions = NULL; /* moved */
    plan->inv_freq = NULL;
    write_header(answer_text(&ans), rq);
    strbuf_putc(answer_text(&ans), ',');
    answer_generated(&ans, "encoded", view, rq->base64,
                     (answer_rows){.state = t, .fill = table_fill, .free_state = table_free});
    if (scheme_reports_attention_factor(&rq->scheme))
        json_write_float_field(answer_text(&ans), "attention_factor", t->rope.attention_factor);
    strbuf_putc(answer_text(&ans), '}');
    return answer_respond(&ans, out, request_rows(rq), stream_min_bytes(svc), err);
}

void api_encode(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                api_response *out)
{
    request rq;
    api_error err;
    rope_plan plan = {0};
    answer ans;
    reservation held = {0};
    float *values = NULL; /* owned until the answer owns it */
    size_t dim[4];
    bias_plan bias;
    pe_absolute pe = {.kind = PE_ABS_NONE};
    pe_rope2d r2d;
    array_view view;
    const char *name = "encoded";

    memset(out, 0, sizeof *out);
    answer_init(&ans);
    if (request_decode(svc, budget, REQUEST_ENCODE, body, len, &rq, &err))
        goto fail;
    /* plan: every check before any arithmetic */
    size_t rows = request_rows(&rq), n = 0;
    bool relative = rq.scheme.kind == SCHEME_ALIBI || rq.scheme.kind == SCHEME_T5;
    if ((relative && relative_plan(svc, &rq, 0, &bias, &err)) ||
        (rq.scheme.kind == SCHEME_ROPE && rope_plan_init(svc, &rq, rq.d, 0, &plan, &err)) ||
        (rq.scheme.kind == SCHEME_ROPE2D && rope2d_plan(&rq, &r2d, &err)) ||
        (!relative && absolute_plan(svc, &rq, &pe, &err)))
        goto fail;
    if (rq.batched)
        dim[n++] = rq.batch;
    if (relative) {
        name = "bias";
        dim[n++] = bias.heads;
        dim[n++] = rq.tokens;
    } else {
        dim[n++] = rq.tokens;
    }
    dim[n++] = relative ? rq.tokens : rq.d;
    view = array_dense(NULL, n, dim);
    size_t count = array_count(&view);
    if (table_streams(svc, &rq, &plan, &view)) {
        if (respond_table(svc, &rq, &pe, &plan, &view, out, &err))
            goto fail;
        goto done;
    }
    /* what the request holds until its answer is sent: input, positions,
     * the result and the answer's text (a window when streamed) */
    if (request_reserve(&rq,
                        request_held_bytes(&rq) + count * sizeof(float) +
                            answer_held_bytes(svc, array_text_bound(&view, rq.base64)),
                        &held, &err))
        goto fail;
    /* compute: can fail only for memory or a non-finite result */
    values = malloc(count * sizeof *values);
    if (!values) {
        api_fail_oom(&err);
        goto fail;
    }
    if (relative) {
        relative_fill(&rq, &bias, values);
        relative_mask_keys(&rq, bias.heads, values);
    } else if (rq.scheme.kind == SCHEME_ROPE2D) {
        if (pe_rope2d_apply(&r2d, rq.positions_nd, rows, rq.d, rq.x.data, values) != PE_OK) {
            api_fail_oom(&err); /* the plan checked every parameter */
            goto fail;
        }
    } else if (rq.scheme.kind == SCHEME_ROPE && rq.positions_nd) {
        pe_mrope_apply(&plan.rope, &rq.scheme.mrope, plan.inv_freq, plan.attention_factor,
                       rq.positions_nd, rows, rq.d, rq.x.data, rq.d, values, rq.d);
    } else if (rq.scheme.kind == SCHEME_ROPE) {
        pe_rope_apply(&plan.rope, plan.inv_freq, plan.attention_factor, rq.positions, rows, rq.d,
                      rq.x.data, rq.d, values, rq.d);
    } else if (rq.scheme.kind == SCHEME_NONE) {
        /* x unchanged, bit for bit (also -0.0); the bare table is zeros */
        if (rq.x.data)
            memcpy(values, rq.x.data, rows * rq.d * sizeof *values);
        else
            memset(values, 0, rows * rq.d * sizeof *values);
    } else {
        size_t bad = 0;
        pe_status st = pe_encode_absolute(&pe, NULL, rq.embed_scale, rq.x.data, rq.positions, rows,
                                          rq.d, values, &bad);
        if (st != PE_OK) {
            absolute_fail(&rq, &pe, st, bad, "encoded", &err);
            goto fail;
        }
    }
    view.data = values;
    if (api_json(&err, array_check_finite(&view, name, &err.json)))
        goto fail;
    /* write: small answers whole, large ones streamed */
    answer_own(&ans, values);
    values = NULL;
    ans.held = held;
    held = (reservation){0};
    write_header(answer_text(&ans), &rq);
    strbuf_putc(answer_text(&ans), ',');
    answer_array(&ans, name, &view, rq.base64);
    if (scheme_reports_attention_factor(&rq.scheme))
        json_write_float_field(answer_text(&ans), "attention_factor", plan.attention_factor);
    positions_nd_write(answer_text(&ans), &rq);
    strbuf_putc(answer_text(&ans), '}');
    if (answer_respond(&ans, out, rows, stream_min_bytes(svc), &err))
        goto fail;
    goto done;
fail:
    api_respond_error(out, &err);
done:
    answer_free(&ans);
    reservation_release(&held);
    free(values);
    rope_plan_free(&plan);
    pe_cache_release(pe.cache);
    request_free(&rq);
}

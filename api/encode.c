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
#include "positions_nd.h"
#include "respond.h"
#include "request.h"
#include "rope2d.h"
#include "json/strbuf.h"

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

/* What /encode computes, planned before any arithmetic. */
typedef struct encode_plan {
    bool relative;    /* alibi or t5: the answer is a bias, not the encoded input */
    bias_plan bias;   /* relative only */
    rope_plan rope;   /* rope only; owns its frequencies */
    pe_rope2d rope2d; /* rope2d only */
    pe_absolute pe;   /* absolute schemes; its cache is a reference to release */
    array_view view;  /* the answer's array: its shape, data set once computed */
    const char *name; /* "encoded" or "bias" */
} encode_plan;

static void encode_plan_free(encode_plan *p)
{
    rope_plan_free(&p->rope);
    pe_cache_release(p->pe.cache);
}

/* Plan: every check, and the answer's shape, before any arithmetic. On
 * failure *p is still safe to encode_plan_free. */
static int encode_plan_init(const api_service *svc, const request *rq, encode_plan *p,
                            api_error *err)
{
    size_t dim[4], n = 0;

    *p = (encode_plan){.pe = {.kind = PE_ABS_NONE}, .name = "encoded"};
    p->relative = rq->scheme.kind == SCHEME_ALIBI || rq->scheme.kind == SCHEME_T5;
    if ((p->relative && relative_plan(svc, rq, 0, &p->bias, err)) ||
        (rq->scheme.kind == SCHEME_ROPE && rope_plan_init(svc, rq, rq->d, 0, &p->rope, err)) ||
        (rq->scheme.kind == SCHEME_ROPE2D && rope2d_plan(rq, &p->rope2d, err)) ||
        (!p->relative && absolute_plan(svc, rq, &p->pe, err)))
        return -1;
    if (rq->batched)
        dim[n++] = rq->batch;
    if (p->relative) {
        p->name = "bias";
        dim[n++] = p->bias.heads;
    }
    dim[n++] = rq->tokens;
    dim[n++] = p->relative ? rq->tokens : rq->d;
    p->view = array_dense(NULL, n, dim);
    return 0;
}

/* Compute values[count] as planned: fails only for a non-finite result
 * (or rope2d's frequencies out of memory). */
static int encode_compute(const request *rq, const encode_plan *p, float *values, api_error *err)
{
    size_t rows = request_rows(rq);

    if (p->relative) {
        relative_fill(rq, &p->bias, values);
        relative_mask_keys(rq, p->bias.heads, values);
    } else if (rq->scheme.kind == SCHEME_ROPE2D) {
        if (pe_rope2d_apply(&p->rope2d, rq->positions_nd, rows, rq->d, rq->x.data, values) != PE_OK)
            return api_fail_oom(err); /* the plan checked every parameter */
    } else if (rq->scheme.kind == SCHEME_ROPE && rq->positions_nd) {
        pe_mrope_apply(&p->rope.rope, &rq->scheme.mrope, p->rope.inv_freq, p->rope.attention_factor,
                       rq->positions_nd, rows, rq->d, rq->x.data, rq->d, values, rq->d);
    } else if (rq->scheme.kind == SCHEME_ROPE) {
        pe_rope_apply(&p->rope.rope, p->rope.inv_freq, p->rope.attention_factor, rq->positions,
                      rows, rq->d, rq->x.data, rq->d, values, rq->d);
    } else if (rq->scheme.kind == SCHEME_NONE) {
        /* x unchanged, bit for bit (also -0.0); the bare table is zeros */
        if (rq->x.data)
            memcpy(values, rq->x.data, rows * rq->d * sizeof *values);
        else
            memset(values, 0, rows * rq->d * sizeof *values);
    } else {
        size_t bad = 0;
        pe_status st = pe_encode_absolute(&p->pe, NULL, rq->embed_scale, rq->x.data, rq->positions,
                                          rows, rq->d, values, &bad);
        if (st != PE_OK)
            return absolute_fail(rq, &p->pe, st, bad, "encoded", err);
    }
    return 0;
}

/* Write the computed answer, whole or streamed. Steals values and *held
 * (the answer owns them from here, also on failure). */
static int encode_respond(const api_service *svc, const request *rq, const encode_plan *p,
                          float *values, reservation *held, api_response *out, api_error *err)
{
    answer ans;
    array_view view = p->view;

    answer_init(&ans);
    answer_own(&ans, values);
    ans.held = *held;
    *held = (reservation){0};
    view.data = values;
    write_header(answer_text(&ans), rq);
    strbuf_putc(answer_text(&ans), ',');
    answer_array(&ans, p->name, &view, rq->base64);
    if (scheme_reports_attention_factor(&rq->scheme))
        json_write_float_field(answer_text(&ans), "attention_factor", p->rope.attention_factor);
    positions_nd_write(answer_text(&ans), rq);
    strbuf_putc(answer_text(&ans), '}');
    int rc = answer_respond(&ans, out, request_rows(rq), stream_min_bytes(svc), err);
    answer_free(&ans);
    return rc;
}

void api_encode(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                api_response *out)
{
    request rq;
    api_error err;
    encode_plan plan = {.pe = {.kind = PE_ABS_NONE}};
    reservation held = {0};
    float *values = NULL; /* owned until encode_respond steals it */

    memset(out, 0, sizeof *out);
    if (request_decode(svc, budget, REQUEST_ENCODE, body, len, &rq, &err) ||
        encode_plan_init(svc, &rq, &plan, &err))
        goto fail;
    if (table_streams(svc, &rq, &plan.rope, &plan.view)) {
        if (respond_table(svc, &rq, &plan.pe, &plan.rope, &plan.view, out, &err))
            goto fail;
        goto done;
    }
    /* what the request holds until its answer is sent: input, positions,
     * the result and the answer's text (a window when streamed) */
    size_t count = array_count(&plan.view);
    if (request_reserve(&rq,
                        request_held_bytes(&rq) + count * sizeof(float) +
                            answer_held_bytes(svc, array_text_bound(&plan.view, rq.base64)),
                        &held, &err))
        goto fail;
    values = malloc(count * sizeof *values);
    if (!values) {
        api_fail_oom(&err);
        goto fail;
    }
    plan.view.data = values;
    if (encode_compute(&rq, &plan, values, &err) ||
        api_json(&err, array_check_finite(&plan.view, plan.name, &err.json)))
        goto fail;
    int rc = encode_respond(svc, &rq, &plan, values, &held, out, &err);
    values = NULL; /* stolen by encode_respond */
    if (rc)
        goto fail;
    goto done;
fail:
    api_respond_error(out, &err);
done:
    reservation_release(&held);
    free(values);
    encode_plan_free(&plan);
    request_free(&rq);
}

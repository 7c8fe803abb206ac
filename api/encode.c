/*
 * encode.c - POST /encode: add (or apply) the positional encoding to token
 * embeddings, or return the bare table when only a shape is given.
 *
 * Response: {"scheme", "shape", "encoded" | "bias", ["attention_factor"]}.
 */
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "api.h"
#include "json/array_writer.h"
#include "relative.h"
#include "respond.h"
#include "request.h"
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

void api_encode(const api_service *svc, const api_budget *budget,
                const char *body, size_t len, api_response *out)
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
    array_view view;
    const char *name = "encoded";

    memset(out, 0, sizeof *out);
    answer_init(&ans);
    if (request_decode(svc, REQUEST_ENCODE, body, len, &rq, &err))
        goto fail;
    /* plan: every check before any arithmetic */
    size_t rows = request_rows(&rq), n = 0;
    bool relative = rq.scheme.kind == SCHEME_ALIBI || rq.scheme.kind == SCHEME_T5;
    if ((relative && relative_plan(svc, &rq, 0, &bias, &err)) ||
        (rq.scheme.kind == SCHEME_ROPE && rope_plan_init(svc, &rq, rq.d, 0, &plan, &err)) ||
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
    /* what the request holds until its answer is sent: input, positions,
     * the result and the answer's text (a window when streamed) */
    if (reservation_take(&held, budget,
                         request_held_bytes(&rq) + count * sizeof(float) +
                             answer_held_bytes(svc, array_text_bound(&view, rq.base64)),
                         &err))
        goto fail;
    /* compute: can fail only for memory or a non-finite result */
    values = malloc(count * sizeof *values);
    if (!values) {
        api_fail_oom(&err);
        goto fail;
    }
    if (relative) {
        relative_fill(&rq, &bias, values);
    } else if (rq.scheme.kind == SCHEME_ROPE) {
        pe_rope_apply(&plan.rope, plan.inv_freq, plan.attention_factor, rq.positions, rows,
                      rq.d, rq.x.data, rq.d, values, rq.d);
    } else if (rq.scheme.kind == SCHEME_NONE) {
        /* x unchanged, bit for bit (also -0.0); the bare table is zeros */
        if (rq.x.data)
            memcpy(values, rq.x.data, rows * rq.d * sizeof *values);
        else
            memset(values, 0, rows * rq.d * sizeof *values);
    } else {
        size_t bad = 0;
        pe_status st = pe_encode_absolute(&pe, NULL, rq.embed_scale, rq.x.data, rq.positions,
                                          rows, rq.d, values, &bad);
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
    request_free(&rq);
}

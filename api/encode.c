/*
 * encode.c - POST /encode: add (or apply) the positional encoding to token
 * embeddings, or return the bare table when only a shape is given.
 *
 * Response: {"scheme", "shape", "encoded" | "bias", ["attention_factor"]}.
 */
#include <stdlib.h>
#include <string.h>

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
    (void)budget; /* not charged yet */
    request rq;
    api_error err;
    rope_plan plan = {0};
    strbuf sb = {0};
    float *values = NULL; /* owned: the answer's array */
    size_t dim[4];
    bias_plan bias;
    pe_absolute pe = {.kind = PE_ABS_NONE};
    array_view view;
    const char *name = "encoded";

    memset(out, 0, sizeof *out);
    if (request_decode(svc, REQUEST_ENCODE, body, len, &rq, &err))
        goto fail;
    /* plan: every check before any arithmetic */
    size_t rows = request_rows(&rq), n = 0;
    bool relative = rq.scheme.kind == SCHEME_ALIBI || rq.scheme.kind == SCHEME_T5;
    if ((relative && relative_plan(svc, &rq, 0, &bias, &err)) ||
        (rq.scheme.kind == SCHEME_ROPE && rope_plan_init(svc, &rq, rq.d, 0, &plan, &err)) ||
        (!relative && absolute_plan(svc, &rq, &pe, &err)))
        goto fail;
    /* compute: can fail only for memory or a non-finite result */
    values = malloc((relative ? bias.total : rows * rq.d) * sizeof *values);
    if (!values) {
        api_fail_oom(&err);
        goto fail;
    }
    if (rq.batched)
        dim[n++] = rq.batch;
    if (relative) {
        relative_fill(&rq, &bias, values);
        name = "bias";
        dim[n++] = bias.heads;
        dim[n++] = rq.tokens;
        dim[n++] = rq.tokens;
    } else {
        if (rq.scheme.kind == SCHEME_ROPE) {
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
            pe_status st = pe_encode_absolute(&pe, NULL, rq.embed_scale, rq.x.data,
                                              rq.positions, rows, rq.d, values, &bad);
            if (st != PE_OK) {
                absolute_fail(&rq, &pe, st, bad, "encoded", &err);
                goto fail;
            }
        }
        dim[n++] = rq.tokens;
        dim[n++] = rq.d;
    }
    view = array_dense(values, n, dim);
    if (api_json(&err, array_check_finite(&view, name, &err.json)))
        goto fail;
    write_header(&sb, &rq);
    strbuf_putc(&sb, ',');
    array_write(&sb, name, &view, rq.base64);
    if (scheme_reports_attention_factor(&rq.scheme))
        json_write_float_field(&sb, "attention_factor", plan.attention_factor);
    strbuf_putc(&sb, '}');
    if (respond_json(out, &sb, rows, &err))
        goto fail;
    goto done;
fail:
    strbuf_free(&sb);
    api_respond_error(out, &err);
done:
    free(values);
    rope_plan_free(&plan);
    pe_cache_release(pe.cache);
    request_free(&rq);
}

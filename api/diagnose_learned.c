/*
 * diagnose_learned.c - /diagnose under a learned claim: the subject (a
 * table, or embeddings + encoded) against embed_scale*x + table[p] of the
 * model's position_table, as is and with positions shifted by a few (the
 * OPT/RoBERTa-style offsets: +-1, +-2). pe_diagnose has no learned claims;
 * this is the part of the search a learned table allows without knowing
 * how it was trained.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_learned.h"
#include "diagnose_batch.h"
#include "diagnose_compare.h"
#include "diagnose_decode.h"
#include "diagnose_write.h"
#include "json/array_writer.h"

static const int64_t shifts[] = {0, 1, -1, 2, -2};
enum { N_SHIFTS = sizeof shifts / sizeof shifts[0] };

/* embed_scale*x + table[positions + shift] into want; false when a shifted
 * position leaves the table. */
static bool render(const diag_request *dr, const pe_absolute *pe, int64_t shift, int64_t *shifted,
                   float *want)
{
    const request *rq = &dr->rq;
    size_t bad = 0;

    for (size_t t = 0; t < rq->tokens; t++) {
        shifted[t] = rq->positions[t] + shift;
        if (shifted[t] < 0 || (uint64_t)shifted[t] >= pe->table_rows)
            return false;
    }
    return pe_encode_absolute(pe, NULL, rq->embed_scale, rq->x.data, shifted, rq->tokens, rq->d,
                              want, &bad) == PE_OK;
}

static void write_answer(strbuf *sb, const diag_request *dr, const pe_dx_errors *claimed,
                         const pe_dx_errors *best, int64_t shift, pe_dx_tolerance tol)
{
    const request *rq = &dr->rq;
    size_t index[2];
    pe_dx_variant none;
    bool explained = shift != 0 && best->mismatched == 0;

    pe_dx_variant_init(&none);
    diag_unflatten(claimed->worst, 2, dr->arr[0].dim, index);
    strbuf_puts(sb, "{\"verdict\":");
    strbuf_put_json_string(sb, claimed->mismatched == 0 ? "match"
                               : explained              ? "explained"
                                                        : "unexplained");
    strbuf_putc(sb, ',');
    diag_write_claimed(sb, SCHEME_LEARNED, &none, 0, claimed, NULL, index, 2);
    strbuf_puts(sb, ",\"findings\":[");
    if (explained) {
        char message[320];
        snprintf(message, sizeof message,
                 "rows of the model's position table are read at positions shifted by %+lld "
                 "(an OPT/RoBERTa-style offset); with offset %+lld the maximum error drops from "
                 "%.3g to %.3g",
                 (long long)shift, (long long)shift, claimed->max_abs, best->max_abs);
        strbuf_puts(sb, "{\"code\":\"position_offset\",\"message\":");
        strbuf_put_json_string(sb, message);
        strbuf_printf(sb, ",\"evidence\":{\"offset\":%lld}}", (long long)shift);
    }
    strbuf_puts(sb, "],\"best\":{\"model\":");
    if (rq->owned_model)
        strbuf_puts(sb, "null");
    else
        strbuf_put_json_string(sb, rq->model->name);
    strbuf_puts(sb, ",\"scheme\":\"learned\",\"params\":{},");
    diag_write_batch_positions(sb, rq->positions, dr->batch, rq->tokens / dr->batch,
                               explained ? shift : 0);
    strbuf_puts(sb, ",\"embed_scale\":");
    diag_put_double(sb, rq->embed_scale);
    const pe_dx_errors *b = explained ? best : claimed;
    strbuf_puts(sb, ",\"max_abs_error\":");
    diag_put_float(sb, b->max_abs);
    strbuf_puts(sb, ",\"max_rel_error\":");
    diag_put_float(sb, b->max_rel);
    strbuf_putc(sb, '}');
    (void)tol;
}

int diag_diagnose_learned(const api_service *svc, const diag_request *dr, strbuf *sb,
                          api_error *err)
{
    const request *rq = &dr->rq;
    const float *subject = dr->arr[0].data;
    size_t n = rq->tokens * rq->d;
    pe_absolute pe;
    float *want = NULL;      /* owned: the claim's render, then the map */
    int64_t *shifted = NULL; /* owned: positions + a shift */
    pe_dx_errors claimed = {0}, best = {0};
    int64_t best_shift = 0;
    int rc = -1;

    if (absolute_plan(svc, rq, &pe, err))
        return -1;
    want = malloc(n * sizeof *want);
    shifted = malloc(rq->tokens * sizeof *shifted);
    if (!want || !shifted) {
        api_fail_oom(err);
        goto done;
    }
    for (size_t i = 0; i < N_SHIFTS; i++) {
        if (!render(dr, &pe, shifts[i], shifted, want))
            continue;
        if (i == 0 &&
            diag_check_claim_finite(subject, want, n, dr->names[0], 2, dr->arr[0].dim, err))
            goto done;
        pe_dx_errors e = diag_compare(subject, want, n, dr->tol);
        if (i == 0)
            claimed = best = e;
        else if (e.max_abs < best.max_abs) {
            best = e;
            best_shift = shifts[i];
        }
        if (e.mismatched == 0)
            break;
    }
    write_answer(sb, dr, &claimed, &best, best_shift, dr->tol);
    if (dr->return_map && render(dr, &pe, 0, shifted, want)) {
        diag_error_map(subject, want, n);
        array_view v = array_dense(want, 2, dr->arr[0].dim);
        strbuf_putc(sb, ',');
        array_write(sb, "error_map", &v, rq->base64);
    }
    strbuf_putc(sb, '}');
    rc = 0;
done:
    free(want);
    free(shifted);
    return rc;
}

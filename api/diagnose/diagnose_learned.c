/*
 * diagnose_learned.c - /diagnose under a learned claim: the subject (a
 * table, or embeddings + encoded) against embed_scale*x + table[p] of the
 * model's position_table at the claimed positions; when they differ, each
 * token's table row is recovered (the row after the previous token's
 * first, else a scan of the table): a constant shift of any size is
 * position_offset (decoding after a prompt, OPT/RoBERTa-style offsets),
 * any other list positions_mismatch. pe_diagnose has no learned claims;
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

/* Rows searched through the whole table before the recovery gives up (a
 * subject that is no table's rows at all costs at most this many scans). */
enum { MAX_TABLE_SCANS = 64 };

/* embed_scale*x + table[positions] into want; false when a position
 * leaves the table. */
static bool render(const diag_request *dr, const pe_absolute *pe, const int64_t *positions,
                   float *want)
{
    const request *rq = &dr->rq;
    size_t bad = 0;

    for (size_t t = 0; t < rq->tokens; t++)
        if (positions[t] < 0 || (uint64_t)positions[t] >= pe->table_rows)
            return false;
    return pe_encode_absolute(pe, NULL, rq->embed_scale, rq->x.data, positions, rq->tokens, rq->d,
                              want, &bad) == PE_OK;
}

/* Whether token t of the subject is embed_scale*x[t] + table[p] within tol. */
static bool row_fits(const diag_request *dr, const pe_absolute *pe, size_t t, int64_t p)
{
    const request *rq = &dr->rq;
    size_t d = rq->d;
    if (p < 0 || (uint64_t)p >= pe->table_rows)
        return false;
    const float *got = dr->arr[0].data + t * d, *row = pe->table + (size_t)p * d;
    const float *x = rq->x.data ? rq->x.data + t * d : NULL;
    for (size_t j = 0; j < d; j++) {
        double want = (x ? (double)(float)(rq->embed_scale * x[j]) : 0.0) + row[j];
        if (!(fabs(got[j] - want) <= dr->tol.atol + dr->tol.rtol * fabs(want)))
            return false;
    }
    return true;
}

/* Each token's table row, into found: the next row after the previous
 * token's first (decoding goes on from there), else the whole table
 * scanned (at most MAX_TABLE_SCANS times). False when a token fits no row. */
static bool recover_positions(const diag_request *dr, const pe_absolute *pe, int64_t *found)
{
    const request *rq = &dr->rq;
    size_t scans = 0;

    for (size_t t = 0; t < rq->tokens; t++) {
        int64_t guess = t ? found[t - 1] + 1 : rq->positions[0];
        if (row_fits(dr, pe, t, guess) || row_fits(dr, pe, t, guess = rq->positions[t])) {
            found[t] = guess;
            continue;
        }
        if (++scans > MAX_TABLE_SCANS)
            return false;
        bool fits = false;
        for (size_t p = 0; p < pe->table_rows && !fits; p++)
            if ((fits = row_fits(dr, pe, t, (int64_t)p)))
                found[t] = (int64_t)p;
        if (!fits)
            return false;
    }
    return true;
}

/* The finding: position_offset when the positions found are the claimed
 * ones shifted alike, else positions_mismatch with one list per row. */
static void write_finding(strbuf *sb, const diag_request *dr, const int64_t *found,
                          const pe_dx_errors *claimed, const pe_dx_errors *best)
{
    const request *rq = &dr->rq;
    size_t rows = dr->batch, n = rq->tokens / rows;
    int64_t shift = found[0] - rq->positions[0];
    bool alike = true;
    char message[320];

    for (size_t t = 1; t < rq->tokens && alike; t++)
        alike = found[t] - rq->positions[t] == shift;
    if (alike) {
        snprintf(message, sizeof message,
                 "rows of the model's position table are read at positions shifted by %+lld "
                 "(an offset, e.g. decoding after a prompt of that length); with offset %+lld "
                 "the maximum error drops from %.3g to %.3g",
                 (long long)shift, (long long)shift, claimed->max_abs, best->max_abs);
        strbuf_puts(sb, "{\"code\":\"position_offset\",\"message\":");
        strbuf_put_json_string(sb, message);
        strbuf_printf(sb, ",\"evidence\":{\"offset\":%lld}}", (long long)shift);
        return;
    }
    snprintf(message, sizeof message,
             "the subject's rows are the model's position table at other positions than the "
             "claimed ones (first: %lld where %lld was claimed); with these positions the "
             "maximum error drops from %.3g to %.3g",
             (long long)found[0], (long long)rq->positions[0], claimed->max_abs, best->max_abs);
    strbuf_puts(sb, "{\"code\":\"positions_mismatch\",\"message\":");
    strbuf_put_json_string(sb, message);
    strbuf_puts(sb, ",\"evidence\":{\"positions\":[");
    for (size_t r = 0; r < rows; r++) {
        strbuf_puts(sb, r ? ",[" : "[");
        for (size_t t = 0; t < n; t++)
            strbuf_printf(sb, "%s%lld", t ? "," : "", (long long)found[r * n + t]);
        strbuf_putc(sb, ']');
    }
    strbuf_puts(sb, "],\"pattern\":");
    pe_dx_pattern at = pe_dx_row_pattern(found, rq->positions, n);
    bool shared = true;
    for (size_t r = 1; r < rows && shared; r++)
        shared = pe_dx_row_pattern(found + r * n, rq->positions + r * n, n) == at;
    strbuf_put_json_string(sb, shared ? pe_dx_pattern_name(at) : "other");
    if (rows > 1) {
        strbuf_puts(sb, ",\"rows\":[");
        for (size_t r = 0; r < rows; r++)
            strbuf_printf(sb, "%s%zu", r ? "," : "", r);
        strbuf_putc(sb, ']');
    }
    strbuf_puts(sb, "}}");
}

/* explained: found reproduces the subject (best its errors); else the
 * claim stands as best. */
static void write_answer(strbuf *sb, const diag_request *dr, const pe_dx_errors *claimed,
                         const pe_dx_errors *best, const int64_t *found, bool explained)
{
    const request *rq = &dr->rq;
    size_t index[TENSOR_MAX_NDIM];
    pe_dx_variant none;

    pe_dx_variant_init(&none);
    size_t ndim = diag_sent_index(dr, claimed->worst, index); /* every axis as sent */
    strbuf_puts(sb, "{\"verdict\":");
    strbuf_put_json_string(sb, claimed->mismatched == 0 ? "match"
                               : explained              ? "explained"
                                                        : "unexplained");
    strbuf_putc(sb, ',');
    diag_write_claimed(sb, SCHEME_LEARNED, &none, 0, claimed, NULL, index, ndim);
    strbuf_puts(sb, ",\"findings\":[");
    if (explained)
        write_finding(sb, dr, found, claimed, best);
    strbuf_puts(sb, "],\"best\":{");
    diag_write_best_model(sb, rq, dr->model_json);
    strbuf_puts(sb, ",\"scheme\":\"learned\",\"params\":{},");
    diag_write_batch_positions(sb, explained ? found : rq->positions, dr->batch,
                               rq->tokens / dr->batch, 0);
    strbuf_puts(sb, ",\"embed_scale\":");
    diag_put_double(sb, rq->embed_scale);
    const pe_dx_errors *b = explained ? best : claimed;
    strbuf_puts(sb, ",\"max_abs_error\":");
    diag_put_float(sb, b->max_abs);
    strbuf_puts(sb, ",\"max_rel_error\":");
    diag_put_float(sb, b->max_rel);
    strbuf_putc(sb, '}');
}

int diag_diagnose_learned(const api_service *svc, const diag_request *dr, strbuf *sb,
                          api_error *err)
{
    const request *rq = &dr->rq;
    const float *subject = dr->arr[0].data;
    size_t n = rq->tokens * rq->d;
    pe_absolute pe;
    float *want = NULL;    /* owned: the claim's render, then the map */
    int64_t *found = NULL; /* owned: the positions recovered */
    pe_dx_errors claimed = {0}, best = {0};
    bool explained = false;
    int rc = -1;

    if (absolute_plan(svc, rq, &pe, err))
        return -1;
    want = malloc(n * sizeof *want);
    found = malloc(rq->tokens * sizeof *found);
    if (!want || !found) {
        api_fail_oom(err);
        goto done;
    }
    if (render(dr, &pe, rq->positions, want)) {
        if (diag_check_claim_finite(subject, want, n, dr->names[0], 2, dr->arr[0].dim, err))
            goto done;
        claimed = best = diag_compare(subject, want, n, dr->tol);
    }
    if (claimed.mismatched > 0 && recover_positions(dr, &pe, found) &&
        render(dr, &pe, found, want)) {
        best = diag_compare(subject, want, n, dr->tol);
        explained = best.mismatched == 0;
    }
    write_answer(sb, dr, &claimed, explained ? &best : &claimed, found, explained);
    if (dr->return_map && render(dr, &pe, rq->positions, want)) {
        diag_error_map(subject, want, n);
        array_view v = array_dense(want, 2, dr->arr[0].dim);
        strbuf_putc(sb, ',');
        array_write(sb, "error_map", &v, rq->base64);
    }
    strbuf_putc(sb, '}');
    rc = 0;
done:
    free(want);
    free(found);
    return rc;
}

/*
 * diagnose_batch.c - leading batch axes of a /diagnose subject (contract
 * "/diagnose, version 2", subjects of any batch shape).
 *
 * A subject array [..., tokens, n] (bias: [..., heads, tokens, tokens]) is
 * folded to its last `inner` axes. With axes "bhtd", a [batch][heads]
 * [tokens][head_dim] array is first read as [batch][tokens][heads*head_dim]
 * (what q.view(b, t, h, hd).transpose(1, 2) undoes). Batch rows that are
 * all equal (a broadcast cache, [1, 1, seq, dim]) are read once, unless the
 * claim gives positions or a mask per row; rows that differ are read one
 * after another as [batch*tokens][n], each row at its own claimed
 * positions (the claim's positions [batch][tokens], flattened). A bias
 * must have equal batch rows (one [heads][tokens][tokens] is read).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_batch.h"
#include "diagnose_write.h"

/* in [b][m][n][hd] with its middle axes exchanged: [b][n][m][hd], new
 * (the caller frees) or NULL. */
static float *swap_middle_axes(const float *in, size_t b, size_t m, size_t n, size_t hd)
{
    size_t count = b * m * n * hd;
    float *out = malloc((count > 0 ? count : 1) * sizeof *out); /* new */
    if (!out)
        return NULL;
    for (size_t r = 0; r < b; r++)
        for (size_t j = 0; j < m; j++)
            for (size_t i = 0; i < n; i++)
                memcpy(out + ((r * n + i) * m + j) * hd, in + ((r * m + j) * n + i) * hd,
                       hd * sizeof *out);
    return out;
}

float *diag_heads_first(const float *in, size_t b, size_t t, size_t h, size_t hd)
{
    return swap_middle_axes(in, b, t, h, hd);
}

/* [b][h][t][hd] -> [b][t][h*hd] in place of t's data. */
static int fold_heads(tensor *t, const char *name, api_error *err)
{
    if (t->ndim != 4)
        return api_fail(err, API_E_INVALID_SHAPE, name,
                        "axes \"bhtd\" reads %s as [batch][heads][tokens][head_dim], not %zu axes",
                        name, t->ndim);
    size_t b = t->dim[0], h = t->dim[1], n = t->dim[2], hd = t->dim[3];
    float *out = swap_middle_axes(t->data, b, h, n, hd); /* new, then t's */
    if (!out)
        return api_fail_oom(err);
    free(t->data);
    t->data = out;
    t->ndim = 3;
    t->dim[0] = b;
    t->dim[1] = n;
    t->dim[2] = h * hd;
    return 0;
}

/* Whether every row of `rows` rows of `row` values equals row 0. */
static bool rows_equal(const float *data, size_t rows, size_t row)
{
    for (size_t r = 1; r < rows; r++)
        if (memcmp(data + r * row, data, row * sizeof *data) != 0)
            return false;
    return true;
}

bool diag_batch_rows_differ(const tensor *t, size_t inner, bool bhtd)
{
    /* "bhtd": the batch is the first axis alone ([b][h][t][hd]), and its
     * rows are equal before the heads are folded when they are after */
    size_t lead = bhtd ? 1 : t->ndim > inner ? t->ndim - inner : 0, rows = 1, row = 1;
    if (t->ndim < lead)
        return false;
    for (size_t i = 0; i < t->ndim; i++)
        *(i < lead ? &rows : &row) *= t->dim[i];
    return rows > 1 && !rows_equal(t->data, rows, row);
}

int diag_fold_batch(tensor *t, const char *name, size_t inner, bool bhtd, bool per_row,
                    size_t *batch, api_error *err)
{
    if (bhtd && fold_heads(t, name, err))
        return -1;
    if (t->ndim < inner)
        return api_fail(err, API_E_INVALID_SHAPE, name, "%s needs at least %zu axes, got %zu", name,
                        inner, t->ndim);
    size_t lead = t->ndim - inner, rows = 1, row = 1;
    for (size_t i = 0; i < t->ndim; i++)
        *(i < lead ? &rows : &row) *= t->dim[i];
    *batch = 1;
    if (rows > 1 && (per_row || !rows_equal(t->data, rows, row))) {
        if (inner == 3) /* a bias: one [heads][tokens][tokens] is read */
            return api_fail(err, API_E_INVALID_SHAPE, name,
                            "the %zu batch rows of %s differ: /diagnose reads a bias whose "
                            "batch rows are equal; send each row as its own request",
                            rows, name);
        *batch = rows; /* the rows one after another, each at its own positions */
        t->dim[lead] *= rows;
    }
    memmove(t->dim, t->dim + lead, inner * sizeof *t->dim);
    t->ndim = inner;
    return 0;
}

void diag_write_batch_positions(strbuf *sb, const int64_t *positions, size_t batch, size_t tokens,
                                int64_t shift)
{
    bool same = true;
    for (size_t b = 1; b < batch && same; b++)
        same = memcmp(positions + b * tokens, positions, tokens * sizeof *positions) == 0;
    if (same) { /* one row stands for all: an offset or [tokens] */
        diag_write_best_positions(sb, positions, tokens, shift);
        return;
    }
    strbuf_puts(sb, "\"positions\":[");
    for (size_t b = 0; b < batch; b++) {
        strbuf_puts(sb, b ? ",[" : "[");
        for (size_t t = 0; t < tokens; t++)
            strbuf_printf(sb, "%s%" PRId64, t ? "," : "", positions[b * tokens + t] + shift);
        strbuf_putc(sb, ']');
    }
    strbuf_putc(sb, ']');
}

/* Whether values [from, to) of got differ from want beyond tol. */
static bool span_differs(const float *got, const float *want, size_t from, size_t to,
                         pe_dx_tolerance tol)
{
    for (size_t i = from; i < to; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol.atol + tol.rtol * fabs((double)want[i])))
            return true;
    return false;
}

int diag_rows_differing(const pe_dx_subject *subj, const pe_dx_variant *claim, size_t batch,
                        pe_dx_tolerance tol, diag_rows *rows, strbuf *json)
{
    size_t n = pe_dx_subject_size(subj), per_row = batch ? subj->rows / batch * subj->cols : 0;
    size_t half = subj->b ? n / 2 : n; /* cos + sin: two arrays of n / 2 */
    float *want = NULL;
    bool first = true;

    if (batch <= 1 || subj->cols == 0)
        return 0;
    rows->differs = calloc(batch, sizeof *rows->differs); /* the caller's */
    if (!rows->differs || !(want = malloc(n * sizeof *want)) ||
        pe_dx_render(subj, claim, want) != PE_OK) {
        free(want);
        return -1;
    }
    rows->batch = batch;
    rows->tokens = subj->rows / batch;
    rows->claimed = subj->positions;
    strbuf_putc(json, '[');
    for (size_t b = 0; b < batch; b++) {
        size_t from = b * per_row, to = from + per_row;
        rows->differs[b] = span_differs(subj->a, want, from, to, tol) ||
                           (subj->b && span_differs(subj->b, want + half, from, to, tol));
        if (rows->differs[b]) {
            strbuf_printf(json, "%s%zu", first ? "" : ",", b);
            first = false;
        }
    }
    strbuf_putc(json, ']');
    strbuf_putc(json, '\0'); /* json->data is then a C string */
    free(want);
    rows->json = json->data;
    return json->failed ? -1 : 0;
}

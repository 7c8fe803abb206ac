/*
 * array_writer.c - result arrays as JSON text or base64 (see array_writer.h).
 */
#include "json/array_writer.h"

#include <stdint.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/base64.h"
#include "json/finite.h"
#include "json/float_text.h"

array_view array_dense(const float *data, size_t ndim, const size_t *dim)
{
    array_view a = {.data = data, .ndim = ndim};
    memcpy(a.dim, dim, ndim * sizeof *dim);
    a.row_stride = dim[ndim - 1];
    return a;
}

size_t array_count(const array_view *a)
{
    size_t n = 1;
    for (size_t i = 0; i < a->ndim; i++)
        n *= a->dim[i];
    return n;
}

static size_t row_count(const array_view *a)
{
    size_t n = 1;
    for (size_t i = 0; i + 1 < a->ndim; i++)
        n *= a->dim[i];
    return n;
}

int array_check_finite(const array_view *a, const char *name, json_error *err)
{
    size_t rows = row_count(a), cols = a->dim[a->ndim - 1];

    /* Big results: the OpenMP team looks first; the index of the first bad
     * value, for the message, is then looked for on one thread. */
    if (rows * cols >= FLOATS_PARALLEL_MIN && omp_get_max_threads() > 1) {
        int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
        for (size_t r = 0; r < rows; r++)
            bad |= floats_have_non_finite(a->data + r * a->row_stride, cols);
        if (!bad)
            return 0;
    }
    for (size_t r = 0; r < rows; r++) {
        size_t c = floats_first_non_finite(a->data + r * a->row_stride, cols);
        if (c == cols)
            continue;
        char at[160];
        size_t flat = r * cols + c, used = (size_t)snprintf(at, sizeof at, "%s", name);
        size_t idx[4];
        for (size_t k = a->ndim; k-- > 0;) {
            idx[k] = flat % a->dim[k];
            flat /= a->dim[k];
        }
        for (size_t k = 0; k < a->ndim && used < sizeof at; k++)
            used += (size_t)snprintf(at + used, sizeof at - used, "[%zu]", idx[k]);
        return json_fail(err, JSON_E_NON_FINITE, NULL,
                         "result %s is not a finite float32 (the computation overflows)", at);
    }
    return 0;
}

static void write_row(strbuf *sb, const float *row, size_t cols)
{
    /* Reserve the worst case once per row, then format in place: each
     * number advances at most its longest text and a comma, and the last
     * one may use FLOAT_TEXT_MAX bytes of scratch from where it starts.
     * (Reserving FLOAT_TEXT_MAX a number overran array_text_bound, so even
     * an answer reserved at its bound was copied once more at its end.) */
    char *at = strbuf_reserve(sb, cols * (FLOAT_TEXT_LONGEST + 1) + FLOAT_TEXT_MAX + 2);
    if (!at)
        return;
    char *p = at;
    *p++ = '[';
    for (size_t c = 0; c < cols; c++) {
        if (c)
            *p++ = ',';
        p += float_to_text(row[c], p);
    }
    *p++ = ']';
    strbuf_advance(sb, (size_t)(p - at));
}

/* Rows [r0, r1) of the nested JSON text, each with the brackets around it:
 * row r opens one '[' for every enclosing array it starts and closes one
 * for every enclosing array it ends, so any range of rows can be written
 * on its own. */
static void write_rows_at(strbuf *sb, const array_view *a, size_t r0, size_t r1, const float *first)
{
    size_t lead = a->ndim - 1, cols = a->dim[lead], span[4];

    /* span[i]: rows inside one array at depth i (dims i .. lead-1) */
    span[lead] = 1;
    for (size_t i = lead; i-- > 0;)
        span[i] = span[i + 1] * a->dim[i];
    for (size_t r = r0; r < r1; r++) {
        char *at = strbuf_reserve(sb, lead + 1);
        if (!at)
            return;
        size_t n = 0;
        if (r > 0)
            at[n++] = ',';
        for (size_t i = 0; i < lead; i++)
            if (r % span[i] == 0)
                at[n++] = '[';
        strbuf_advance(sb, n);
        write_row(sb, first + (r - r0) * a->row_stride, cols);
        for (size_t i = lead; i-- > 0;)
            if ((r + 1) % span[i] == 0)
                strbuf_putc(sb, ']');
    }
}

/* Big ranges are written by the OpenMP team, one chunk of rows each, then
 * joined; number text is most of the time of a large JSON answer. */
#define PARALLEL_MIN_ELEMENTS ((size_t)1 << 14)

/* Rows [r0, r1) of nested text (row r0 at first) by up to `team` threads:
 * chunks of rows into buffers of their own, joined in order. Each row
 * writes its own commas and brackets (write_rows_at), so the text is that
 * of one thread. */
static void write_rows_team(strbuf *sb, const array_view *a, size_t r0, size_t r1,
                            const float *first, int team)
{
    size_t rows = r1 - r0;
    if (team <= 1 || rows < 2) {
        write_rows_at(sb, a, r0, r1, first);
        return;
    }
    size_t chunks = (size_t)team * 4 < rows ? (size_t)team * 4 : rows;
    strbuf *parts = calloc(chunks, sizeof *parts);
    if (!parts) {
        write_rows_at(sb, a, r0, r1, first); /* no memory for parts: one buffer */
        return;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
    for (size_t c = 0; c < chunks; c++) {
        size_t c0 = r0 + rows * c / chunks, c1 = r0 + rows * (c + 1) / chunks;
        write_rows_at(&parts[c], a, c0, c1, first + (c0 - r0) * a->row_stride);
    }
    for (size_t c = 0; c < chunks; c++) {
        if (parts[c].failed)
            sb->failed = true;
        else
            strbuf_put(sb, parts[c].data, parts[c].len);
        strbuf_free(&parts[c]);
    }
    free(parts);
}

/* The team for n values: the caller's when they are many, else 1. */
static int team_for(size_t n, int team)
{
    return n >= PARALLEL_MIN_ELEMENTS && team > 1 ? team : 1;
}

static void write_nested(strbuf *sb, const array_view *a)
{
    if (a->ndim == 1) {
        write_row(sb, a->data, a->dim[0]);
        return;
    }
    write_rows_team(sb, a, 0, row_count(a), a->data,
                    team_for(array_count(a), omp_get_max_threads()));
}

void json_write_float_field(strbuf *sb, const char *name, double value)
{
    char text[FLOAT_TEXT_MAX];

    float_to_text((float)value, text);
    strbuf_putc(sb, ',');
    strbuf_put_json_string(sb, name);
    strbuf_putc(sb, ':');
    strbuf_puts(sb, text);
}

/* Rows [r0, r1) as base64 of their float32 bytes, at dst; row r0 is at
 * first. */
static void encode_rows_at(char *dst, const array_view *a, size_t r0, size_t r1, const float *first)
{
    size_t cols = a->dim[a->ndim - 1];
    base64_writer w = {.out = dst};

    if (a->row_stride == cols) {
        base64_write(&w, first, (r1 - r0) * cols * sizeof(float));
    } else {
        for (size_t r = r0; r < r1; r++)
            base64_write(&w, first + (r - r0) * a->row_stride, cols * sizeof(float));
    }
    base64_finish(&w);
}

/* Rows [r0, r1) (row r0 at first) as base64 at dst by up to `team`
 * threads, in chunks of a multiple of 3 rows (so of 3 bytes: 12*cols),
 * which makes every chunk's text independent and its place known. r0 is a
 * multiple of 3 (or the range is one chunk). */
static void encode_rows_team(char *dst, const array_view *a, size_t r0, size_t r1,
                             const float *first, int team)
{
    size_t rows = r1 - r0, cols = a->dim[a->ndim - 1];
    size_t per = team > 1 ? 3 * (rows / (3 * (size_t)team * 4) + 1) : rows;
    size_t chunks = per ? (rows + per - 1) / per : 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team) if (chunks > 1)
    for (size_t c = 0; c < chunks; c++) {
        size_t c0 = c * per, c1 = c0 + per < rows ? c0 + per : rows;
        encode_rows_at(dst + c0 * cols * sizeof(float) / 3 * 4, a, r0 + c0, r0 + c1,
                       first + c0 * a->row_stride);
    }
}

/* The array as one base64 string, sized exactly up front; big arrays by
 * the OpenMP team. */
static void write_base64(strbuf *sb, const array_view *a)
{
    size_t rows = row_count(a), cols = a->dim[a->ndim - 1];
    size_t len = base64_encoded_len(rows * cols * sizeof(float));
    char *dst = strbuf_reserve(sb, len + 2);

    if (!dst)
        return;
    dst[0] = '"';
    encode_rows_team(dst + 1, a, 0, rows, a->data, team_for(rows * cols, omp_get_max_threads()));
    dst[len + 1] = '"';
    strbuf_advance(sb, len + 2);
}

void array_write_value(strbuf *sb, const array_view *a, bool base64)
{
    if (base64)
        write_base64(sb, a);
    else
        write_nested(sb, a);
}

size_t array_rows(const array_view *a)
{
    return a->ndim == 1 ? 1 : row_count(a);
}

size_t array_text_bound(const array_view *a, bool base64)
{
    size_t rows = row_count(a), cols = a->dim[a->ndim - 1];

    if (base64)
        return base64_encoded_len(rows * cols * sizeof(float)) + 2;
    /* each number and its comma, each row's brackets, the outer ones */
    return rows * (cols * (FLOAT_TEXT_MAX / 2 + 1) + 2 * a->ndim + 1) + 2 * a->ndim;
}

void array_write_rows(strbuf *sb, const array_view *a, bool base64, size_t r0, size_t r1, int team)
{
    array_write_rows_at(sb, a, base64, r0, r1, a->data + r0 * a->row_stride, team);
}

void array_write_rows_at(strbuf *sb, const array_view *a, bool base64, size_t r0, size_t r1,
                         const float *first, int team)
{
    size_t rows = row_count(a), cols = a->dim[a->ndim - 1];

    team = team_for((r1 - r0) * cols, team);
    if (!base64) {
        if (a->ndim == 1)
            write_row(sb, first, cols);
        else
            write_rows_team(sb, a, r0, r1, first, team);
        return;
    }
    size_t len = base64_encoded_len((r1 - r0) * cols * sizeof(float));
    char *dst = strbuf_reserve(sb, len + 2);
    if (!dst)
        return;
    size_t n = 0;
    if (r0 == 0)
        dst[n++] = '"';
    encode_rows_team(dst + n, a, r0, r1, first, team);
    n += len;
    if (r1 == rows)
        dst[n++] = '"';
    strbuf_advance(sb, n);
}

void array_write(strbuf *sb, const char *name, const array_view *a, bool base64)
{
    strbuf_put_json_string(sb, name);
    strbuf_putc(sb, ':');
    array_write_value(sb, a, base64);
    if (!base64)
        return;
    strbuf_printf(sb, ",\"%s_shape\":[", name);
    for (size_t i = 0; i < a->ndim; i++)
        strbuf_printf(sb, "%s%zu", i ? "," : "", a->dim[i]);
    strbuf_putc(sb, ']');
}

/*
 * array_writer.c - result arrays as JSON text or base64 (see array_writer.h).
 */
#include "array_writer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base64.h"
#include "float_text.h"

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

int array_check_finite(const array_view *a, const char *name, api_error *err)
{
    size_t rows = row_count(a), cols = a->dim[a->ndim - 1];

    for (size_t r = 0; r < rows; r++) {
        const float *row = a->data + r * a->row_stride;
        for (size_t c = 0; c < cols; c++)
            if (!isfinite(row[c])) {
                char at[160];
                size_t flat = r * cols + c, used = (size_t)snprintf(at, sizeof at, "%s", name);
                size_t idx[4];
                for (size_t k = a->ndim; k-- > 0;) {
                    idx[k] = flat % a->dim[k];
                    flat /= a->dim[k];
                }
                for (size_t k = 0; k < a->ndim && used < sizeof at; k++)
                    used += (size_t)snprintf(at + used, sizeof at - used, "[%zu]", idx[k]);
                return api_fail(err, API_E_NON_FINITE, NULL,
                                "result %s is not a finite float32 (the computation overflows)",
                                at);
            }
    }
    return 0;
}

static void write_row(strbuf *sb, const float *row, size_t cols)
{
    /* Reserve the worst case once per row, then format in place. */
    char *at = strbuf_reserve(sb, cols * FLOAT_TEXT_MAX + 2);
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

static void write_nested(strbuf *sb, const array_view *a, size_t depth, size_t *row)
{
    if (depth + 1 == a->ndim) {
        write_row(sb, a->data + *row * a->row_stride, a->dim[depth]);
        (*row)++;
        return;
    }
    strbuf_putc(sb, '[');
    for (size_t i = 0; i < a->dim[depth]; i++) {
        if (i)
            strbuf_putc(sb, ',');
        write_nested(sb, a, depth + 1, row);
    }
    strbuf_putc(sb, ']');
}

void array_write(strbuf *sb, const char *name, const array_view *a, bool base64)
{
    strbuf_put_json_string(sb, name);
    strbuf_putc(sb, ':');
    if (!base64) {
        size_t row = 0;
        write_nested(sb, a, 0, &row);
        return;
    }
    size_t rows = row_count(a), cols = a->dim[a->ndim - 1];
    base64_writer w = {.out = sb};
    strbuf_putc(sb, '"');
    if (a->row_stride == cols) {
        base64_write(&w, a->data, rows * cols * sizeof(float));
    } else {
        for (size_t r = 0; r < rows; r++)
            base64_write(&w, a->data + r * a->row_stride, cols * sizeof(float));
    }
    base64_finish(&w);
    strbuf_putc(sb, '"');
    strbuf_printf(sb, ",\"%s_shape\":[", name);
    for (size_t i = 0; i < a->ndim; i++)
        strbuf_printf(sb, "%s%zu", i ? "," : "", a->dim[i]);
    strbuf_putc(sb, ']');
}

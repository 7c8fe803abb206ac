/*
 * array_writer.h - writing float32 result arrays into a JSON response,
 * as nested arrays of shortest round-trip numbers or as base64 (the
 * sibling `<name>_shape` is written by the answer, api/answer.c), whole or
 * a range of rows at a time.
 */
#ifndef ARRAY_WRITER_H
#define ARRAY_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "json/json_error.h"
#include "json/strbuf.h"

/* A read-only view of a result: logical shape dim[0..ndim), rows of the
 * last dimension `row_stride` floats apart (row_stride == last dim when
 * dense; larger for Q, K, V inside the fused projection output). */
typedef struct array_view {
    const float *data;
    size_t ndim;
    size_t dim[4];
    size_t row_stride;
} array_view;

/* A dense view of shape dim[0..ndim). */
array_view array_dense(const float *data, size_t ndim, const size_t *dim);

/* Number of elements. */
size_t array_count(const array_view *a);

/* -1 with a 422 non_finite naming `name` and the index if any element is
 * NaN or infinite (a finite input can still overflow float32). */
int array_check_finite(const array_view *a, const char *name, json_error *err);

/* Append `,"name":<number>`, a float32 scalar result in shortest text. */
void json_write_float_field(strbuf *sb, const char *name, double value);

/* The array's text alone, written by the OpenMP team when big. */
void array_write_value(strbuf *sb, const array_view *a, bool base64);

/* `"name":<array>`, and `,"name_shape":[...]` after it for base64: an
 * array written whole (answers that may be large go through api/answer.c,
 * which streams them). */
void array_write(strbuf *sb, const char *name, const array_view *a, bool base64);

/* Rows of the array's text: the product of all but the last dimension (1
 * for a 1-D array). */
size_t array_rows(const array_view *a);

/* An upper bound of the bytes array_write_value() gives for the array alone. */
size_t array_text_bound(const array_view *a, bool base64);

/* The array's text for rows [r0, r1), without its name: writing
 * consecutive ranges from 0 to array_rows(a) gives, byte for byte, the
 * array array_write_value() writes (so an answer can be sent while it is
 * written). For base64, r0 and r1 are multiples of 3 but for the last r1;
 * the quotes come with the first and the last range. A 1-D array is one
 * row. A range of 2^14 values or more is written by up to `team` OpenMP
 * threads (1: the calling thread alone); the bytes are the same. */
void array_write_rows(strbuf *sb, const array_view *a, bool base64, size_t r0, size_t r1, int team);

/* array_write_rows() with row r0's data at `first` (rows a->row_stride
 * apart): for rows made just before they are written (a->data unused). */
void array_write_rows_at(strbuf *sb, const array_view *a, bool base64, size_t r0, size_t r1,
                         const float *first, int team);

#endif /* ARRAY_WRITER_H */

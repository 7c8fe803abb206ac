/*
 * tensor.h - float32 and integer arrays decoded from a request, either
 * nested JSON arrays or base64 little-endian float32 with a shape.
 */
#ifndef TENSOR_H
#define TENSOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json_error.h"
#include "json/json_doc.h"

#define TENSOR_MAX_NDIM JSON_ARRAY_MAX_NDIM
#define TENSOR_MAX_ELEMENTS JSON_ARRAY_MAX_ELEMENTS

/* A dense row-major float32 array. data is owned (free with tensor_free). */
typedef struct tensor {
    float *data;
    size_t ndim;
    size_t dim[TENSOR_MAX_NDIM];
} tensor;

size_t tensor_count(const tensor *t);
void tensor_free(tensor *t);

/* A list of positive integers (a "shape" field) with min..max entries.
 * Not a list of integers -> 400; wrong length or an entry < 1 -> 422.
 * doc is the document v belongs to (NULL for a plain jansson value): every
 * reader below reads its numeric arrays from their text. */
int shape_from_json(const json_doc *doc, const json_t *v, const char *field, size_t min_ndim,
                    size_t max_ndim, size_t *ndim, size_t *dim, json_error *err);

/* Decode a numeric array field.
 *   value       nested JSON numbers or a base64 string
 *   field       its JSON path, for messages
 *   shape       the sibling shape value (may be NULL); required for base64,
 *               and checked against a JSON array when given
 *   shape_field the sibling's path
 *   min_ndim..max_ndim  accepted ranks
 * Errors: not an array or string, non-numbers, bad base64 -> 400; ragged,
 * wrong rank, empty dimension, shape mismatch -> 422 invalid_shape;
 * NaN/Inf or float32 overflow -> 422 non_finite. Each number is rounded
 * once, from its text, to float32. On success *out owns new data (moved
 * from the doc when the scanner parsed it already: the doc then no longer
 * holds it); on failure *out is empty. */
int tensor_from_json(const json_doc *doc, const json_t *value, const char *field,
                     const json_t *shape, const char *shape_field, size_t min_ndim, size_t max_ndim,
                     tensor *out, json_error *err);

/* A dense row-major int64 array (positions, token ids). data owned. */
typedef struct int_array {
    int64_t *data;
    size_t ndim;
    size_t dim[2];
} int_array;

void int_array_free(int_array *a);

/* Decode a 1-D or 2-D array of integers; each must lie in [lo, hi]:
 * below lo -> 422 out_of_range, above hi -> 422 `above_kind`, naming the
 * element (an integer past int64 counts as above hi). Non-integers -> 400,
 * ragged or empty -> 422 invalid_shape. */
int int_array_from_json(const json_doc *doc, const json_t *value, const char *field, int64_t lo,
                        int64_t hi, json_error_kind above_kind, int_array *out, json_error *err);

/* A 1-D list of numbers read in double (settings such as rope factors),
 * each > 0 when `positive`: not a list of numbers -> 400, empty ->
 * 422 invalid_shape, past double's range -> 422 non_finite, <= 0 -> 422
 * out_of_range. *out is new (caller frees), *len its entries. */
int double_list_from_json(const json_doc *doc, const json_t *value, const char *field,
                          bool positive, double **out, size_t *len, json_error *err);

/* *out = a*b: 0, or -1 (and *out untouched) when the product overflows.
 * The one overflow-checked multiply above lib/ (which uses the same
 * compiler builtin directly, with the same nonzero-on-overflow sense). */
int mul_size(size_t a, size_t b, size_t *out);

#endif /* TENSOR_H */

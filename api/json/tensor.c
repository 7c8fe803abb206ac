/*
 * tensor.c - numeric arrays from JSON or base64 (see tensor.h).
 */
#include "json/tensor.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/base64.h"
#include "json/fast_json.h"
#include "json/json_fields.h"

int mul_size(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return -1;
    *out = a * b;
    return 0;
}

size_t tensor_count(const tensor *t)
{
    size_t n = 1;
    for (size_t i = 0; i < t->ndim; i++)
        n *= t->dim[i];
    return t->ndim ? n : 0;
}

void tensor_free(tensor *t)
{
    if (!t)
        return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

void int_array_free(int_array *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

static void shape_text(const size_t *dim, size_t ndim, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < ndim && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%zu", i ? ", " : "", dim[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

int shape_from_json(const json_t *v, const char *field, size_t min_ndim,
                    size_t max_ndim, size_t *ndim, size_t *dim,
                    api_error *err)
{
    size_t i;
    const json_t *item;

    if (!json_is_array(v))
        return api_fail(err, API_E_INVALID_REQUEST, field, "%s must be a list of integers", field);
    json_array_foreach(v, i, item) {
        if (!json_is_integer(item))
            return api_fail(err, API_E_INVALID_REQUEST, field, "%s must be a list of integers", field);
    }
    size_t n = json_array_size(v);
    if (n < min_ndim || n > max_ndim) {
        if (min_ndim == 2 && max_ndim == 3)
            return api_fail(err, API_E_INVALID_SHAPE, field,
                            "%s must be [tokens, d] or [batch, tokens, d], got %zu entries", field, n);
        return api_fail(err, API_E_INVALID_SHAPE, field, "%s must have %zu to %zu entries, got %zu",
                        field, min_ndim, max_ndim, n);
    }
    json_array_foreach(v, i, item) {
        json_int_t x = json_integer_value(item);
        if (x < 1)
            return api_fail(err, API_E_INVALID_SHAPE, field, "%s entries must be >= 1, got %" PRId64,
                            field, (int64_t)x);
        if ((uint64_t)x > SIZE_MAX / 8)
            return api_fail(err, API_E_TOO_LARGE, field, "%s entry %" PRId64 " is too large", field,
                            (int64_t)x);
        dim[i] = (size_t)x;
    }
    *ndim = n;
    return 0;
}

/* ---- base64 ---------------------------------------------------------- */

/* Float32 values given flat (decoded base64), shaped by the sibling shape
 * field. `bytes` may be NULL, meaning "decode `value` now"; otherwise it is
 * the already decoded data of `value` (fast_json.c), borrowed. */
static int tensor_from_flat(const json_t *value, const uint8_t *bytes, size_t bytes_len,
                            const char *field, const json_t *shape, const char *shape_field,
                            size_t min_ndim, size_t max_ndim, tensor *out, api_error *err)
{
    size_t ndim, dim[TENSOR_MAX_NDIM], count = 1;
    uint8_t *decoded = NULL;
    const char *why = NULL;
    char want_text[96];

    if (!shape)
        return api_fail(err, API_E_INVALID_REQUEST, shape_field,
                        "%s is base64 and needs '%s'", field, shape_field);
    if (shape_from_json(shape, shape_field, min_ndim, max_ndim, &ndim, dim, err))
        return -1;
    for (size_t i = 0; i < ndim; i++)
        if (mul_size(count, dim[i], &count) || count > TENSOR_MAX_ELEMENTS)
            return api_fail(err, API_E_TOO_LARGE, shape_field, "%s is too large", shape_field);
    if (!bytes) {
        decoded = base64_decode(json_string_value(value), json_string_length(value), &bytes_len,
                                &why);
        if (!decoded) {
            if (!why)
                return api_fail(err, API_E_INTERNAL, NULL, "out of memory decoding %s", field);
            return api_fail(err, API_E_INVALID_REQUEST, field, "%s: invalid base64 (%s)", field,
                            why);
        }
    }
    if (bytes_len % 4 != 0) {
        free(decoded);
        return api_fail(err, API_E_INVALID_REQUEST, field,
                        "%s: invalid base64 (%zu bytes is not a whole number of float32)",
                        field, bytes_len);
    }
    if (bytes_len / 4 != count) {
        free(decoded);
        shape_text(dim, ndim, want_text, sizeof want_text);
        return api_fail(err, API_E_INVALID_SHAPE, field, "%s holds %zu float32 but %s %s needs %zu",
                        field, bytes_len / 4, shape_field, want_text, count);
    }
    if (decoded) {
        out->data = (float *)(void *)decoded; /* malloc'd: suitably aligned */
    } else {
        out->data = malloc(count ? count * sizeof(float) : 1);
        if (!out->data)
            return api_fail(err, API_E_INTERNAL, NULL, "out of memory decoding %s", field);
        memcpy(out->data, bytes, count * sizeof(float));
    }
    out->ndim = ndim;
    memcpy(out->dim, dim, sizeof dim);
    for (size_t i = 0; i < count; i++)
        if (!isfinite(out->data[i])) {
            char at[API_FIELD_MAX];
            size_t rest = i, used = (size_t)snprintf(at, sizeof at, "%s", field);
            size_t idx[TENSOR_MAX_NDIM];
            for (size_t k = ndim; k-- > 0;) {
                idx[k] = rest % dim[k];
                rest /= dim[k];
            }
            for (size_t k = 0; k < ndim && used < sizeof at; k++)
                used += (size_t)snprintf(at + used, sizeof at - used, "[%zu]", idx[k]);
            tensor_free(out);
            return api_fail(err, API_E_NON_FINITE, field, "%s is not a finite float32", at);
        }
    return 0;
}

/* ---- nested JSON arrays ---------------------------------------------- */

/* Shape of a nested array from its first elements. */
static int probe_shape(const json_t *v, const char *field, size_t max_ndim,
                       size_t *ndim, size_t *dim, api_error *err)
{
    size_t n = 0;
    while (json_is_array(v)) {
        if (n == max_ndim)
            return api_fail(err, API_E_INVALID_SHAPE, field,
                            "%s has more than %zu dimensions", field, max_ndim);
        dim[n++] = json_array_size(v);
        if (json_array_size(v) == 0)
            break;
        v = json_array_get(v, 0);
    }
    *ndim = n;
    return 0;
}

typedef struct fill_state {
    const char *field;
    size_t ndim;
    const size_t *dim;
    size_t idx[TENSOR_MAX_NDIM];
    float *out;
    int64_t *out_int;
    int64_t lo, hi;
    api_error_kind above_kind;
    size_t at;
    api_error *err;
} fill_state;

static void index_path(const fill_state *st, size_t depth, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "%s", st->field);
    for (size_t k = 0; k < depth && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "[%zu]", st->idx[k]);
}

static int fill_leaf(fill_state *st, const json_t *v)
{
    char at[API_FIELD_MAX];

    if (st->out_int) {
        if (!json_is_integer(v)) {
            index_path(st, st->ndim, at, sizeof at);
            return api_fail(st->err, API_E_INVALID_REQUEST, at, "%s must be an integer", at);
        }
        int64_t x = (int64_t)json_integer_value(v);
        if (x < st->lo || x > st->hi) {
            index_path(st, st->ndim, at, sizeof at);
            if (x < st->lo)
                return api_fail(st->err, API_E_OUT_OF_RANGE, at,
                                "%s = %" PRId64 " is out of range (must be >= %" PRId64 ")",
                                at, x, st->lo);
            return api_fail(st->err, st->above_kind, at,
                            "%s = %" PRId64 " is out of range (must be <= %" PRId64 ")", at, x,
                            st->hi);
        }
        st->out_int[st->at++] = x;
        return 0;
    }
    if (!json_is_number(v)) {
        index_path(st, st->ndim, at, sizeof at);
        return api_fail(st->err, API_E_INVALID_REQUEST, at, "%s must be a number", at);
    }
    float x = (float)json_number_value(v);
    if (!isfinite(x)) {
        index_path(st, st->ndim, at, sizeof at);
        return api_fail(st->err, API_E_NON_FINITE, at, "%s is not a finite float32", at);
    }
    st->out[st->at++] = x;
    return 0;
}

static int fill(fill_state *st, const json_t *v, size_t depth)
{
    char at[API_FIELD_MAX];

    if (depth == st->ndim)
        return fill_leaf(st, v);
    if (!json_is_array(v) || json_array_size(v) != st->dim[depth]) {
        index_path(st, depth, at, sizeof at);
        if (!json_is_array(v) && !json_is_number(v))
            return api_fail(st->err, API_E_INVALID_REQUEST, at,
                            "%s must be an array of numbers", at);
        return api_fail(st->err, API_E_INVALID_SHAPE, at, "%s is ragged: expected %zu entries",
                        at, st->dim[depth]);
    }
    for (size_t i = 0; i < st->dim[depth]; i++) {
        st->idx[depth] = i;
        if (fill(st, json_array_get(v, i), depth + 1))
            return -1;
    }
    return 0;
}

static int check_rank(const char *field, size_t ndim, const size_t *dim,
                      size_t min_ndim, size_t max_ndim, api_error *err)
{
    char have[96];

    shape_text(dim, ndim, have, sizeof have);
    for (size_t i = 0; i < ndim; i++)
        if (dim[i] == 0)
            return api_fail(err, API_E_INVALID_SHAPE, field, "%s has an empty dimension: shape %s",
                            field, have);
    if (ndim < min_ndim || ndim > max_ndim) {
        if (min_ndim == max_ndim)
            return api_fail(err, API_E_INVALID_SHAPE, field, "%s must be %zu-D, got shape %s",
                            field, min_ndim, have);
        return api_fail(err, API_E_INVALID_SHAPE, field, "%s must be %zu-D to %zu-D, got shape %s",
                        field, min_ndim, max_ndim, have);
    }
    return 0;
}

int tensor_from_json(const json_t *value, const char *field,
                     const json_t *shape, const char *shape_field,
                     size_t min_ndim, size_t max_ndim, tensor *out,
                     api_error *err)
{
    size_t ndim = 0, dim[TENSOR_MAX_NDIM] = {0}, count = 1;
    fill_state st;

    memset(out, 0, sizeof *out);
    size_t fast_count = 0;
    const float *parsed =
        json_is_string(value) ? fast_json_tensor(value, &ndim, dim, &fast_count) : NULL;
    if (parsed && ndim == 0) /* base64 the fast path decoded already */
        return tensor_from_flat(value, (const uint8_t *)(const void *)parsed,
                                fast_count * sizeof(float), field, shape, shape_field, min_ndim,
                                max_ndim, out, err);
    if (json_is_string(value) && !parsed)
        return tensor_from_flat(value, NULL, 0, field, shape, shape_field, min_ndim, max_ndim,
                                out, err);
    if (!parsed && !json_is_array(value))
        return api_fail(err, API_E_INVALID_REQUEST, field,
                        "%s must be an array of numbers or a base64 string", field);
    if ((!parsed && probe_shape(value, field, max_ndim, &ndim, dim, err)) ||
        check_rank(field, ndim, dim, min_ndim, max_ndim, err))
        return -1;
    if (shape) {
        size_t sn, sd[TENSOR_MAX_NDIM];
        char have[96], said[96];
        if (shape_from_json(shape, shape_field, min_ndim, max_ndim, &sn, sd, err))
            return -1;
        if (sn != ndim || memcmp(sd, dim, ndim * sizeof *dim) != 0) {
            shape_text(dim, ndim, have, sizeof have);
            shape_text(sd, sn, said, sizeof said);
            return api_fail(err, API_E_INVALID_SHAPE, field, "%s has shape %s but '%s' says %s",
                            field, have, shape_field, said);
        }
    }
    for (size_t i = 0; i < ndim; i++)
        if (mul_size(count, dim[i], &count) || count > TENSOR_MAX_ELEMENTS)
            return api_fail(err, API_E_TOO_LARGE, field, "%s has more than %zu elements", field,
                            (size_t)TENSOR_MAX_ELEMENTS);
    float *data = malloc(count * sizeof *data);
    if (!data)
        return api_fail(err, API_E_INTERNAL, NULL, "out of memory decoding %s", field);
    if (parsed) { /* already float32 and finite: the fast path of fast_json.c */
        memcpy(data, parsed, count * sizeof *data);
        out->data = data;
        out->ndim = ndim;
        memcpy(out->dim, dim, sizeof dim);
        return 0;
    }
    st = (fill_state){.field = field, .ndim = ndim, .dim = dim, .out = data, .err = err};
    if (fill(&st, value, 0)) {
        free(data);
        return -1;
    }
    out->data = data;
    out->ndim = ndim;
    memcpy(out->dim, dim, sizeof dim);
    return 0;
}

int int_array_from_json(const json_t *value, const char *field, int64_t lo,
                        int64_t hi, api_error_kind above_kind, int_array *out,
                        api_error *err)
{
    size_t ndim = 0, dim[TENSOR_MAX_NDIM] = {0}, count = 1;
    fill_state st;

    memset(out, 0, sizeof *out);
    if (!json_is_array(value))
        return api_fail(err, API_E_INVALID_REQUEST, field, "%s must be an array of integers", field);
    if (probe_shape(value, field, 2, &ndim, dim, err) ||
        check_rank(field, ndim, dim, 1, 2, err))
        return -1;
    for (size_t i = 0; i < ndim; i++)
        if (mul_size(count, dim[i], &count) || count > TENSOR_MAX_ELEMENTS)
            return api_fail(err, API_E_TOO_LARGE, field, "%s has more than %zu elements", field,
                            (size_t)TENSOR_MAX_ELEMENTS);
    int64_t *data = malloc(count * sizeof *data);
    if (!data)
        return api_fail(err, API_E_INTERNAL, NULL, "out of memory decoding %s", field);
    st = (fill_state){.field = field, .ndim = ndim, .dim = dim, .out_int = data,
                      .lo = lo, .hi = hi, .above_kind = above_kind, .err = err};
    if (fill(&st, value, 0)) {
        free(data);
        return -1;
    }
    out->data = data;
    out->ndim = ndim;
    memcpy(out->dim, dim, ndim * sizeof *dim);
    return 0;
}

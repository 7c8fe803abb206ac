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
#include "json/finite.h"
#include "json/json_fields.h"

int mul_size(size_t a, size_t b, size_t *out)
{
    size_t product;

    if (__builtin_mul_overflow(a, b, &product))
        return -1;
    *out = product;
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

/* shape_from_json() of a numeric array's text: the same checks in the
 * same order as for jansson integers. */
static int shape_from_span(const json_doc *doc, const json_span *span, const char *field,
                           size_t min_ndim, size_t max_ndim, size_t *ndim, size_t *dim,
                           json_error *err)
{
    size_t n = span->dim[0], bad = 0;

    if (span->ndim != 1)
        return json_fail(err, JSON_E_INVALID, field, "%s must be a list of integers", field);
    int64_t *values = malloc(n * sizeof *values);
    if (!values)
        return json_fail_oom(err);
    json_read_status st = json_span_int64s(span, doc->text, values, &bad);
    int rc = -1;
    if (st == JSON_READ_NOT_INTEGER) {
        json_fail(err, JSON_E_INVALID, field, "%s must be a list of integers", field);
        goto out;
    }
    if (n < min_ndim || n > max_ndim) {
        if (min_ndim == 2 && max_ndim == 3)
            json_fail(err, JSON_E_SHAPE, field,
                      "%s must be [tokens, d] or [batch, tokens, d], got %zu entries", field, n);
        else
            json_fail(err, JSON_E_SHAPE, field, "%s must have %zu to %zu entries, got %zu", field,
                      min_ndim, max_ndim, n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (st == JSON_READ_BEYOND && i == bad) {
            json_fail(err, JSON_E_TOO_LARGE, field, "%s entry %zu is too large", field, i);
            goto out;
        }
        if (values[i] < 1) {
            json_fail(err, JSON_E_SHAPE, field, "%s entries must be >= 1, got %" PRId64, field,
                      values[i]);
            goto out;
        }
        if ((uint64_t)values[i] > SIZE_MAX / 8) {
            json_fail(err, JSON_E_TOO_LARGE, field, "%s entry %" PRId64 " is too large", field,
                      values[i]);
            goto out;
        }
        dim[i] = (size_t)values[i];
    }
    *ndim = n;
    rc = 0;
out:
    free(values);
    return rc;
}

int shape_from_json(const json_doc *doc, const json_t *v, const char *field, size_t min_ndim,
                    size_t max_ndim, size_t *ndim, size_t *dim, json_error *err)
{
    size_t i;
    const json_t *item;
    const json_span *span = json_doc_array(doc, v);

    if (span)
        return shape_from_span(doc, span, field, min_ndim, max_ndim, ndim, dim, err);
    if (!json_is_array(v))
        return json_fail(err, JSON_E_INVALID, field, "%s must be a list of integers", field);
    json_array_foreach (v, i, item) {
        if (!json_is_integer(item))
            return json_fail(err, JSON_E_INVALID, field, "%s must be a list of integers", field);
    }
    size_t n = json_array_size(v);
    if (n < min_ndim || n > max_ndim) {
        if (min_ndim == 2 && max_ndim == 3)
            return json_fail(err, JSON_E_SHAPE, field,
                             "%s must be [tokens, d] or [batch, tokens, d], got %zu entries", field,
                             n);
        return json_fail(err, JSON_E_SHAPE, field, "%s must have %zu to %zu entries, got %zu",
                         field, min_ndim, max_ndim, n);
    }
    json_array_foreach (v, i, item) {
        json_int_t x = json_integer_value(item);
        if (x < 1)
            return json_fail(err, JSON_E_SHAPE, field, "%s entries must be >= 1, got %" PRId64,
                             field, (int64_t)x);
        if ((uint64_t)x > SIZE_MAX / 8)
            return json_fail(err, JSON_E_TOO_LARGE, field, "%s entry %" PRId64 " is too large",
                             field, (int64_t)x);
        dim[i] = (size_t)x;
    }
    *ndim = n;
    return 0;
}

/* field[i0][i1]... for the flat index i of an array of shape dim. */
static void flat_index_path(const char *field, size_t i, size_t ndim, const size_t *dim, char *at,
                            size_t cap)
{
    size_t rest = i, used = (size_t)snprintf(at, cap, "%s", field);
    size_t idx[TENSOR_MAX_NDIM];

    for (size_t k = ndim; k-- > 0;) {
        idx[k] = rest % dim[k];
        rest /= dim[k];
    }
    for (size_t k = 0; k < ndim && used < cap; k++)
        used += (size_t)snprintf(at + used, cap - used, "[%zu]", idx[k]);
}

/* ---- base64 ---------------------------------------------------------- */

/* The float32 values of a base64 text into *out, shaped dim[ndim]
 * (count values). */
static int flat_values(const char *text, size_t text_len, const char *field, size_t ndim,
                       const size_t *dim, size_t count, const char *shape_field, tensor *out,
                       json_error *err)
{
    size_t bytes_len = 0;
    const char *why = NULL;
    char want_text[96];
    uint8_t *decoded = base64_decode(text, text_len, &bytes_len, &why);

    if (!decoded) {
        if (!why)
            return json_fail_oom(err);
        return json_fail(err, JSON_E_INVALID, field, "%s: invalid base64 (%s)", field, why);
    }
    if (bytes_len % 4 != 0) {
        free(decoded);
        return json_fail(err, JSON_E_INVALID, field,
                         "%s: invalid base64 (%zu bytes is not a whole number of float32)", field,
                         bytes_len);
    }
    if (bytes_len / 4 != count) {
        free(decoded);
        shape_text(dim, ndim, want_text, sizeof want_text);
        return json_fail(err, JSON_E_SHAPE, field, "%s holds %zu float32 but %s %s needs %zu",
                         field, bytes_len / 4, shape_field, want_text, count);
    }
    out->data = (float *)(void *)decoded; /* malloc'd: suitably aligned */
    out->ndim = ndim;
    memcpy(out->dim, dim, ndim * sizeof *dim);
    size_t bad = floats_first_non_finite(out->data, count);
    if (bad < count) {
        char at[JSON_FIELD_MAX];
        flat_index_path(field, bad, ndim, dim, at, sizeof at);
        tensor_free(out);
        return json_fail(err, JSON_E_NON_FINITE, field, "%s is not a finite float32", at);
    }
    return 0;
}

/* Float32 values given flat (a base64 string), shaped by the sibling shape
 * field. */
static int tensor_from_flat(const json_doc *doc, const json_t *value, const char *field,
                            const json_t *shape, const char *shape_field, size_t min_ndim,
                            size_t max_ndim, tensor *out, json_error *err)
{
    size_t ndim, dim[TENSOR_MAX_NDIM], count = 1;

    if (!shape)
        return json_fail(err, JSON_E_INVALID, shape_field, "%s is base64 and needs '%s'", field,
                         shape_field);
    if (shape_from_json(doc, shape, shape_field, min_ndim, max_ndim, &ndim, dim, err))
        return -1;
    for (size_t i = 0; i < ndim; i++)
        if (mul_size(count, dim[i], &count) || count > TENSOR_MAX_ELEMENTS)
            return json_fail(err, JSON_E_TOO_LARGE, shape_field, "%s is too large", shape_field);
    /* a long string straight from the body: jansson never copied it */
    size_t text_len = 0;
    const char *text = json_doc_string_text(doc, value, &text_len);
    /* Charged before it is decoded, as a numeric array is: the size
     * follows from the text's length and padding. A length that is no
     * base64's is base64_decode's to report. */
    size_t want = base64_decoded_len(text, text_len);
    if (want != SIZE_MAX && !json_charge_take(&doc->charge, want))
        return json_fail(err, JSON_E_REFUSED, field,
                         "%s: its decoded values do not fit the memory budget", field);
    int rc = flat_values(text, text_len, field, ndim, dim, count, shape_field, out, err);
    if (rc && want != SIZE_MAX)
        json_charge_give(&doc->charge, want); /* nothing decoded is kept */
    return rc;
}

/* ---- nested JSON arrays ---------------------------------------------- */

/* Shape of a nested array from its first elements. */
static int probe_shape(const json_doc *doc, const json_t *v, const char *field, size_t max_ndim,
                       size_t *ndim, size_t *dim, json_error *err)
{
    size_t n = 0;
    while (json_is_array(v)) {
        const json_span *span = json_doc_array(doc, v);
        if (span) { /* a numeric array the scanner took: its shape is known */
            if (n + span->ndim > max_ndim)
                return json_fail(err, JSON_E_SHAPE, field, "%s has more than %zu dimensions", field,
                                 max_ndim);
            memcpy(dim + n, span->dim, span->ndim * sizeof *dim);
            n += span->ndim;
            break;
        }
        if (n == max_ndim)
            return json_fail(err, JSON_E_SHAPE, field, "%s has more than %zu dimensions", field,
                             max_ndim);
        dim[n++] = json_array_size(v);
        if (json_array_size(v) == 0)
            break;
        v = json_array_get(v, 0);
    }
    *ndim = n;
    return 0;
}

typedef struct fill_state {
    const json_doc *doc;
    const char *field;
    size_t ndim;
    const size_t *dim;
    size_t idx[TENSOR_MAX_NDIM];
    float *out;
    int64_t *out_int;
    int64_t lo, hi;
    json_error_kind above_kind;
    size_t at;
    json_error *err;
} fill_state;

static void index_path(const fill_state *st, size_t depth, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "%s", st->field);
    for (size_t k = 0; k < depth && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "[%zu]", st->idx[k]);
}

static int fill_leaf(fill_state *st, const json_t *v)
{
    char at[JSON_FIELD_MAX];

    if (st->out_int) {
        if (!json_is_integer(v)) {
            index_path(st, st->ndim, at, sizeof at);
            return json_fail(st->err, JSON_E_INVALID, at, "%s must be an integer", at);
        }
        int64_t x = (int64_t)json_integer_value(v);
        if (x < st->lo || x > st->hi) {
            index_path(st, st->ndim, at, sizeof at);
            if (x < st->lo)
                return json_fail(st->err, JSON_E_RANGE, at,
                                 "%s = %" PRId64 " is out of range (must be >= %" PRId64 ")", at, x,
                                 st->lo);
            return json_fail(st->err, st->above_kind, at,
                             "%s = %" PRId64 " is out of range (must be <= %" PRId64 ")", at, x,
                             st->hi);
        }
        st->out_int[st->at++] = x;
        return 0;
    }
    if (!json_is_number(v)) {
        index_path(st, st->ndim, at, sizeof at);
        return json_fail(st->err, JSON_E_INVALID, at, "%s must be a number", at);
    }
    float x = (float)json_number_value(v);
    if (!isfinite(x)) {
        index_path(st, st->ndim, at, sizeof at);
        return json_fail(st->err, JSON_E_NON_FINITE, at, "%s is not a finite float32", at);
    }
    st->out[st->at++] = x;
    return 0;
}

static int ints_from_span(const json_doc *doc, const json_span *span, const char *field, int64_t lo,
                          int64_t hi, json_error_kind above_kind, int64_t *data, json_error *err);

/* st->field plus the indices down to depth, then `zeros` levels of [0]. */
static void first_path(const fill_state *st, size_t depth, size_t zeros, char *at, size_t cap)
{
    index_path(st, depth, at, cap);
    for (size_t k = 0; k < zeros; k++) {
        size_t used = strlen(at);
        snprintf(at + used, cap - used, "[0]");
    }
}

/* A numeric array the scanner took, met inside a ragged or mixed jansson
 * array at `depth`: the same checks, in the same order, as the walk of the
 * array it was. */
static int fill_span(fill_state *st, json_span *span, size_t depth)
{
    char at[JSON_FIELD_MAX], prefix[JSON_FIELD_MAX];
    size_t left = st->ndim - depth, bad = 0;

    for (size_t k = 0; k < span->ndim && k < left; k++)
        if (span->dim[k] != st->dim[depth + k]) {
            first_path(st, depth, k, at, sizeof at);
            return json_fail(st->err, JSON_E_SHAPE, at, "%s is ragged: expected %zu entries", at,
                             st->dim[depth + k]);
        }
    if (span->ndim < left) { /* numbers where arrays belong */
        first_path(st, depth, span->ndim, at, sizeof at);
        return json_fail(st->err, JSON_E_SHAPE, at, "%s is ragged: expected %zu entries", at,
                         st->dim[depth + span->ndim]);
    }
    if (span->ndim > left) { /* arrays where numbers belong */
        first_path(st, depth, left, at, sizeof at);
        return json_fail(st->err, JSON_E_INVALID, at, "%s must be %s", at,
                         st->out_int ? "an integer" : "a number");
    }
    index_path(st, depth, prefix, sizeof prefix);
    if (st->out_int) {
        if (ints_from_span(st->doc, span, prefix, st->lo, st->hi, st->above_kind,
                           st->out_int + st->at, st->err))
            return -1;
        st->at += span->count;
        return 0;
    }
    float *values = NULL;
    json_read_status rs = json_span_take_floats(span, st->doc->text, &values, &bad);
    if (rs == JSON_READ_NO_MEMORY)
        return json_fail_oom(st->err);
    if (rs != JSON_READ_OK) {
        flat_index_path(prefix, bad, span->ndim, span->dim, at, sizeof at);
        return json_fail(st->err, JSON_E_NON_FINITE, at, "%s is not a finite float32", at);
    }
    memcpy(st->out + st->at, values, span->count * sizeof *values);
    st->at += span->count;
    free(values);
    return 0;
}

static int fill(fill_state *st, const json_t *v, size_t depth)
{
    char at[JSON_FIELD_MAX];
    json_span *span;

    if (depth == st->ndim)
        return fill_leaf(st, v);
    if ((span = json_doc_array(st->doc, v)) != NULL)
        return fill_span(st, span, depth);
    if (!json_is_array(v) || json_array_size(v) != st->dim[depth]) {
        index_path(st, depth, at, sizeof at);
        if (!json_is_array(v) && !json_is_number(v))
            return json_fail(st->err, JSON_E_INVALID, at, "%s must be an array of numbers", at);
        return json_fail(st->err, JSON_E_SHAPE, at, "%s is ragged: expected %zu entries", at,
                         st->dim[depth]);
    }
    for (size_t i = 0; i < st->dim[depth]; i++) {
        st->idx[depth] = i;
        if (fill(st, json_array_get(v, i), depth + 1))
            return -1;
    }
    return 0;
}

static int check_rank(const char *field, size_t ndim, const size_t *dim, size_t min_ndim,
                      size_t max_ndim, json_error *err)
{
    char have[96];

    shape_text(dim, ndim, have, sizeof have);
    for (size_t i = 0; i < ndim; i++)
        if (dim[i] == 0)
            return json_fail(err, JSON_E_SHAPE, field, "%s has an empty dimension: shape %s", field,
                             have);
    if (ndim < min_ndim || ndim > max_ndim) {
        if (min_ndim == max_ndim)
            return json_fail(err, JSON_E_SHAPE, field, "%s must be %zu-D, got shape %s", field,
                             min_ndim, have);
        return json_fail(err, JSON_E_SHAPE, field, "%s must be %zu-D to %zu-D, got shape %s", field,
                         min_ndim, max_ndim, have);
    }
    return 0;
}

/* The sibling shape field, when given, must say what the array is. */
static int check_sibling_shape(const json_doc *doc, const char *field, const json_t *shape,
                               const char *shape_field, size_t min_ndim, size_t max_ndim,
                               size_t ndim, const size_t *dim, json_error *err)
{
    size_t sn, sd[TENSOR_MAX_NDIM];
    char have[96], said[96];

    if (!shape)
        return 0;
    if (shape_from_json(doc, shape, shape_field, min_ndim, max_ndim, &sn, sd, err))
        return -1;
    if (sn != ndim || memcmp(sd, dim, ndim * sizeof *dim) != 0) {
        shape_text(dim, ndim, have, sizeof have);
        shape_text(sd, sn, said, sizeof said);
        return json_fail(err, JSON_E_SHAPE, field, "%s has shape %s but '%s' says %s", field, have,
                         shape_field, said);
    }
    return 0;
}

static int count_within(const char *field, size_t ndim, const size_t *dim, size_t *count,
                        json_error *err)
{
    *count = 1;
    for (size_t i = 0; i < ndim; i++)
        if (mul_size(*count, dim[i], count) || *count > TENSOR_MAX_ELEMENTS)
            return json_fail(err, JSON_E_TOO_LARGE, field, "%s has more than %zu elements", field,
                             (size_t)TENSOR_MAX_ELEMENTS);
    return 0;
}

int tensor_from_json(const json_doc *doc, const json_t *value, const char *field,
                     const json_t *shape, const char *shape_field, size_t min_ndim, size_t max_ndim,
                     tensor *out, json_error *err)
{
    size_t ndim = 0, dim[TENSOR_MAX_NDIM] = {0}, count = 1, bad = 0;
    json_span *span = json_doc_array(doc, value);
    fill_state st;

    memset(out, 0, sizeof *out);
    if (json_is_string(value))
        return tensor_from_flat(doc, value, field, shape, shape_field, min_ndim, max_ndim, out,
                                err);
    if (!json_is_array(value))
        return json_fail(err, JSON_E_INVALID, field,
                         "%s must be an array of numbers or a base64 string", field);
    if (span) {
        ndim = span->ndim;
        memcpy(dim, span->dim, sizeof dim);
        if (ndim > max_ndim)
            return json_fail(err, JSON_E_SHAPE, field, "%s has more than %zu dimensions", field,
                             max_ndim);
    } else if (probe_shape(doc, value, field, max_ndim, &ndim, dim, err)) {
        return -1;
    }
    if (check_rank(field, ndim, dim, min_ndim, max_ndim, err) ||
        check_sibling_shape(doc, field, shape, shape_field, min_ndim, max_ndim, ndim, dim, err) ||
        count_within(field, ndim, dim, &count, err))
        return -1;
    if (span) { /* numbers from their text, rounded once; moved when parsed already */
        json_read_status rs = json_span_take_floats(span, doc->text, &out->data, &bad);
        if (rs == JSON_READ_NO_MEMORY)
            return json_fail_oom(err);
        if (rs != JSON_READ_OK) {
            char at[JSON_FIELD_MAX];
            flat_index_path(field, bad, ndim, dim, at, sizeof at);
            return json_fail(err, JSON_E_NON_FINITE, at, "%s is not a finite float32", at);
        }
        out->ndim = ndim;
        memcpy(out->dim, dim, sizeof dim);
        return 0;
    }
    /* An ordinary jansson array is never a clean numeric one (the scanner
     * took those): the walk below finds what is wrong with it. */
    float *data = malloc(count * sizeof *data);
    if (!data)
        return json_fail_oom(err);
    st =
        (fill_state){.doc = doc, .field = field, .ndim = ndim, .dim = dim, .out = data, .err = err};
    if (fill(&st, value, 0)) {
        free(data);
        return -1;
    }
    out->data = data;
    out->ndim = ndim;
    memcpy(out->dim, dim, sizeof dim);
    return 0;
}

/* int_array_from_json() of a numeric array's text: the first offending
 * element in document order decides, as in the jansson walk. */
static int ints_from_span(const json_doc *doc, const json_span *span, const char *field, int64_t lo,
                          int64_t hi, json_error_kind above_kind, int64_t *data, json_error *err)
{
    size_t bad = span->count;
    json_read_status rs = json_span_int64s(span, doc->text, data, &bad);
    char at[JSON_FIELD_MAX];

    if (rs == JSON_READ_OK)
        bad = span->count;
    for (size_t i = 0; i <= bad && i < span->count; i++) {
        bool parse_error = i == bad;
        if (!parse_error && data[i] >= lo && data[i] <= hi)
            continue;
        flat_index_path(field, i, span->ndim, span->dim, at, sizeof at);
        if (parse_error && rs == JSON_READ_NOT_INTEGER)
            return json_fail(err, JSON_E_INVALID, at, "%s must be an integer", at);
        if (parse_error)
            return json_fail(err, above_kind, at, "%s is out of range (must be <= %" PRId64 ")", at,
                             hi);
        if (data[i] < lo)
            return json_fail(err, JSON_E_RANGE, at,
                             "%s = %" PRId64 " is out of range (must be >= %" PRId64 ")", at,
                             data[i], lo);
        return json_fail(err, above_kind, at,
                         "%s = %" PRId64 " is out of range (must be <= %" PRId64 ")", at, data[i],
                         hi);
    }
    return 0;
}

int int_array_from_json(const json_doc *doc, const json_t *value, const char *field, int64_t lo,
                        int64_t hi, json_error_kind above_kind, int_array *out, json_error *err)
{
    size_t ndim = 0, dim[TENSOR_MAX_NDIM] = {0}, count = 1;
    json_span *span = json_doc_array(doc, value);
    fill_state st;

    memset(out, 0, sizeof *out);
    if (!json_is_array(value))
        return json_fail(err, JSON_E_INVALID, field, "%s must be an array of integers", field);
    if (span) {
        ndim = span->ndim;
        memcpy(dim, span->dim, sizeof dim);
        if (ndim > 2)
            return json_fail(err, JSON_E_SHAPE, field, "%s has more than %d dimensions", field, 2);
    } else if (probe_shape(doc, value, field, 2, &ndim, dim, err)) {
        return -1;
    }
    if (check_rank(field, ndim, dim, 1, 2, err) || count_within(field, ndim, dim, &count, err))
        return -1;
    if (span) { /* read as integers: the float32 the scanner parsed are of no use */
        free(span->floats);
        span->floats = NULL;
    }
    int64_t *data = malloc(count * sizeof *data);
    if (!data)
        return json_fail_oom(err);
    if (span) {
        if (ints_from_span(doc, span, field, lo, hi, above_kind, data, err)) {
            free(data);
            return -1;
        }
    } else {
        st = (fill_state){.doc = doc,
                          .field = field,
                          .ndim = ndim,
                          .dim = dim,
                          .out_int = data,
                          .lo = lo,
                          .hi = hi,
                          .above_kind = above_kind,
                          .err = err};
        if (fill(&st, value, 0)) {
            free(data);
            return -1;
        }
    }
    out->data = data;
    out->ndim = ndim;
    memcpy(out->dim, dim, ndim * sizeof *dim);
    return 0;
}

int double_list_from_json(const json_doc *doc, const json_t *value, const char *field,
                          bool positive, double **out, size_t *len, json_error *err)
{
    const json_span *span = json_doc_array(doc, value);
    size_t bad = 0;

    *out = NULL;
    *len = 0;
    if (!span && json_is_array(value) && json_array_size(value) > 0) {
        /* a plain jansson list (a config file): its numbers are doubles */
        size_t n = json_array_size(value), i;
        const json_t *item;
        bool numbers = true;
        json_array_foreach (value, i, item)
            numbers = numbers && json_is_number(item);
        if (numbers) {
            double *values = malloc(n * sizeof *values);
            if (!values)
                return json_fail_oom(err);
            for (i = 0; i < n; i++) {
                values[i] = json_number_value(json_array_get(value, i));
                if (positive && !(values[i] > 0)) {
                    free(values);
                    return json_fail(err, JSON_E_RANGE, field, "%s entries must be > 0", field);
                }
            }
            *out = values;
            *len = n;
            return 0;
        }
    }
    if (!span) { /* not a clean list of numbers: the float32 reader says why */
        tensor t;
        if (tensor_from_json(doc, value, field, NULL, field, 1, 1, &t, err))
            return -1;
        tensor_free(&t);
        return json_fail(err, JSON_E_INVALID, field, "%s must be a list of numbers", field);
    }
    if (check_rank(field, span->ndim, span->dim, 1, 1, err))
        return -1;
    double *values = malloc(span->count * sizeof *values);
    if (!values)
        return json_fail_oom(err);
    json_read_status rs = json_span_doubles(span, doc->text, values, &bad);
    if (rs != JSON_READ_OK) {
        free(values);
        if (rs == JSON_READ_NO_MEMORY)
            return json_fail_oom(err);
        char at[JSON_FIELD_MAX];
        snprintf(at, sizeof at, "%s[%zu]", field, bad);
        return json_fail(err, JSON_E_NON_FINITE, at, "%s is not finite", at);
    }
    for (size_t i = 0; positive && i < span->count; i++)
        if (!(values[i] > 0)) {
            free(values);
            return json_fail(err, JSON_E_RANGE, field, "%s entries must be > 0", field);
        }
    *out = values;
    *len = span->count;
    return 0;
}

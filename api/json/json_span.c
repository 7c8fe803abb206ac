/*
 * json_span.c - a numeric array's text read into the type the decoder asks
 * for: float32 (rounded once, by json_number_to_float), exact int64, or
 * double (strtod). See json_doc.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_span.h"
#include "json/json_number.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The next number of a span's text at *p: [*num, *p) afterwards. */
static bool next_number(const char **p, const char *end, const char **num)
{
    while (*p < end && (is_space(**p) || **p == '[' || **p == ']' || **p == ','))
        (*p)++;
    if (*p >= end)
        return false;
    *num = *p;
    while (*p < end && !is_space(**p) && **p != ',' && **p != ']')
        (*p)++;
    return true;
}

json_read_status json_span_take_floats(json_span *span, const char *text, float **out, size_t *bad)
{
    const char *p = text + span->start, *end = text + span->end, *num;

    if (span->floats) {
        *out = span->floats;
        span->floats = NULL;
        return JSON_READ_OK;
    }
    float *values = malloc(span->count * sizeof *values);
    if (!values)
        return JSON_READ_NO_MEMORY;
    for (size_t i = 0; i < span->count; i++) {
        if (!next_number(&p, end, &num) || json_number_to_float(num, p, &values[i]) != p ||
            !isfinite(values[i])) {
            free(values);
            *bad = i;
            return JSON_READ_BEYOND;
        }
    }
    *out = values;
    return JSON_READ_OK;
}

json_read_status json_span_int64s(const json_span *span, const char *text, int64_t *out,
                                  size_t *bad)
{
    const char *p = text + span->start, *end = text + span->end, *num;

    for (size_t i = 0; i < span->count; i++) {
        *bad = i;
        if (!next_number(&p, end, &num))
            return JSON_READ_NOT_INTEGER;
        bool negative = *num == '-';
        uint64_t magnitude = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
        bool beyond = false;
        for (const char *d = num + negative; d < p; d++) {
            if (!is_digit(*d))
                return JSON_READ_NOT_INTEGER; /* '.', 'e': jansson's reals */
            unsigned digit = (unsigned)(*d - '0');
            if (magnitude > (limit - digit) / 10)
                beyond = true;
            else
                magnitude = magnitude * 10 + digit;
        }
        if (beyond)
            return JSON_READ_BEYOND;
        out[i] = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    }
    return JSON_READ_OK;
}

json_read_status json_span_doubles(const json_span *span, const char *text, double *out,
                                   size_t *bad)
{
    const char *p = text + span->start, *end = text + span->end, *num;
    char small[64];

    for (size_t i = 0; i < span->count; i++) {
        *bad = i;
        if (!next_number(&p, end, &num))
            return JSON_READ_BEYOND;
        size_t n = (size_t)(p - num);
        char *copy = n < sizeof small ? small : malloc(n + 1);
        if (!copy)
            return JSON_READ_NO_MEMORY;
        memcpy(copy, num, n);
        copy[n] = '\0';
        out[i] = strtod(copy, NULL);
        if (copy != small)
            free(copy);
        if (!isfinite(out[i]))
            return JSON_READ_BEYOND;
    }
    return JSON_READ_OK;
}

/*
 * json_span.h - what a body's one pass hands over besides the jansson
 * tree: the spans of the numeric arrays and long strings it took out, the
 * codec's error kinds, and the readers of a span's numbers in the type the
 * decoder asks for (json_span.c). Shared by the builder (json_build.c) and
 * the document API (json_doc.h).
 */
#ifndef JSON_SPAN_H
#define JSON_SPAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json_limits.h"

typedef enum json_codec_kind {
    JSON_CODEC_OK = 0,
    JSON_CODEC_SYNTAX,          /* malformed JSON; the message gives line and column */
    JSON_CODEC_TOO_DEEP,        /* nests deeper than max_depth (or jansson's 2048) */
    JSON_CODEC_TOO_MANY_VALUES, /* more than max_values outside numeric arrays */
    JSON_CODEC_NON_FINITE,      /* a number (not in a numeric array) past double's range */
    JSON_CODEC_INTEGER_RANGE,   /* an integer (not in a numeric array) past int64 */
    JSON_CODEC_NO_MEMORY,
    JSON_CODEC_INTERNAL, /* a bug */
    JSON_CODEC_REFUSED   /* the caller's json_charge refused the decoded values */
} json_codec_kind;

/* One numeric array taken out of the body. */
typedef struct json_span {
    const json_t *stand_in; /* borrowed: the `[]` the tree holds in its place */
    size_t start, end;      /* its text: body[start, end), '[' to ']' */
    size_t ndim;
    size_t dim[JSON_ARRAY_MAX_NDIM];
    size_t count;  /* dim[0] * ... * dim[ndim-1] */
    float *floats; /* owned: the float32 values, parsed in the same pass
                      (big arrays by the OpenMP team), or NULL when one is
                      not a finite float32 */
} json_span;

/* One long string taken out of the body. */
typedef struct json_string_span {
    json_t *stand_in;  /* borrowed: the `""` the tree holds in its place (its
                          value is filled in by json_doc_string) */
    size_t start, end; /* its characters: body[start, end), quotes excluded */
} json_string_span;

/* What reading a span's numbers into a type can meet (json_span.c). */
typedef enum json_read_status {
    JSON_READ_OK = 0,
    JSON_READ_NOT_INTEGER, /* a fraction or exponent where an integer is read */
    JSON_READ_BEYOND,      /* an integer outside int64, or a value the type
                              cannot hold finitely (float32, double) */
    JSON_READ_NO_MEMORY
} json_read_status;

/* The span's values as float32, correctly rounded from their text (one
 * rounding): moves the buffer parsed while scanning when there is one (the
 * span then holds none), else parses into a new one. *out is new (caller
 * frees). On JSON_READ_BEYOND *bad is the flat index of the first value
 * that is not a finite float32. */
json_read_status json_span_take_floats(json_span *span, const char *text, float **out, size_t *bad);

/* The span's values as exact int64 into out[0 .. span->count). On an error
 * *bad is the flat index of the first offending value. */
json_read_status json_span_int64s(const json_span *span, const char *text, int64_t *out,
                                  size_t *bad);

/* The span's values as double (strtod's correct rounding) into
 * out[0 .. span->count); a value past double's range is JSON_READ_BEYOND. */
json_read_status json_span_doubles(const json_span *span, const char *text, double *out,
                                   size_t *bad);

#endif /* JSON_SPAN_H */

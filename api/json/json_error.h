/*
 * json_error.h - how the typed JSON readers say what is wrong with a
 * value: their own kinds, which api/ maps to the contract's error table
 * (api_from_json in api_error.h). The codecs know no HTTP status.
 */
#ifndef JSON_ERROR_H
#define JSON_ERROR_H

#include <stdarg.h>

#define JSON_MESSAGE_MAX 512
#define JSON_FIELD_MAX 256

typedef enum json_error_kind {
    JSON_E_NONE = 0,
    JSON_E_INVALID,    /* wrong type or a malformed value (base64, a choice) */
    JSON_E_SHAPE,      /* ragged, wrong rank, empty, shapes that disagree */
    JSON_E_RANGE,      /* a number outside its allowed range */
    JSON_E_NON_FINITE, /* not representable finitely in its type */
    JSON_E_TOO_LARGE,  /* past a size limit */
    JSON_E_NO_MEMORY,
    JSON_E_REFUSED /* the doc's charge refused the decoded values (its owner knows why) */
} json_error_kind;

typedef struct json_error {
    json_error_kind kind;
    char message[JSON_MESSAGE_MAX];
    char field[JSON_FIELD_MAX]; /* JSON path, "" when no single field */
} json_error;

/* Record an error (field may be NULL); returns -1. */
int json_fail(json_error *err, json_error_kind kind, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* json_fail() with the arguments as a va_list (for another layer's own
 * error kind that keeps its text in a json_error); returns -1. */
int json_vfail(json_error *err, json_error_kind kind, const char *field, const char *fmt,
               va_list ap) __attribute__((format(printf, 4, 0)));

/* An allocation failed while decoding; returns -1. */
int json_fail_oom(json_error *err);

#endif /* JSON_ERROR_H */

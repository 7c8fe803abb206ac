/*
 * api_error.h - the one list of errors the HTTP API can answer with.
 *
 * Each row: enum name, HTTP status, the contract's snake_case code. The
 * status and code of an error are looked up here and nowhere else.
 */
#ifndef API_ERROR_H
#define API_ERROR_H

#include <stddef.h>

#include "json/json_error.h"

#define API_ERROR_LIST(XX)                                                                         \
    XX(API_E_INVALID_JSON, 400, "invalid_json")                                                    \
    XX(API_E_INVALID_REQUEST, 400, "invalid_request")                                              \
    XX(API_E_UNAUTHORIZED, 401, "unauthorized")                                                    \
    XX(API_E_NOT_FOUND, 404, "not_found")                                                          \
    XX(API_E_UNKNOWN_MODEL, 404, "unknown_model")                                                  \
    XX(API_E_METHOD_NOT_ALLOWED, 405, "method_not_allowed")                                        \
    XX(API_E_PAYLOAD_TOO_LARGE, 413, "payload_too_large")                                          \
    XX(API_E_UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type")                                \
    XX(API_E_INVALID_SHAPE, 422, "invalid_shape")                                                  \
    XX(API_E_OUT_OF_RANGE, 422, "out_of_range")                                                    \
    XX(API_E_NON_FINITE, 422, "non_finite")                                                        \
    XX(API_E_TOO_LARGE, 422, "too_large")                                                          \
    /* a scheme or input needs a table the model lacks */                                          \
    XX(API_E_MISSING_WEIGHT, 422, "invalid_request")                                               \
    XX(API_E_UNAVAILABLE, 503, "unavailable")                                                      \
    /* a transfer coding other than chunked (server/framing.h) */                                  \
    XX(API_E_NOT_IMPLEMENTED, 501, "not_implemented")                                              \
    XX(API_E_EXPECTATION_FAILED, 417, "expectation_failed")                                        \
    XX(API_E_INTERNAL, 500, "internal")

typedef enum api_error_kind {
#define API_ERROR_ENUM(name, status, code) name,
    API_ERROR_LIST(API_ERROR_ENUM)
#undef API_ERROR_ENUM
        API_E_COUNT
} api_error_kind;

#define API_MESSAGE_MAX 512
#define API_FIELD_MAX 256

/* A decoded failure: what went wrong and where. Filled by api_fail(). */
typedef struct api_error {
    api_error_kind kind;
    char message[API_MESSAGE_MAX];
    char field[API_FIELD_MAX]; /* JSON path, "" when no single field is at fault */
    json_error json;           /* where a typed JSON reader (api/json) reports, before
                        api_json() maps it into the fields above */
} api_error;

int api_error_status(api_error_kind kind);
const char *api_error_code(api_error_kind kind);

/* Record an error; field may be NULL. Returns -1 so that callers can write
 * `return api_fail(err, ...);`. */
int api_fail(api_error *err, api_error_kind kind, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The one answer to an allocation failure on the request path: a 503
 * unavailable (the server is short of memory now; the request may be
 * retried), never a 500. Returns -1. */
int api_fail_oom(api_error *err);

/* The one way a lower layer's error (api/json's json_error and
 * json_codec_error, the model layer's desc_error) becomes the contract's:
 * with rc != 0, *err gets kind, message and field (NULL: none), except that
 * API_E_UNAVAILABLE is always api_fail_oom's answer. Returns rc. The
 * mappers below (api_json, api_desc, request.c's codec_fail) only choose
 * the kind. */
int api_mapped(api_error *err, int rc, api_error_kind kind, const char *message, const char *field);

/* The result rc of a typed JSON reader that reported into &err->json: on
 * failure (rc != 0) its error is mapped to the contract's kind in *err.
 * Returns rc, so that callers write `if (api_json(err, jf_int(..., &err->json)))`. */
int api_json(api_error *err, int rc);

#endif /* API_ERROR_H */

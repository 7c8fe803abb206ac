/*
 * api_error.c - status and code of each error kind, and api_fail().
 */
#include "api_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    int status;
    const char *code;
} error_rows[API_E_COUNT] = {
#define API_ERROR_ROW(name, status, code) [name] = {status, code},
    API_ERROR_LIST(API_ERROR_ROW)
#undef API_ERROR_ROW
};

int api_error_status(api_error_kind kind)
{
    return (unsigned)kind < API_E_COUNT ? error_rows[kind].status : 500;
}

const char *api_error_code(api_error_kind kind)
{
    return (unsigned)kind < API_E_COUNT ? error_rows[kind].code : "internal";
}

int api_fail(api_error *err, api_error_kind kind, const char *field, const char *fmt, ...)
{
    va_list ap;

    err->kind = kind;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    return -1;
}

int api_fail_oom(api_error *err)
{
    return api_fail(err, API_E_UNAVAILABLE, NULL, "out of memory: retry later");
}

int api_mapped(api_error *err, int rc, api_error_kind kind, const char *message, const char *field)
{
    if (!rc)
        return 0;
    if (kind == API_E_UNAVAILABLE) {
        api_fail_oom(err);
        return rc;
    }
    err->kind = kind;
    snprintf(err->message, sizeof err->message, "%s", message);
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    return rc;
}

int api_json(api_error *err, int rc)
{
    static const api_error_kind kinds[] = {
        [JSON_E_NONE] = API_E_INTERNAL,         [JSON_E_INVALID] = API_E_INVALID_REQUEST,
        [JSON_E_SHAPE] = API_E_INVALID_SHAPE,   [JSON_E_RANGE] = API_E_OUT_OF_RANGE,
        [JSON_E_NON_FINITE] = API_E_NON_FINITE, [JSON_E_TOO_LARGE] = API_E_TOO_LARGE,
        [JSON_E_NO_MEMORY] = API_E_UNAVAILABLE, [JSON_E_REFUSED] = API_E_UNAVAILABLE,
    };
    if (!rc) /* err->json is written only on failure */
        return 0;
    const json_error *je = &err->json;
    api_error_kind kind = (unsigned)je->kind < sizeof kinds / sizeof kinds[0] ? kinds[je->kind]
                                                                              : API_E_INTERNAL;

    return api_mapped(err, rc, kind, je->message, je->field);
}

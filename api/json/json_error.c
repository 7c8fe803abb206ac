/*
 * json_error.c - recording a typed reader's failure (json_error.h).
 */
#include "json/json_error.h"

#include <stdio.h>

int json_vfail(json_error *err, json_error_kind kind, const char *field, const char *fmt,
               va_list ap)
{
    err->kind = kind;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    return -1;
}

int json_fail(json_error *err, json_error_kind kind, const char *field, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    json_vfail(err, kind, field, fmt, ap);
    va_end(ap);
    return -1;
}

int json_fail_oom(json_error *err)
{
    return json_fail(err, JSON_E_NO_MEMORY, NULL, "out of memory");
}

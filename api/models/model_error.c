/*
 * model_error.c - the model loader's errors and warnings (model_error.h).
 */
#include "models/model_error.h"

#include <stdarg.h>
#include <stdio.h>

/* The message an allocation failure carries (the API answers it with its
 * own 503 text; a loader passes it on after "<where>: "). */
#define DESC_NO_MEMORY_TEXT "out of memory: retry later"

int model_fail(model_error *err, model_error_kind kind, const char *fmt, ...)
{
    va_list ap;

    err->kind = kind;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

int model_nomem(model_error *err, const char *what)
{
    return model_fail(err, MODEL_E_NOMEM, "out of memory loading %s", what);
}

const char *model_error_kind_name(model_error_kind kind)
{
    static const char *const names[] = {"file", "key", "tensor", "value", "memory"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

void model_warn(const model_warner *w, const char *fmt, ...)
{
    char line[MODEL_MESSAGE_MAX];
    va_list ap;

    if (!w || !w->fn)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    w->fn(w->ctx, line);
}

int desc_fail(desc_error *err, desc_error_kind kind, const char *field, const char *fmt, ...)
{
    va_list ap;

    err->kind = kind;
    va_start(ap, fmt);
    json_vfail(&err->json, JSON_E_NONE, field, fmt, ap);
    va_end(ap);
    return -1;
}

int desc_fail_oom(desc_error *err)
{
    return desc_fail(err, DESC_E_NO_MEMORY, NULL, DESC_NO_MEMORY_TEXT);
}

int desc_json(desc_error *err, int rc)
{
    if (rc)
        err->kind = DESC_E_JSON;
    return rc;
}

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
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    return -1;
}

int desc_fail_oom(desc_error *err)
{
    return desc_fail(err, DESC_E_NO_MEMORY, NULL, DESC_NO_MEMORY_TEXT);
}

int desc_json(desc_error *err, int rc)
{
    static const desc_error_kind kinds[] = {
        [JSON_E_NONE] = DESC_E_INTERNAL,         [JSON_E_INVALID] = DESC_E_INVALID,
        [JSON_E_SHAPE] = DESC_E_SHAPE,           [JSON_E_RANGE] = DESC_E_RANGE,
        [JSON_E_NON_FINITE] = DESC_E_NON_FINITE, [JSON_E_TOO_LARGE] = DESC_E_TOO_LARGE,
        [JSON_E_NO_MEMORY] = DESC_E_NO_MEMORY,
    };
    const json_error *je = &err->json;

    if (!rc)
        return 0;
    if (je->kind == JSON_E_NO_MEMORY)
        return desc_fail_oom(err);
    err->kind = (unsigned)je->kind < sizeof kinds / sizeof kinds[0] ? kinds[je->kind]
                                                                      : DESC_E_INTERNAL;
    snprintf(err->message, sizeof err->message, "%s", je->message);
    snprintf(err->field, sizeof err->field, "%s", je->field);
    return rc;
}

/*
 * response.c - api_response helpers and the contract's JSON error body.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "respond.h"
#include "json/strbuf.h"

/* Served when even the error body cannot be allocated: out of memory is a
 * 503 (retry later), like every allocation failure on the request path. */
static const char out_of_memory_body[] = "{\"error\":{\"code\":\"unavailable\",\"message\":\"out "
                                         "of memory: retry later\"}}";

void api_response_free(api_response *out)
{
    if (!out)
        return;
    free(out->body);
    if (out->stream.free)
        out->stream.free(out->stream.state);
    memset(out, 0, sizeof *out);
}

void api_respond_error(api_response *out, const api_error *err)
{
    strbuf sb = {0};

    strbuf_puts(&sb, "{\"error\":{\"code\":");
    strbuf_put_json_string(&sb, api_error_code(err->kind));
    strbuf_puts(&sb, ",\"message\":");
    strbuf_put_json_string(&sb, err->message);
    if (err->field[0]) {
        strbuf_puts(&sb, ",\"field\":");
        strbuf_put_json_string(&sb, err->field);
    }
    strbuf_puts(&sb, "}}");
    free(out->body);
    out->body = strbuf_detach(&sb, &out->body_len);
    out->status = api_error_status(err->kind);
    out->error_code = api_error_code(err->kind);
    out->content_type = "application/json";
    if (!out->body) {
        out->body = strdup(out_of_memory_body);
        out->body_len = out->body ? strlen(out->body) : 0;
        out->status = api_error_status(API_E_UNAVAILABLE);
        out->error_code = api_error_code(API_E_UNAVAILABLE);
    }
}

void api_respond_errorf(api_response *out, api_error_kind kind, const char *field, const char *fmt,
                        ...)
{
    api_error err = {.kind = kind};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err.message, sizeof err.message, fmt, ap);
    va_end(ap);
    snprintf(err.field, sizeof err.field, "%s", field ? field : "");
    api_respond_error(out, &err);
}

int respond_json(api_response *out, strbuf *sb, size_t tokens, api_error *err)
{
    char *body = strbuf_detach(sb, &out->body_len);

    if (!body)
        return api_fail_oom(err);
    free(out->body);
    out->body = body;
    out->status = 200;
    out->content_type = "application/json";
    out->tokens = tokens;
    return 0;
}

/*
 * fuzz_request.c - libFuzzer harness over the request decoding of /encode,
 * /apply and /diagnose: JSON, base64, shapes, positions, params, claims and
 * inline model objects all pass through api_encode/api_apply/api_diagnose,
 * after the admission's cost scan (api_request_cost) has read them.
 * Any crash, sanitizer report or leak fails the run, and so does a
 * non-finite number reaching an answer's writer (built with
 * POSENC_NON_FINITE_TEXT_ABORTS, where a release build writes null). Limits are small so that each input stays
 * cheap; decoding paths are the same as with the server's defaults.
 *
 *   make fuzz FUZZ_SECONDS=60
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two services for the whole run, built on the first input: the harness's
 * only state, owned here and freed by the process exit. The first leaves
 * every string to jansson (the reference); the second reads every string
 * of printable ASCII without escapes from the body's text (string spans,
 * json_doc.h), which must change no answer, errors included. */
static api_service *fuzz_service(bool string_spans)
{
    static api_service *svc[2];
    if (!svc[string_spans]) {
        api_limits limits = {.max_tokens = 256,
                             .max_output_elements = (size_t)1 << 18,
                             .diagnose_ms = 5, /* a search's budget, kept short */
                             .string_span_min = string_spans ? 1 : SIZE_MAX};
        api_error err;
        svc[string_spans] = api_service_new(&limits, &err);
        if (!svc[string_spans])
            abort();
    }
    return svc[string_spans];
}

static void check_response(const api_response *r)
{
    /* every answer is JSON with a status the contract allows */
    if (r->status != 200 && r->status != 400 && r->status != 404 && r->status != 422)
        abort();
    if (!r->body || r->body_len == 0 || r->body[0] != '{')
        abort();
}

/* The same request with PAD spaces after it: past the (lowered) parallel
 * threshold, so its arrays take the other parser. Only speed may differ:
 * the same status and code, and the same bytes for a 200. */
#define PAD 256

/* The same status, code and bytes (errors included). */
static void check_identical(const api_response *a, const api_response *b)
{
    if (a->status != b->status || (a->error_code == NULL) != (b->error_code == NULL) ||
        (a->error_code && strcmp(a->error_code, b->error_code) != 0) ||
        a->body_len != b->body_len || memcmp(a->body, b->body, a->body_len) != 0)
        abort();
}

static void check_same(const api_response *a, const api_response *b)
{
    if (a->status != b->status || (a->error_code == NULL) != (b->error_code == NULL) ||
        (a->error_code && strcmp(a->error_code, b->error_code) != 0))
        abort();
    if (a->status == 200 &&
        (a->body_len != b->body_len || memcmp(a->body, b->body, a->body_len) != 0))
        abort();
}

/* A streamed answer read as the server reads it, into r->body. */
static void collect(api_response *r)
{
    size_t cap = 0, len = 0;
    char *text = NULL;

    if (!r->stream.read)
        return;
    for (;;) {
        if (cap - len < 4096) {
            char *grown = realloc(text, cap = 2 * cap + 4096);
            if (!grown)
                abort();
            text = grown;
        }
        size_t n = r->stream.read(r->stream.state, text + len, 4096);
        if (n == API_STREAM_FAILED)
            abort();
        if (n == 0)
            break;
        len += n;
    }
    r->stream.free(r->stream.state);
    r->stream = (api_body_stream){0};
    r->body = text;
    r->body_len = len;
}

typedef void (*endpoint)(const api_service *, const api_budget *, const char *, size_t,
                         api_response *);

/* /diagnose's search is bounded in time, so two runs of one request may
 * stop at different variants: only the status and code must agree. */
static void check_same_status(const api_response *a, const api_response *b)
{
    if (a->status != b->status || (a->error_code == NULL) != (b->error_code == NULL) ||
        (a->error_code && strcmp(a->error_code, b->error_code) != 0))
        abort();
}

static void run(endpoint call, api_endpoint ep, bool timed, const uint8_t *data, size_t size,
                char *padded)
{
    api_response plain, spaced, spans;

    /* the admission's cost scan reads the same bytes before any decoding:
     * whatever they are, it returns (sanitizers watch its reads) */
    (void)api_request_cost(fuzz_service(false), ep, (const char *)data, size);
    (void)api_request_cost(fuzz_service(false), ep, padded, size + PAD);

    call(fuzz_service(false), NULL, (const char *)data, size, &plain);
    collect(&plain);
    check_response(&plain);
    call(fuzz_service(false), NULL, padded, size + PAD, &spaced);
    collect(&spaced);
    (timed ? check_same_status : check_same)(&plain, &spaced);
    call(fuzz_service(true), NULL, (const char *)data, size, &spans);
    collect(&spans);
    (timed ? check_same_status : check_identical)(&plain, &spans);
    api_response_free(&plain);
    api_response_free(&spaced);
    api_response_free(&spans);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *padded = malloc(size + PAD);

    if (!padded)
        return 0;
    if (size)
        memcpy(padded, data, size);
    memset(padded + size, ' ', PAD);
    run(api_encode, API_ENDPOINT_ENCODE, false, data, size, padded);
    run(api_apply, API_ENDPOINT_APPLY, false, data, size, padded);
    run(api_diagnose, API_ENDPOINT_DIAGNOSE, true, data, size, padded);
    free(padded);
    return 0;
}

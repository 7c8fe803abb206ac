/*
 * fuzz_request.c - libFuzzer harness over the request decoding of /encode
 * and /apply: JSON, base64, shapes, positions, params and inline model
 * objects all pass through api_encode/api_apply. Any crash, sanitizer
 * report or leak fails the run. Limits are small so that each input stays
 * cheap; decoding paths are the same as with the server's defaults.
 *
 *   make fuzz FUZZ_SECONDS=60
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One service for the whole run, built on the first input: the harness's
 * only state, owned here and freed by the process exit. */
static api_service *fuzz_service(void)
{
    static api_service *svc;
    if (!svc) {
        api_limits limits = {.max_tokens = 256, .max_output_elements = (size_t)1 << 18};
        api_error err;
        svc = api_service_new(&limits, &err);
        if (!svc)
            abort();
    }
    return svc;
}

static void check_response(const api_response *r)
{
    /* every answer is JSON with a status the contract allows */
    if (r->status != 200 && r->status != 400 && r->status != 404 && r->status != 422)
        abort();
    if (!r->body || r->body_len == 0 || r->body[0] != '{')
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    api_service *svc = fuzz_service();
    api_response r;

    api_encode(svc, NULL, (const char *)data, size, &r);
    check_response(&r);
    api_response_free(&r);
    api_apply(svc, NULL, (const char *)data, size, &r);
    check_response(&r);
    api_response_free(&r);
    return 0;
}

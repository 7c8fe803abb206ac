/*
 * service.c - building and freeing the api_service, finding models.
 */
#include "service.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json/json_doc.h"
#include "model_errors.h"
#include "models/model_dir.h"

/* The shared sinusoidal/RoPE tables may take this much memory (the 64 MiB
 * the fixed 16 slots of 4 MiB allowed before pe_cache had a budget). */
#define API_TABLE_CACHE_BYTES ((size_t)64 << 20)

api_service *api_service_new(const api_limits *limits, api_error *err)
{
    return api_service_new_with_models(limits, NULL, 0, err);
}

/* A loader warning: one line on stderr, in the text log's form. */
static void warn_line(void *ctx, const char *message)
{
    fprintf(stderr, "posenc: warning: model '%s': %s\n", (const char *)ctx, message);
}

/* Loads specs[i] into the next slot; err->message names the model. The
 * loader's message is whole; when it is longer than an api_error holds,
 * it goes to stderr whole first, so that nothing of it is lost. */
static int add_loaded(api_service *svc, const api_model_spec *spec, api_error *err)
{
    model_warner warn = {.fn = warn_line, .ctx = (void *)(uintptr_t)spec->name};
    model_error *inner; /* owned: freed below */
    model *m;

    if (service_find_model(svc, spec->name))
        return api_fail(err, API_E_INVALID_REQUEST, NULL, "model '%s': the name is given twice",
                        spec->name);
    if (!(inner = calloc(1, sizeof *inner)))
        return api_fail(err, API_E_INTERNAL, NULL, "out of memory loading model '%s'", spec->name);
    m = model_load_dir(spec->name, spec->dir, spec->has_layer, spec->layer, &warn, inner);
    if (!m) {
        if (inner->message[0] == '\0') /* a loader path that met no reason but memory */
            model_nomem(inner, "the model");
        api_error_kind kind = inner->kind == MODEL_E_NOMEM ? API_E_INTERNAL : API_E_INVALID_REQUEST;
        if (strlen(inner->message) + strlen(spec->name) + 16 >= API_MESSAGE_MAX)
            fprintf(stderr, "posenc: error: model '%s': %s\n", spec->name, inner->message);
        api_fail(err, kind, NULL, "model '%s': %s", spec->name, inner->message);
        free(inner);
        return -1;
    }
    free(inner);
    svc->models[svc->n_models++] = m;
    /* the params as loaded, decoded once for every request to start from */
    desc_error de;
    api_error decode_err;
    if (api_desc(&decode_err, model_decode_scheme(m, &de), &de))
        return api_fail(err, decode_err.kind, NULL, "model '%s': %s", spec->name,
                        decode_err.message);
    return 0;
}

api_service *api_service_new_with_models(const api_limits *limits, const api_model_spec *specs,
                                         size_t n, api_error *err)
{
    api_service *svc = calloc(1, sizeof *svc);
    bool named_default = false;

    if (!svc)
        goto nomem;
    /* jansson's hash seed is its one global; set it before any thread
     * parses (jansson doc/threadsafety.rst) */
    json_object_seed(0);
    json_doc_setup(); /* jansson's allocator: also process-wide, set once here */
    svc->limits = *limits;
    if (svc->limits.max_tokens == 0)
        svc->limits.max_tokens = API_DEFAULT_MAX_TOKENS;
    if (svc->limits.max_output_elements == 0)
        svc->limits.max_output_elements = API_DEFAULT_MAX_OUTPUT_ELEMENTS;
    if (svc->limits.max_batch == 0)
        svc->limits.max_batch = API_DEFAULT_MAX_BATCH;
    if (svc->limits.max_dim == 0 || svc->limits.max_dim > API_DEFAULT_MAX_DIM)
        svc->limits.max_dim = API_DEFAULT_MAX_DIM;
    if (svc->limits.max_heads == 0)
        svc->limits.max_heads = API_DEFAULT_MAX_HEADS;
    if (svc->limits.max_heads > API_MAX_HEADS)
        svc->limits.max_heads = API_MAX_HEADS;
    if (svc->limits.diagnose_ms == 0)
        svc->limits.diagnose_ms = API_DEFAULT_DIAGNOSE_MS;
    if (svc->limits.max_json_depth == 0)
        svc->limits.max_json_depth = API_DEFAULT_MAX_JSON_DEPTH;
    if (svc->limits.max_json_depth > API_MAX_JSON_DEPTH)
        svc->limits.max_json_depth = API_MAX_JSON_DEPTH;
    if (svc->limits.stream_min_bytes == 0)
        svc->limits.stream_min_bytes = (size_t)1 << 20;
    if (svc->limits.max_json_values == 0)
        svc->limits.max_json_values = API_DEFAULT_MAX_JSON_VALUES;
    svc->models = calloc(n + 1, sizeof *svc->models);
    svc->pe_cache = pe_cache_new(API_TABLE_CACHE_BYTES);
    if (!svc->models || !svc->pe_cache)
        goto nomem;
    for (size_t i = 0; i < n; i++)
        named_default |= strcmp(specs[i].name, "default") == 0;
    /* The built-in model comes first unless a loaded model takes its name. */
    if (!named_default) {
        svc->models[0] = model_new_default();
        if (!svc->models[0])
            goto nomem;
        svc->n_models = 1;
    }
    for (size_t i = 0; i < n; i++)
        if (add_loaded(svc, &specs[i], err)) {
            api_service_free(svc);
            return NULL;
        }
    return svc;
nomem:
    api_service_free(svc);
    api_fail(err, API_E_INTERNAL, NULL, "out of memory building the default model");
    return NULL;
}

void api_service_free(api_service *svc)
{
    if (!svc)
        return;
    for (size_t i = 0; i < svc->n_models; i++)
        model_free(svc->models[i]);
    free(svc->models);
    pe_cache_free(svc->pe_cache);
    free(svc);
}

const model *service_find_model(const api_service *svc, const char *name)
{
    for (size_t i = 0; i < svc->n_models; i++)
        if (strcmp(svc->models[i]->name, name) == 0)
            return svc->models[i];
    return NULL;
}

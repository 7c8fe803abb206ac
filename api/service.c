/*
 * service.c - building and freeing the api_service, finding models.
 */
#include "service.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "models/model_dir.h"

api_service *api_service_new(const api_limits *limits, api_error *err)
{
    return api_service_new_with_models(limits, NULL, 0, err);
}

/* Loads specs[i] into the next slot; err->message names the model. */
static int add_loaded(api_service *svc, const api_model_spec *spec, api_error *err)
{
    api_error inner;

    if (service_find_model(svc, spec->name))
        return api_fail(err, API_E_INVALID_REQUEST, NULL,
                        "model '%s': the name is given twice", spec->name);
    svc->models[svc->n_models] =
        model_load_dir(spec->name, spec->dir, spec->has_layer, spec->layer, &inner);
    if (!svc->models[svc->n_models])
        return api_fail(err, inner.kind, NULL, "model '%s': %s", spec->name, inner.message);
    svc->n_models++;
    /* the params as loaded, decoded once for every request to start from */
    if (model_decode_scheme(svc->models[svc->n_models - 1], &inner))
        return api_fail(err, inner.kind, NULL, "model '%s': %s", spec->name, inner.message);
    return 0;
}

api_service *api_service_new_with_models(const api_limits *limits,
                                         const api_model_spec *specs, size_t n,
                                         api_error *err)
{
    api_service *svc = calloc(1, sizeof *svc);
    bool named_default = false;

    if (!svc)
        goto nomem;
    /* jansson's hash seed is its one global; set it before any thread
     * parses (jansson doc/threadsafety.rst) */
    json_object_seed(0);
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
    if (svc->limits.max_json_depth == 0)
        svc->limits.max_json_depth = API_DEFAULT_MAX_JSON_DEPTH;
    if (svc->limits.max_json_depth > API_MAX_JSON_DEPTH)
        svc->limits.max_json_depth = API_MAX_JSON_DEPTH;
    if (svc->limits.stream_min_bytes == 0)
        svc->limits.stream_min_bytes = (size_t)1 << 20;
    if (svc->limits.max_json_values == 0)
        svc->limits.max_json_values = API_DEFAULT_MAX_JSON_VALUES;
    svc->models = calloc(n + 1, sizeof *svc->models);
    svc->pe_cache = pe_cache_new();
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

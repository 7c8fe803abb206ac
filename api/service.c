/*
 * service.c - building and freeing the api_service, finding models.
 */
#include "service.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

api_service *api_service_new(const api_limits *limits, api_error *err)
{
    api_service *svc = calloc(1, sizeof *svc);

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
    svc->models = calloc(1, sizeof *svc->models);
    if (!svc->models)
        goto nomem;
    svc->models[0] = model_new_default();
    if (!svc->models[0])
        goto nomem;
    svc->n_models = 1;
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
    free(svc);
}

const model *service_find_model(const api_service *svc, const char *name)
{
    for (size_t i = 0; i < svc->n_models; i++)
        if (strcmp(svc->models[i]->name, name) == 0)
            return svc->models[i];
    return NULL;
}

/*
 * service.h - the inside of api_service: limits and the served models.
 */
#ifndef SERVICE_H
#define SERVICE_H

#include "api.h"
#include "models/model.h"
#include "pe_cache.h"

struct api_service {
    api_limits limits;
    model **models; /* owned, n_models entries; the one named "default" serves
                       requests that name no model */
    size_t n_models;
    pe_cache *pe_cache; /* owned; the one mutable part (see pe_cache.h) */
};

/* The model called `name`, or NULL. */
const model *service_find_model(const api_service *svc, const char *name);

#endif /* SERVICE_H */

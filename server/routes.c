/*
 * routes.c - the route table (see routes.h). The handlers are in
 * handlers.c; the checks that guard a route (auth, limits, media type)
 * are flags in its row, applied by admission.c before a handler runs.
 */
#include "routes.h"

#include <string.h>

/*  method  path             handler              auth   body   compute probe */
static const route ROUTES[] = {
    {"POST", "/encode", handle_encode, true, true, true, false},
    {"POST", "/apply", handle_apply, true, true, true, false},
    {"POST", "/diagnose", handle_diagnose, true, true, true, false},
    {"GET", "/healthz", handle_healthz, false, false, false, true},
    {"GET", "/readyz", handle_readyz, false, false, false, true},
    {"GET", "/info", handle_info, true, false, false, false},
    {"GET", "/metrics", handle_metrics, true, false, false, true},
    {"GET", "/openapi.yaml", handle_openapi_yaml, true, false, false, false},
    {"GET", "/openapi.json", handle_openapi_json, true, false, false, false},
    {"GET", "/", handle_page, true, false, false, false},
};

_Static_assert(sizeof ROUTES / sizeof ROUTES[0] == ROUTE_COUNT,
               "ROUTE_COUNT must match the route table");

const route *routes_find(const char *path)
{
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        if (strcmp(ROUTES[i].path, path) == 0)
            return &ROUTES[i];
    }
    return NULL;
}

bool route_allows(const route *r, const char *method)
{
    if (strcmp(r->method, method) == 0)
        return true;
    return strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

const char *route_allow_header(const route *r)
{
    return strcmp(r->method, "GET") == 0 ? "GET, HEAD" : r->method;
}

int route_index(const route *r)
{
    return r == NULL ? -1 : (int)(r - ROUTES);
}

const char *route_label(int index)
{
    return (index >= 0 && index < ROUTE_COUNT) ? ROUTES[index].path : "other";
}

/*
 * routes.c - the route table and the handlers of the service endpoints.
 *
 * The handlers only pick which api.h function answers; everything about a
 * request body (JSON, shapes, errors) is api/'s business. The checks that
 * guard a route (auth, limits, media type) are flags in its row and are
 * applied by daemon.c before a handler runs.
 */
#include "routes.h"

#include <stdatomic.h>
#include <string.h>

#include "conn_guard.h"
#include "metrics.h"
#include "server.h"
#include "work_pool.h"

#define JSON_TYPE "application/json"

static void set_static(route_reply *out, int status, const char *type,
                       const char *body, size_t len)
{
    out->api.status = status;
    out->api.content_type = type;
    out->static_body = body;
    out->static_len = len;
}

static void handle_encode(server_ctx *srv, const char *body, size_t len,
                          route_reply *out)
{
    server_compute_begin(srv);
    api_encode(srv->svc, NULL, body, len, &out->api);
    server_compute_end(srv);
}

static void handle_apply(server_ctx *srv, const char *body, size_t len,
                         route_reply *out)
{
    server_compute_begin(srv);
    api_apply(srv->svc, NULL, body, len, &out->api);
    server_compute_end(srv);
}

static void handle_diagnose(server_ctx *srv, const char *body, size_t len,
                            route_reply *out)
{
    server_compute_begin(srv);
    api_diagnose(srv->svc, NULL, body, len, &out->api);
    server_compute_end(srv);
}

/* Liveness: answering at all is the whole check. */
static void handle_healthz(server_ctx *srv, const char *body, size_t len,
                           route_reply *out)
{
    static const char ok[] = "{\"status\":\"ok\"}";
    (void)srv, (void)body, (void)len;
    set_static(out, 200, JSON_TYPE, ok, sizeof ok - 1);
}

/* Readiness: the built-in model is ready once the daemon listens; a
 * draining server asks load balancers to go elsewhere. */
static void handle_readyz(server_ctx *srv, const char *body, size_t len,
                          route_reply *out)
{
    static const char ready[] = "{\"status\":\"ready\"}";
    (void)body, (void)len;
    if (atomic_load(&srv->draining)) {
        api_respond_errorf(&out->api, API_E_UNAVAILABLE, NULL,
                           "the server is shutting down");
        return;
    }
    set_static(out, 200, JSON_TYPE, ready, sizeof ready - 1);
}

static void handle_info(server_ctx *srv, const char *body, size_t len,
                        route_reply *out)
{
    (void)body, (void)len;
    api_info(srv->svc, &srv->facts, &out->api);
}

static void handle_metrics(server_ctx *srv, const char *body, size_t len,
                           route_reply *out)
{
    (void)body, (void)len;
    size_t n = 0;
    metrics_gauges g = {.workers = srv->cfg.workers};
    if (srv->pool != NULL) {
        g.queued = work_pool_queued(srv->pool);
        g.computing = work_pool_running(srv->pool);
    }
    if (srv->guard != NULL) {
        conn_guard_stats cs;
        conn_guard_get_stats(srv->guard, &cs);
        g.connections = cs.open;
        g.connections_timed_out = cs.timed_out;
        g.connections_over_limit = cs.over_limit;
    }
    char *text = metrics_render(&srv->metrics, &g, &n);
    if (text == NULL) {
        api_respond_errorf(&out->api, API_E_INTERNAL, NULL,
                           "out of memory rendering metrics");
        return;
    }
    out->api.status = 200;
    out->api.body = text;
    out->api.body_len = n;
    out->api.content_type = "text/plain; version=0.0.4; charset=utf-8";
}

static void handle_openapi_yaml(server_ctx *srv, const char *body,
                                size_t len, route_reply *out)
{
    (void)srv, (void)body, (void)len;
    size_t n = 0;
    const char *text = api_openapi_yaml(&n);
    set_static(out, 200, "application/yaml", text, n);
}

static void handle_openapi_json(server_ctx *srv, const char *body,
                                size_t len, route_reply *out)
{
    (void)srv, (void)body, (void)len;
    size_t n = 0;
    const char *text = api_openapi_json(&n);
    set_static(out, 200, JSON_TYPE, text, n);
}

/* The explorer page: web/ inlined into one HTML file and compiled in
 * (build/gen/web_text.c, see the Makefile). */
extern const char web_index_html_text[];
extern const size_t web_index_html_text_len;

static void handle_page(server_ctx *srv, const char *body, size_t len,
                        route_reply *out)
{
    (void)srv, (void)body, (void)len;
    set_static(out, 200, "text/html; charset=utf-8", web_index_html_text,
               web_index_html_text_len);
}

/*  method  path             handler              auth   body   compute */
static const route ROUTES[] = {
    {"POST", "/encode", handle_encode, true, true, true},
    {"POST", "/apply", handle_apply, true, true, true},
    {"POST", "/diagnose", handle_diagnose, true, true, true},
    {"GET", "/healthz", handle_healthz, false, false, false},
    {"GET", "/readyz", handle_readyz, false, false, false},
    {"GET", "/info", handle_info, true, false, false},
    {"GET", "/metrics", handle_metrics, true, false, false},
    {"GET", "/openapi.yaml", handle_openapi_yaml, true, false, false},
    {"GET", "/openapi.json", handle_openapi_json, true, false, false},
    {"GET", "/", handle_page, true, false, false},
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
    return (index >= 0 && index < ROUTE_COUNT) ? ROUTES[index].path
                                               : "other";
}

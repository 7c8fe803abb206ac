/*
 * handlers.c - the handlers of the routes (see handlers.h).
 */
#include "handlers.h"

#include <stdatomic.h>

#include "compute_gate.h"
#include "conn_guard.h"
#include "mem_budget.h"
#include "metrics.h"
#include "server.h"

#define JSON_TYPE "application/json"

static void set_static(handler_reply *out, int status, const char *type, const char *body,
                       size_t len)
{
    out->api.status = status;
    out->api.content_type = type;
    out->static_body = body;
    out->static_len = len;
}

void handle_encode(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    api_budget budget = mem_budget_api(&srv->budget, body->charged);
    api_encode(srv->svc, &budget, body->text, body->len, &out->api);
}

void handle_apply(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    api_budget budget = mem_budget_api(&srv->budget, body->charged);
    api_apply(srv->svc, &budget, body->text, body->len, &out->api);
}

void handle_diagnose(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    api_budget budget = mem_budget_api(&srv->budget, body->charged);
    api_diagnose(srv->svc, &budget, body->text, body->len, &out->api);
}

/* Liveness: answering at all is the whole check. */
void handle_healthz(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    static const char ok[] = "{\"status\":\"ok\"}";
    (void)srv, (void)body;
    set_static(out, 200, JSON_TYPE, ok, sizeof ok - 1);
}

/* Readiness: the built-in model is ready once the daemon listens; a
 * draining server asks load balancers to go elsewhere. */
void handle_readyz(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    static const char ready[] = "{\"status\":\"ready\"}";
    (void)body;
    if (atomic_load(&srv->draining)) {
        api_respond_errorf(&out->api, API_E_UNAVAILABLE, NULL, "the server is shutting down");
        return;
    }
    set_static(out, 200, JSON_TYPE, ready, sizeof ready - 1);
}

void handle_info(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    (void)body;
    api_server_facts facts = srv->facts;
    facts.memory_reserved = mem_budget_reserved(&srv->budget);
    api_info(srv->svc, &facts, &out->api);
}

void handle_metrics(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    (void)body;
    size_t n = 0;
    metrics_gauges g = {
        .workers = srv->cfg.workers,
        .memory_budget = srv->budget.total,
        .memory_reserved = mem_budget_reserved(&srv->budget),
    };
    if (srv->gate != NULL) {
        compute_gate_stats gs;
        compute_gate_get_stats(srv->gate, &gs);
        g.queued = gs.queued;
        g.computing = gs.running;
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
        api_respond_errorf(&out->api, API_E_INTERNAL, NULL, "out of memory rendering metrics");
        return;
    }
    out->api.status = 200;
    out->api.body = text;
    out->api.body_len = n;
    out->api.content_type = "text/plain; version=0.0.4; charset=utf-8";
}

void handle_openapi_yaml(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    (void)srv, (void)body;
    size_t n = 0;
    const char *text = api_openapi_yaml(&n);
    set_static(out, 200, "application/yaml", text, n);
}

void handle_openapi_json(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    (void)srv, (void)body;
    size_t n = 0;
    const char *text = api_openapi_json(&n);
    set_static(out, 200, JSON_TYPE, text, n);
}

/* The explorer page: web/ inlined into one HTML file and compiled in
 * (build/gen/web_text.c, see the Makefile). */
extern const char web_index_html_text[];
extern const size_t web_index_html_text_len;

void handle_page(server_ctx *srv, const handler_body *body, handler_reply *out)
{
    (void)srv, (void)body;
    set_static(out, 200, "text/html; charset=utf-8", web_index_html_text, web_index_html_text_len);
}

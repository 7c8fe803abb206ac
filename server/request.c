/*
 * request.c - a request's allocation, its state and what it frees (see
 * request.h).
 */
#include "request.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "compute_gate.h"
#include "header_syntax.h"
#include "mem_budget.h"
#include "mono_clock.h"
#include "printable.h"

const char *req_header(const http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* The headers as received, for framing.h. */
typedef struct header_list {
    framing_header *items; /* owned by inspect_headers */
    size_t n, cap;
} header_list;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                      const char *value)
{
    header_list *l = cls;
    (void)kind;
    if (l->n < l->cap)
        l->items[l->n++] = (framing_header){name, value != NULL ? value : ""};
    return MHD_YES;
}

/* Writes why the headers break RFC 9112 into req->malformed, if they do. */
static void check_syntax(http_request *req, const header_list *l, bool http11)
{
    size_t at;
    header_verdict v = header_syntax_check(l->items, l->n, http11, &at);
    if (v == HEADERS_OK)
        return;
    if (at < l->n) {
        char name[64];
        printable_text(name, sizeof name, l->items[at].name);
        snprintf(req->malformed, sizeof req->malformed, "%s: '%s'", header_syntax_message(v), name);
    } else {
        snprintf(req->malformed, sizeof req->malformed, "%s", header_syntax_message(v));
    }
}

/* The request line and the headers as libmicrohttpd parsed them in place:
 * from the method (the block's start) through the empty line. */
typedef struct header_block {
    const char *start, *end; /* NULL when libmicrohttpd does not say */
    const char *version;     /* in the block, after the URI */
    bool http11;
} header_block;

/* Looks at how the header block ends (framing_check_tail), after the
 * last header's value or, with no header, after the version. */
static void check_tail(http_request *req, const header_list *l, const header_block *b)
{
    if (b->start == NULL)
        return;
    const char *version_end = b->version + strlen(b->version);
    const char *last = l->n > 0 ? l->items[l->n - 1].value : version_end;
    size_t width = 0;
    if (l->n > 0) {
        uintptr_t gap = (uintptr_t)l->items[0].name - (uintptr_t)version_end;
        width = gap == 1 || gap == 2 ? (size_t)gap : 0;
    }
    switch (framing_check_tail(last + strlen(last), b->start, b->end, width)) {
    case TAIL_NUL:
        if (req->nul_header == NULL && l->n > 0)
            req->nul_header = l->items[l->n - 1].name;
        break;
    case TAIL_LOST:
        if (req->malformed[0] == '\0')
            snprintf(req->malformed, sizeof req->malformed,
                     "a header line is not 'name: value' (an empty name?)");
        break;
    case TAIL_OK:
        break;
    }
}

/* Looks at the received headers: framing (framing_check), syntax
 * (header_syntax_check) and, where the library's layout is known, NUL
 * bytes and lost lines (framing_find_nul, check_tail).
 * False when out of memory. */
static bool inspect_headers(http_request *req, const header_block *b)
{
    int count = MHD_get_connection_values(req->conn, MHD_HEADER_KIND, NULL, NULL);
    header_list l = {NULL, 0, 0};
    if (count > 0) {
        l.items = calloc((size_t)count, sizeof(framing_header));
        if (l.items == NULL)
            return false;
        l.cap = (size_t)count;
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_header, &l);
    }
    req->framing = framing_check(l.items, l.n);
    check_syntax(req, &l, b->http11);
    if (req->srv->header_block_in_place) { /* else the library refused those */
        size_t bad = framing_find_nul(l.items, l.n);
        if (bad < l.n)
            req->nul_header = l.items[bad].name; /* lives as long as the request */
        check_tail(req, &l, b);
    }
    free(l.items);
    return true;
}

/* The header block of the request on conn, whose method and version
 * libmicrohttpd handed over (both point into the block). */
static header_block find_block(struct MHD_Connection *conn, const char *method, const char *version)
{
    header_block b = {NULL, NULL, version, strcmp(version, MHD_HTTP_VERSION_1_1) == 0};
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    uintptr_t v = (uintptr_t)version, m = (uintptr_t)method;
    if (ci != NULL && v > m && v - m < ci->header_size) {
        b.start = method;
        b.end = method + ci->header_size;
    }
    return b;
}

/* Whether conn came to the --probe-port listener: by its port, which is
 * known before either daemon's pointer is stored. */
static bool on_probe_port(const server_ctx *srv, struct MHD_Connection *conn)
{
    if (srv->cfg.probe_port == 0)
        return false;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    const union MHD_DaemonInfo *di = ci != NULL ? MHD_get_daemon_info(ci->daemon,
                                                                      MHD_DAEMON_INFO_BIND_PORT)
                                                : NULL;
    return di != NULL && di->port == srv->cfg.probe_port;
}

/* The method as it may be logged: visible ASCII, cut to fit. */
static void copy_method(http_request *req, const char *method)
{
    size_t i = 0;
    for (; method[i] != '\0' && i + 1 < sizeof req->method; i++) {
        unsigned char c = (unsigned char)method[i];
        req->method[i] = (c > 0x20 && c < 0x7f) ? (char)c : '?';
    }
    req->method[i] = '\0';
}

/* The client's X-Request-Id when it may be echoed, else a new one. */
static void set_id(http_request *req)
{
    const char *id = req_header(req, "X-Request-Id");
    if (request_id_is_sane(id)) {
        memcpy(req->id, id, strlen(id) + 1);
    } else {
        server_ctx *srv = req->srv;
        uint64_t n = atomic_fetch_add_explicit(&srv->next_request_id, 1, memory_order_relaxed);
        request_id_generate(req->id, sizeof req->id, srv->request_id_seed, n);
    }
}

http_request *req_new(server_ctx *srv, struct MHD_Connection *conn, const char *url,
                      const char *method, const char *version, const char *target_fault)
{
    http_request *req = calloc(1, sizeof *req);
    if (req == NULL)
        return NULL;
    req->srv = srv;
    req->conn = conn;
    atomic_init(&req->state, REQ_NEW);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->ce = ci != NULL ? ci->socket_context : NULL;
    req->start_ns = mono_now_ns();
    req->on_probe_port = on_probe_port(srv, conn);
    req->route = routes_find(url);
    const header_block block = find_block(conn, method, version);
    if (!inspect_headers(req, &block)) {
        free(req);
        return NULL;
    }
    if (target_fault != NULL)
        snprintf(req->malformed, sizeof req->malformed, "%s", target_fault);
    copy_method(req, method);
    set_id(req);
    const char *cl = req_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    req->has_body = req_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL ||
                    (cl != NULL && strcmp(cl, "0") != 0);
    /* Counted before the connection is claimed: a drain that shuts idle
     * connections (conn_guard_close_idle) and then waits for the count
     * sees every request that claimed one first. */
    atomic_fetch_add(&srv->metrics.in_flight, 1);
    if (!conn_guard_request_begins(req->ce)) {
        atomic_fetch_sub(&srv->metrics.in_flight, 1);
        free(req);
        return NULL;
    }
    conn_guard_await_body(req->ce, req->has_body);
    return req;
}

static bool state_holds_slot(request_state s)
{
    return s == REQ_COMPLETE || s == REQ_QUEUED || s == REQ_COMPUTED;
}

request_state req_get_state(const http_request *req)
{
    return atomic_load_explicit(&req->state, memory_order_acquire);
}

bool req_holds_slot(const http_request *req)
{
    return req->route != NULL && req->route->compute && state_holds_slot(req_get_state(req));
}

void req_set_state(http_request *req, request_state next)
{
    if (req_holds_slot(req) && !state_holds_slot(next))
        compute_gate_leave(req->srv->gate);
    atomic_store_explicit(&req->state, next, memory_order_release);
}

void req_drop_body(http_request *req)
{
    free(req->body);
    req->body = NULL;
    req->body_len = req->body_cap = 0;
    mem_budget_release(&req->srv->budget, req->body_charged);
    req->body_charged = 0;
}

void req_free(http_request *req)
{
    if (req == NULL)
        return;
    server_ctx *srv = req->srv;
    if (req_holds_slot(req))
        compute_gate_leave(srv->gate);
    body_stream_detach(req->stream); /* it may outlive the request */
    api_response_free(&req->reply.api);
    req_drop_body(req);
    free(req);
    atomic_fetch_sub_explicit(&srv->metrics.in_flight, 1, memory_order_release);
}

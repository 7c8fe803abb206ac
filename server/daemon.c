/*
 * daemon.c - libmicrohttpd setup, per-request state, body accumulation and
 * responses (see daemon.h for the order of checks).
 *
 * MHD calls the access handler several times per request: once when the
 * headers are in (*req_cls == NULL: allocate, check, maybe answer at once
 * without reading the body), once per chunk of body (copy it, bounded),
 * and once more with no data (run the route's handler and answer). The
 * completion callback then logs, counts and frees the request.
 */
#include "daemon.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "access_log.h"
#include "auth.h"
#include "body_stream.h"
#include "compute_gate.h"
#include "conn_guard.h"
#include "framing.h"
#include "handlers.h"
#include "mem_budget.h"
#include "mono_clock.h"
#include "request_id.h"
#include "routes.h"

#define BODY_INITIAL_CAP ((size_t)16 * 1024) /* chunked bodies */
/* Connections libmicrohttpd may hold beyond --max-connections: those are
 * answered 503 (probes are served) and closed, rather than left waiting in
 * the listen backlog with no answer. Past these, new connections wait. */
#define CONNECTION_OVERFLOW 16u

_Static_assert(ROUTE_COUNT <= METRICS_MAX_ROUTES, "raise METRICS_MAX_ROUTES to label every route");

/* One HTTP request, from its headers to its completion callback. */
typedef struct request {
    server_ctx *srv;
    struct MHD_Connection *conn;
    conn_entry *ce;              /* the connection's guard entry, or NULL */
    const route *route;          /* NULL: unknown path (404) */
    char method[16];             /* printable copy for the log */
    char id[REQUEST_ID_MAX + 1]; /* X-Request-Id, echoed and logged */
    int64_t start_ns;            /* mono_now_ns() at the headers */
    char *body;                  /* accumulated body (json_body routes) */
    size_t body_len;
    size_t body_cap;
    size_t body_charged;     /* of the memory budget, for the body */
    uint64_t bytes_in;       /* body bytes received, kept or not */
    bool checked;            /* admit() has run */
    bool admitted;           /* holds a --max-inflight slot */
    bool answered;           /* a response is queued */
    bool has_body;           /* the headers announce a body */
    bool body_done;          /* the body has been read in full */
    bool over_limit;         /* the body passed --max-body-bytes */
    bool queued;             /* handed to the workers; suspended */
    bool refused;            /* a 503 decided, sent once the body is in */
    bool close_after;        /* framing refused: close the connection */
    framing_verdict framing; /* of the headers as received */
    const char *nul_header;  /* name of a header that held a NUL, or NULL */
    char refusal[160];       /* its message */
    atomic_bool computed;    /* a worker has filled `reply` */
    handler_reply reply;     /* what a worker computed */
    body_stream *stream;     /* a streamed answer being sent, or NULL */
    /* What was answered, for the access log and metrics. */
    int status;
    uint64_t bytes_out;
    const char *error_code;
    size_t tokens;
} request;

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* The headers as received, for framing.h. */
typedef struct header_list {
    framing_header *items; /* owned */
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

/* Looks at the received headers: framing (framing_check) and NUL bytes
 * (framing_find_nul). False when out of memory. */
static bool inspect_headers(request *req, struct MHD_Connection *conn)
{
    int count = MHD_get_connection_values(conn, MHD_HEADER_KIND, NULL, NULL);
    if (count <= 0)
        return true;
    header_list l = {calloc((size_t)count, sizeof(framing_header)), 0, (size_t)count};
    if (l.items == NULL)
        return false;
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &l);
    req->framing = framing_check(l.items, l.n);
    size_t bad = framing_find_nul(l.items, l.n);
    if (bad < l.n)
        req->nul_header = l.items[bad].name; /* lives as long as the request */
    free(l.items);
    return true;
}

static request *request_new(server_ctx *srv, struct MHD_Connection *conn, const char *url,
                            const char *method)
{
    request *req = calloc(1, sizeof *req);
    if (req == NULL)
        return NULL;
    req->srv = srv;
    req->conn = conn;
    atomic_init(&req->computed, false);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->ce = ci != NULL ? ci->socket_context : NULL;
    req->start_ns = mono_now_ns();
    req->route = routes_find(url);
    if (!inspect_headers(req, conn)) {
        free(req);
        return NULL;
    }

    size_t i = 0;
    for (; method[i] != '\0' && i + 1 < sizeof req->method; i++) {
        unsigned char c = (unsigned char)method[i];
        req->method[i] = (c > 0x20 && c < 0x7f) ? (char)c : '?';
    }
    req->method[i] = '\0';

    const char *id = header(conn, "X-Request-Id");
    if (request_id_is_sane(id)) {
        memcpy(req->id, id, strlen(id) + 1);
    } else {
        uint64_t n = atomic_fetch_add_explicit(&srv->next_request_id, 1, memory_order_relaxed);
        request_id_generate(req->id, sizeof req->id, srv->request_id_seed, n);
    }
    const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    req->has_body = header(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL ||
                    (cl != NULL && strcmp(cl, "0") != 0);
    conn_guard_await_body(req->ce, req->has_body);
    atomic_fetch_add_explicit(&srv->metrics.in_flight, 1, memory_order_relaxed);
    return req;
}

/* Sends rep (steals rep->api.body, even on failure) with the headers every
 * response carries, and records what was sent. */
static enum MHD_Result send_reply(request *req, struct MHD_Connection *conn, handler_reply *rep)
{
    server_ctx *srv = req->srv;
    api_response *a = &rep->api;
    struct MHD_Response *resp;
    size_t len;

    if (rep->static_body != NULL) {
        const struct MHD_IoVec iov = {rep->static_body, rep->static_len};
        len = rep->static_len;
        resp = MHD_create_response_from_iovec(&iov, 1, NULL, NULL);
    } else if (a->stream.read != NULL) {
        /* Written while it is sent, a block at a time (body_stream.h);
         * bytes_out counts what the reader hands out. */
        len = 0;
        body_stream *bs = body_stream_new(&a->stream, &req->bytes_out, &req->stream);
        resp = bs == NULL
                   ? NULL
                   : MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BODY_STREAM_BLOCK,
                                                       body_stream_read, bs, body_stream_free);
        if (resp == NULL)
            body_stream_free(bs);
    } else {
        len = a->body != NULL ? a->body_len : 0;
        resp = MHD_create_response_from_buffer(len, a->body,
                                               a->body ? MHD_RESPMEM_MUST_FREE
                                                       : MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL) {
        api_response_free(a);
        return MHD_NO;
    }
    a->body = NULL; /* MHD frees it with the response */

    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                      a->content_type ? a->content_type : "application/json");
    ok = ok && MHD_add_response_header(resp, "X-Request-Id", req->id);
    if (a->status == MHD_HTTP_UNAUTHORIZED)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (a->status == MHD_HTTP_METHOD_NOT_ALLOWED && req->route != NULL)
        ok = ok &&
             MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, route_allow_header(req->route));
    if (a->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    /* Draining: let clients reconnect elsewhere. Answered before the body
     * was read: do not read up to --max-body-bytes just to keep the
     * connection. Over the connection limit: free the slot. */
    if (atomic_load(&srv->draining) || (req->has_body && !req->body_done) || req->close_after ||
        (req->ce != NULL && req->ce->over_limit))
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");

    enum MHD_Result r = MHD_NO;
    if (ok)
        r = MHD_queue_response(conn, (unsigned)a->status, resp);
    MHD_destroy_response(resp);
    if (r == MHD_YES) {
        /* The work is done: free the --max-inflight slot before the first
         * byte goes out, so that a client's next request never finds its
         * previous one still holding it. */
        if (req->admitted) {
            compute_gate_leave(srv->gate);
            req->admitted = false;
        }
        /* The client has --request-timeout to take the response. */
        conn_guard_arm(srv->guard, req->ce);
        req->answered = true;
        req->status = a->status;
        if (req->stream == NULL)
            req->bytes_out = strcmp(req->method, "HEAD") == 0 ? 0 : len;
        req->error_code = a->error_code;
        req->tokens = a->tokens;
    }
    return r;
}

/* Answers with one of api_error.h's errors, built the one way errors are
 * built (api_respond_errorf) into req->reply, which holds nothing yet
 * whenever the server refuses a request itself. */
#define send_error(req, conn, kind, ...)                                                           \
    (api_respond_errorf(&(req)->reply.api, (kind), NULL, __VA_ARGS__),                             \
     send_reply((req), (conn), &(req)->reply))

/* application/json, in any case, with optional parameters. */
static bool is_json_media_type(const char *value)
{
    static const char json[] = "application/json";
    if (value == NULL)
        return false;
    while (*value == ' ' || *value == '\t')
        value++;
    if (strncasecmp(value, json, sizeof json - 1) != 0)
        return false;
    const char *rest = value + sizeof json - 1;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    return *rest == '\0' || *rest == ';';
}

/* The declared body size, or -1 when none is declared (chunked) or it does
 * not parse (MHD refuses such requests itself). */
static long long declared_length(struct MHD_Connection *conn)
{
    const char *v = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (v == NULL || *v < '0' || *v > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n > (unsigned long long)LLONG_MAX)
        return -1;
    return (long long)n;
}

/* Writes client text s into out for an error message: visible ASCII as
 * is, other bytes percent-encoded (a path decoded by MHD or a header may
 * hold any byte, including invalid UTF-8), cut to fit with "...". */
static void printable(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (n + 4 + 3 >= cap) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        if (*p >= 0x20 && *p < 0x7f && *p != '%') {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = '\0';
}

/* Refuses with 503 (draining, over capacity, too many connections). With
 * a body coming, the answer waits until the body is in (dropped as it
 * arrives): answering first and closing would reset the connection under
 * a client still sending, which then never sees the 503 and cannot tell
 * whether its request ran. */
static enum MHD_Result refuse(request *req, struct MHD_Connection *conn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum MHD_Result refuse(request *req, struct MHD_Connection *conn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->refusal, sizeof req->refusal, fmt, ap);
    va_end(ap);
    if (req->has_body && !req->body_done) {
        req->refused = true;
        return MHD_YES;
    }
    return send_error(req, conn, API_E_UNAVAILABLE, "%s", req->refusal);
}

/* The checks that need only the headers, in the order of daemon.h.
 * Answering before the body is read makes MHD skip it (and we close the
 * connection, see send_reply). */
static enum MHD_Result admit(request *req, struct MHD_Connection *conn, const char *url,
                             const char *method)
{
    server_ctx *srv = req->srv;
    const route *r = req->route;

    req->checked = true;
    /* With a key, everything but the open probes is guarded, unknown
     * paths included: a client without the key learns nothing else. A
     * key followed by a NUL and more is not the key, whatever
     * libmicrohttpd's cut value says. */
    bool nul_in_key = req->nul_header != NULL &&
                      strcasecmp(req->nul_header, MHD_HTTP_HEADER_AUTHORIZATION) == 0;
    if (srv->cfg.api_key != NULL && (r == NULL || r->needs_auth) &&
        (nul_in_key ||
         !auth_bearer_ok(header(conn, MHD_HTTP_HEADER_AUTHORIZATION), srv->cfg.api_key)))
        return send_error(req, conn, API_E_UNAUTHORIZED,
                          "missing or wrong API key: send the header "
                          "'Authorization: Bearer <key>'");
    /* Framing two parties could read differently (RFC 9112 6.3): refuse
     * it and close the connection, whatever follows on it. */
    if (req->framing != FRAMING_OK) {
        req->close_after = true;
        return send_error(req, conn,
                          req->framing == FRAMING_UNKNOWN_CODING ? API_E_NOT_IMPLEMENTED
                                                                 : API_E_INVALID_REQUEST,
                          "%s", framing_message(req->framing));
    }
    if (req->nul_header != NULL) {
        char name[80];
        printable(name, sizeof name, req->nul_header);
        req->close_after = true;
        return send_error(req, conn, API_E_INVALID_REQUEST,
                          "the value of header %s holds a NUL byte", name);
    }
    if (r == NULL) {
        char path[160];
        printable(path, sizeof path, url);
        return send_error(req, conn, API_E_NOT_FOUND, "no route for %s (see /openapi.json)", path);
    }
    if (!route_allows(r, method))
        return send_error(req, conn, API_E_METHOD_NOT_ALLOWED,
                          "method %s is not allowed on %s (allowed: %s)", req->method, r->path,
                          route_allow_header(r));

    long long declared = declared_length(conn);
    if (declared >= 0 && (unsigned long long)declared > srv->cfg.max_body_bytes)
        return send_error(req, conn, API_E_PAYLOAD_TOO_LARGE,
                          "the request body of %lld bytes is over the limit "
                          "of %zu bytes",
                          declared, srv->cfg.max_body_bytes);
    if (r->json_body && !is_json_media_type(header(conn, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        const char *ct = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
        char type[120] = "(no Content-Type)";
        if (ct != NULL)
            printable(type, sizeof type, ct);
        return send_error(req, conn, API_E_UNSUPPORTED_MEDIA_TYPE,
                          "the body must be application/json, not %s", type);
    }
    /* A connection beyond --max-connections gets its answer and is
     * closed; the open probes are still served on it, so that liveness
     * checks pass while clients crowd the server. */
    if (req->ce != NULL && req->ce->over_limit && r->needs_auth)
        return refuse(req, conn, "too many connections (limit %u); retry shortly",
                      srv->cfg.max_connections);

    if (r->compute) {
        if (atomic_load(&srv->draining))
            return refuse(req, conn, "the server is shutting down");
        if (!compute_gate_admit(srv->gate))
            return refuse(req, conn,
                          "too many requests in flight (limit %u); retry "
                          "shortly",
                          srv->cfg.max_inflight);
        req->admitted = true;
    }

    if (r->json_body && declared > 0) {
        switch (mem_budget_reserve(&srv->budget, (size_t)declared)) {
        case API_BUDGET_NEVER:
            return send_error(req, conn, API_E_PAYLOAD_TOO_LARGE,
                              "the request body of %lld bytes is over the "
                              "memory budget of %zu bytes",
                              declared, srv->budget.total);
        case API_BUDGET_BUSY:
            return refuse(req, conn,
                          "not enough of the memory budget is free for a "
                          "%lld-byte body now; retry shortly",
                          declared);
        case API_BUDGET_GRANTED:
            break;
        }
        req->body_charged = (size_t)declared;
        req->body = malloc((size_t)declared);
        if (req->body == NULL)
            return send_error(req, conn, API_E_UNAVAILABLE, "out of memory for a %lld-byte body",
                              declared);
        req->body_cap = (size_t)declared;
    }
    return MHD_YES;
}

/* How much of a body past --max-body-bytes is read and dropped so that the
 * client still gets its 413. MHD 0.9.75 cannot queue a response while a
 * body is arriving (only before it or after it), so a chunked body that
 * passes the limit is drained up to this much more, then answered; past
 * that the connection is closed without an answer. */
static uint64_t discard_allowance(size_t max)
{
    const uint64_t floor = (uint64_t)1 << 20;
    return (uint64_t)max > floor ? (uint64_t)max : floor;
}

/* Frees the body and gives its charge back to the memory budget. */
static void drop_body(request *req)
{
    free(req->body);
    req->body = NULL;
    req->body_len = req->body_cap = 0;
    mem_budget_release(&req->srv->budget, req->body_charged);
    req->body_charged = 0;
}

/* A body without Content-Length (chunked) is charged to the memory
 * budget as its buffer grows to cap. When the budget cannot give that now,
 * the body is dropped and answered 503 once it ends (mid-body is too late
 * for any answer: libmicrohttpd 0.9.75 can only answer before or after a
 * body). Returns whether the body may grow. */
static bool charge_growth(request *req, size_t cap)
{
    if (cap <= req->body_charged)
        return true;
    size_t more = cap - req->body_charged;
    if (mem_budget_reserve(&req->srv->budget, more) == API_BUDGET_GRANTED) {
        req->body_charged += more;
        return true;
    }
    drop_body(req);
    req->refused = true;
    snprintf(req->refusal, sizeof req->refusal,
             "not enough of the memory budget (%zu bytes) is free for this "
             "body now; retry shortly",
             req->srv->budget.total);
    return false;
}

/* A chunk of body: keep it (bounded by --max-body-bytes) or drop it. */
static enum MHD_Result receive(request *req, const char *data, size_t n)
{
    size_t max = req->srv->cfg.max_body_bytes;

    req->bytes_in += n;
    if (req->answered || req->route == NULL || !req->route->json_body)
        return MHD_YES; /* answered early, or a body on a GET: drop it */
    if (req->refused) {
        /* dropped until it ends, but not without end */
        if (req->bytes_in <= (uint64_t)max + discard_allowance(max))
            return MHD_YES;
        req->status = MHD_HTTP_SERVICE_UNAVAILABLE; /* for the log */
        req->error_code = "unavailable";
        return MHD_NO;
    }
    if (!req->over_limit && n > max - req->body_len) {
        req->over_limit = true;
        drop_body(req);
    }
    if (req->over_limit) {
        if (req->bytes_in - max <= discard_allowance(max))
            return MHD_YES;
        req->status = MHD_HTTP_CONTENT_TOO_LARGE; /* for the log */
        req->error_code = "payload_too_large";
        return MHD_NO;
    }
    if (n > req->body_cap - req->body_len) {
        size_t cap = req->body_cap ? req->body_cap : BODY_INITIAL_CAP;
        while (cap - req->body_len < n)
            cap = cap > max / 2 ? max : cap * 2;
        if (!charge_growth(req, cap))
            return MHD_YES; /* refused: dropped from here on */
        char *grown = realloc(req->body, cap);
        if (grown == NULL) {
            req->status = MHD_HTTP_SERVICE_UNAVAILABLE; /* for the log */
            req->error_code = "unavailable";
            return MHD_NO;
        }
        req->body = grown;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    return MHD_YES;
}

/* Runs the route's handler on the body into req->reply, then frees the
 * body (not needed while sending). */
static void compute_reply(request *req)
{
    handler_reply *rep = &req->reply;
    memset(rep, 0, sizeof *rep);
    req->route->handler(req->srv, req->body ? req->body : "", req->body_len, rep);
    if (rep->api.status < 100 || rep->api.status > 599) {
        int bad = rep->api.status;
        api_response_free(&rep->api);
        memset(rep, 0, sizeof *rep);
        api_respond_errorf(&rep->api, API_E_INTERNAL, NULL,
                           "the handler of %s set no valid status (%d)", req->route->path, bad);
    }
    drop_body(req);
}

/* A worker's job: compute, then hand the connection back to MHD, which
 * calls on_access again to send req->reply. req may be freed as soon as
 * the connection is resumed, so that is the last thing done with it. */
static void job_run(void *arg)
{
    request *req = arg;
    struct MHD_Connection *conn = req->conn;
    compute_reply(req);
    atomic_store_explicit(&req->computed, true, memory_order_release);
    MHD_resume_connection(conn);
}

/* The pool stopped before this job ran (drain timeout): answer 503. */
static void job_cancel(void *arg)
{
    request *req = arg;
    struct MHD_Connection *conn = req->conn;
    memset(&req->reply, 0, sizeof req->reply);
    api_respond_errorf(&req->reply.api, API_E_UNAVAILABLE, NULL, "the server is shutting down");
    atomic_store_explicit(&req->computed, true, memory_order_release);
    MHD_resume_connection(conn);
}

/* compute_gate_run_inline's job: compute on this HTTP thread. */
static void compute_here(void *arg)
{
    compute_reply(arg);
}

/* The one place compute requests meet the gate: computed here when the
 * gate allows (compute_gate.h), else queued for a worker while the
 * connection is suspended. */
static enum MHD_Result dispatch_compute(request *req, struct MHD_Connection *conn)
{
    compute_gate *gate = req->srv->gate;
    const work_job here = {compute_here, NULL, req};
    if (compute_gate_run_inline(gate, req->body_len, &here))
        return send_reply(req, conn, &req->reply);

    const work_job job = {job_run, job_cancel, req};
    /* Suspend first: a worker may resume the connection at once. The pool
     * refuses jobs only once it is stopping; then the answer is a 503,
     * sent the same way as a computed one. */
    MHD_suspend_connection(conn);
    req->queued = true;
    if (!compute_gate_queue(gate, &job))
        job_cancel(req);
    return MHD_YES;
}

/* Last call: the whole body is in. Compute routes compute here (small
 * ones, see inline_begin) or go to the workers (the connection is
 * suspended meanwhile); the others answer at once. */
static enum MHD_Result finish(request *req, struct MHD_Connection *conn)
{
    req->body_done = true;
    conn_guard_await_body(req->ce, false);
    conn_guard_disarm(req->ce); /* the server's turn to work */
    if (req->refused)
        return send_error(req, conn, API_E_UNAVAILABLE, "%s", req->refusal);
    if (req->over_limit)
        return send_error(req, conn, API_E_PAYLOAD_TOO_LARGE,
                          "the request body is over the limit of %zu bytes",
                          req->srv->cfg.max_body_bytes);

    if (req->route->compute)
        return dispatch_compute(req, conn);
    compute_reply(req);
    return send_reply(req, conn, &req->reply);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
    server_ctx *srv = cls;
    request *req = *req_cls;
    (void)version;

    if (req == NULL) {
        req = request_new(srv, conn, url, method);
        if (req == NULL)
            return MHD_NO;
        *req_cls = req;
        /* With a body coming, check now so that a refusal skips it. MHD
         * closes the connection after such an early answer, so requests
         * without a body are checked on the last call instead and keep
         * their connection alive. */
        return req->has_body ? admit(req, conn, url, method) : MHD_YES;
    }
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return receive(req, upload_data, n);
    }
    if (req->answered)
        return MHD_YES;
    if (req->queued) {
        /* Resumed by a worker (or a spurious call before: keep waiting). */
        if (!atomic_load_explicit(&req->computed, memory_order_acquire))
            return MHD_YES;
        req->queued = false;
        return send_reply(req, conn, &req->reply);
    }
    if (!req->checked) {
        enum MHD_Result r = admit(req, conn, url, method);
        if (r != MHD_YES || req->answered)
            return r;
    }
    return finish(req, conn);
}

/* The status logged for a request that ended without a response. */
static int unanswered_status(enum MHD_RequestTerminationCode toe)
{
    switch (toe) {
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
        return MHD_HTTP_REQUEST_TIMEOUT;
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    default:
        return 499; /* nginx's "client closed request" */
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    server_ctx *srv = cls;
    request *req = *req_cls;
    (void)conn;

    if (req == NULL)
        return;
    *req_cls = NULL;

    /* The status the client saw: ours when the response went out (or
     * when we closed the connection on purpose), else why it ended. */
    bool delivered = req->answered && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    int status = delivered || (!req->answered && req->status != 0) ? req->status
                                                                   : unanswered_status(toe);
    if (!req->answered && req->ce != NULL && atomic_load(&req->ce->timed_out))
        status = MHD_HTTP_REQUEST_TIMEOUT; /* the watchdog closed it */
    conn_guard_await_body(req->ce, false);
    int ri = route_index(req->route);
    metrics_sample s = {
        .route = ri,
        .status = status,
        .duration_ns = mono_elapsed_ns(req->start_ns),
        .bytes_in = req->bytes_in,
        .bytes_out = delivered ? req->bytes_out : 0,
        .tokens = req->tokens,
        .error_code = req->error_code,
    };
    metrics_record(&srv->metrics, &s);
    access_entry e = {
        .method = req->method,
        .route = route_label(ri),
        .status = status,
        .duration_ns = s.duration_ns,
        .bytes_in = s.bytes_in,
        .bytes_out = s.bytes_out,
        .request_id = req->id,
    };
    log_access(srv->cfg.log_format, &e);

    if (req->admitted)
        compute_gate_leave(srv->gate);
    body_stream_detach(req->stream); /* it may outlive the request */
    /* The next request on this connection must arrive in time. */
    conn_guard_arm(srv->guard, req->ce);
    conn_guard_request_done(srv->guard); /* for the idle trim */
    api_response_free(&req->reply.api);
    drop_body(req);
    free(req);
    atomic_fetch_sub_explicit(&srv->metrics.in_flight, 1, memory_order_release);
}

/* Connections come and go: register them with the guard (deadlines and
 * the connection count). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    server_ctx *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci != NULL ? conn_guard_open(srv->guard, (int)ci->connect_fd) : NULL;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_guard_close(srv->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const server_ctx *srv = cls;
    log_vmsg(srv->cfg.log_format, "warn", fmt, ap);
}

int daemon_start(server_ctx *srv)
{
    const server_config *cfg = &srv->cfg;
    char port[16];
    snprintf(port, sizeof port, "%u", cfg->port);

    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai != 0) {
        log_msg(cfg->log_format, "error", "--host %s: %s", cfg->host, gai_strerror(gai));
        return DAEMON_EXIT_USAGE;
    }

    /* poll(), not epoll (which MHD_USE_AUTO picks on Linux): with epoll,
     * libmicrohttpd 0.9.75's MHD_quiesce_daemon marks the workers quiesced
     * and then removes the listen socket from each worker's epoll set,
     * while a worker that wakes in between removes it itself; quiesce then
     * meets ENOENT and aborts the process ("Failed to remove listen FD
     * from epoll set"), seen on SIGTERM right after a burst of aborted
     * uploads. With poll, quiesce only signals the workers. */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned backlog = cfg->max_connections < 128 ? 128 : cfg->max_connections;
    /* MHD warns about a pool of 1 (that is one internal thread, no pool),
     * so the option is passed only for a real pool. */
    struct MHD_OptionItem pool[2] = {
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)cfg->threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };

    /* Metrics learn the routes' labels here; they never see the table. */
    for (int i = 0; i < ROUTE_COUNT; i++)
        srv->route_labels[i] = route_label(i);
    metrics_init(&srv->metrics, srv->route_labels, ROUTE_COUNT);
    srv->guard = conn_guard_new(cfg->max_connections, cfg->request_timeout_s, cfg->log_format,
                                &srv->metrics.in_flight);
    const compute_gate_config gc = {
        .max_inflight = cfg->max_inflight,
        .workers = cfg->workers,
        .http_threads = cfg->threads,
        .omp_threads = srv->facts.omp_threads,
    };
    srv->gate = srv->guard != NULL ? compute_gate_new(&gc) : NULL;
    if (srv->gate == NULL) {
        freeaddrinfo(ai);
        log_msg(cfg->log_format, "error", "cannot start the worker threads");
        conn_guard_free(srv->guard);
        srv->guard = NULL;
        return DAEMON_EXIT_FAILURE;
    }
    unsigned limit = cfg->max_connections > UINT_MAX - CONNECTION_OVERFLOW
                         ? UINT_MAX
                         : cfg->max_connections + CONNECTION_OVERFLOW;

    srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_EXTERNAL_LOGGER,
                                   on_mhd_log, srv, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                   MHD_OPTION_ARRAY, cfg->threads > 1 ? pool : pool + 1,
                                   MHD_OPTION_CONNECTION_LIMIT, limit,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
                                   MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->connection_memory,
                                   MHD_OPTION_LISTEN_BACKLOG_SIZE, backlog,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                   MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
                                   MHD_OPTION_END);
    freeaddrinfo(ai);
    if (srv->daemon == NULL) {
        log_msg(cfg->log_format, "error", "cannot listen on %s port %u", cfg->host, cfg->port);
        compute_gate_free(srv->gate);
        srv->gate = NULL;
        conn_guard_free(srv->guard);
        srv->guard = NULL;
        return DAEMON_EXIT_FAILURE;
    }

    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info != NULL ? info->port : cfg->port;
    bool v6 = strchr(cfg->host, ':') != NULL;
    log_msg(cfg->log_format, "info",
            "listening on %s%s%s:%u with %u HTTP threads, %u workers, max %u "
            "connections",
            v6 ? "[" : "", cfg->host, v6 ? "]" : "", bound, cfg->threads, cfg->workers,
            cfg->max_connections);
    printf("posenc listening on http://%s%s%s:%u\n", v6 ? "[" : "", cfg->host, v6 ? "]" : "",
           bound);
    fflush(stdout);
    return 0;
}

int daemon_quiesce(server_ctx *srv)
{
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);
    if (fd == MHD_INVALID_SOCKET)
        return -1;
    /* MHD no longer accepts, but the kernel would still queue new
     * connections until the socket is closed, and those clients would
     * hang. Shutting the socket down refuses them at once (and resets the
     * ones already queued) so they retry elsewhere; the descriptor stays
     * ours until daemon_stop closes it, as MHD requires. */
    shutdown(fd, SHUT_RDWR);
    return (int)fd;
}

void daemon_stop(server_ctx *srv, int listen_fd)
{
    /* Every suspended connection must be resumed before MHD stops: the
     * running jobs finish, the queued ones are answered 503. */
    compute_gate_stop(srv->gate);
    if (srv->daemon != NULL)
        MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    compute_gate_free(srv->gate);
    srv->gate = NULL;
    conn_guard_free(srv->guard); /* after MHD: it reports closed sockets */
    srv->guard = NULL;
    if (listen_fd >= 0)
        close(listen_fd);
}

const char *daemon_library_version(void)
{
    return MHD_get_version();
}

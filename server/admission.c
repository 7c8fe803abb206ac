/*
 * admission.c - the checks on a request's headers (see admission.h).
 *
 * Answering before the body is read makes MHD skip it (and the
 * connection is closed, see reply.h).
 */
#include "admission.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "auth.h"
#include "compute_gate.h"
#include "mem_budget.h"
#include "printable.h"
#include "reply.h"

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
static long long declared_length(const http_request *req)
{
    const char *v = req_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (v == NULL || *v < '0' || *v > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n > (unsigned long long)LLONG_MAX)
        return -1;
    return (long long)n;
}

int admission_refuse(http_request *req, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->refusal, sizeof req->refusal, fmt, ap);
    va_end(ap);
    /* Answering first and closing would reset the connection under a
     * client still sending, which then never sees the 503 and cannot tell
     * whether its request ran. */
    if (req->has_body) {
        req_set_state(req, REQ_REFUSED);
        return MHD_YES;
    }
    return reply_error(req, false, API_E_UNAVAILABLE, "%s", req->refusal);
}

/* Admission's verdict so far: -1 to go on, else what to return. */
#define ADMIT_GO_ON (-1)

/* What is wrong whatever the route: the API key, the framing, a NUL. */
static int check_message(http_request *req)
{
    server_ctx *srv = req->srv;
    const route *r = req->route;
    /* With a key, everything but the open probes is guarded, unknown
     * paths included: a client without the key learns nothing else. A
     * key followed by a NUL and more is not the key, whatever
     * libmicrohttpd's cut value says. */
    bool nul_in_key = req->nul_header != NULL &&
                      strcasecmp(req->nul_header, MHD_HTTP_HEADER_AUTHORIZATION) == 0;
    /* A message that breaks RFC 9112 closes its connection whatever the
     * answer: what follows on it cannot be trusted to be a request. */
    bool broken = req->malformed[0] != '\0' || req->framing != FRAMING_OK ||
                  req->nul_header != NULL;
    if (srv->cfg.api_key != NULL && (r == NULL || r->needs_auth) &&
        (nul_in_key ||
         !auth_bearer_ok(req_header(req, MHD_HTTP_HEADER_AUTHORIZATION), srv->cfg.api_key)))
        return reply_error(req, req->has_body || broken, API_E_UNAUTHORIZED,
                           "missing or wrong API key: send the header "
                           "'Authorization: Bearer <key>'");
    if (req->malformed[0] != '\0')
        return reply_error(req, true, API_E_INVALID_REQUEST, "%s", req->malformed);
    /* Framing two parties could read differently (RFC 9112 6.3): refuse
     * it and close the connection, whatever follows on it. */
    if (req->framing != FRAMING_OK)
        return reply_error(req, true,
                           req->framing == FRAMING_UNKNOWN_CODING ||
                                   req->framing == FRAMING_CODING_SPELLING
                               ? API_E_NOT_IMPLEMENTED
                               : API_E_INVALID_REQUEST,
                           "%s", framing_message(req->framing));
    if (req->nul_header != NULL) {
        char name[80];
        printable_text(name, sizeof name, req->nul_header);
        return reply_error(req, true, API_E_INVALID_REQUEST,
                           "the value of header %s holds a NUL byte", name);
    }
    /* libmicrohttpd answers exactly "100-continue" (in any case) and
     * ignores anything else, leaving a client waiting for a 100 that never
     * comes: RFC 9110 10.1.1's 417 says so at once. */
    const char *expect = req_header(req, MHD_HTTP_HEADER_EXPECT);
    if (expect != NULL && strcasecmp(expect, "100-continue") != 0) {
        char value[80];
        printable_text(value, sizeof value, expect);
        return reply_error(req, true, API_E_EXPECTATION_FAILED,
                           "the only expectation met is 100-continue, not '%s'", value);
    }
    return ADMIT_GO_ON;
}

/* Route, method, declared size and media type. */
static int check_route(http_request *req, const char *url, const char *method, long long declared)
{
    const route *r = req->route;
    const bool early = req->has_body;
    if (r != NULL && req->on_probe_port && !r->probe) {
        char path[160];
        printable_text(path, sizeof path, url);
        return reply_error(req, early, API_E_NOT_FOUND,
                           "the probe port serves only /healthz, /readyz and /metrics, not %s",
                           path);
    }
    if (r == NULL) {
        char path[160];
        printable_text(path, sizeof path, url);
        return reply_error(req, early, API_E_NOT_FOUND, "no route for %s (see /openapi.json)",
                           path);
    }
    if (!route_allows(r, method))
        return reply_error(req, early, API_E_METHOD_NOT_ALLOWED,
                           "method %s is not allowed on %s (allowed: %s)", req->method, r->path,
                           route_allow_header(r));
    size_t max = req->srv->cfg.max_body_bytes;
    if (declared >= 0 && (unsigned long long)declared > max)
        return reply_error(req, early, API_E_PAYLOAD_TOO_LARGE,
                           "the request body of %lld bytes is over the limit of %zu bytes",
                           declared, max);
    const char *ct = req_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (r->json_body && !is_json_media_type(ct)) {
        char type[120] = "(no Content-Type)";
        if (ct != NULL)
            printable_text(type, sizeof type, ct);
        return reply_error(req, early, API_E_UNSUPPORTED_MEDIA_TYPE,
                           "the body must be application/json, not %s", type);
    }
    return ADMIT_GO_ON;
}

/* The connection limit, draining and --max-inflight (a free slot now; it
 * is taken once the body is in, see request.h). */
static int check_capacity(http_request *req)
{
    server_ctx *srv = req->srv;
    const route *r = req->route;
    /* A connection beyond --max-connections gets its answer and is
     * closed; the open probes are still served on it, so that liveness
     * checks pass while clients crowd the server. */
    if (req->ce != NULL && req->ce->over_limit && r->needs_auth)
        return admission_refuse(req, "too many connections (limit %u); retry shortly",
                                srv->cfg.max_connections);
    if (r->compute) {
        if (atomic_load(&srv->draining))
            return admission_refuse(req, "the server is shutting down");
        if (!compute_gate_has_room(srv->gate))
            return admission_refuse(req, "too many requests in flight (limit %u); retry shortly",
                                    srv->cfg.max_inflight);
    }
    req_set_state(req, REQ_RECEIVING);
    return ADMIT_GO_ON;
}

/* A declared body against the whole memory budget. Nothing is reserved
 * yet: the body is charged as its bytes arrive (body_intake.h), so that a
 * length declared and never sent holds nothing. */
static int check_declared(http_request *req, long long declared)
{
    server_ctx *srv = req->srv;
    if ((unsigned long long)declared > srv->budget.total)
        return reply_error(req, true, API_E_PAYLOAD_TOO_LARGE,
                           "the request body of %lld bytes is over the memory budget of %zu bytes",
                           declared, srv->budget.total);
    req->body_declared = (size_t)declared;
    return MHD_YES;
}

int admission_check(http_request *req, const char *url, const char *method)
{
    long long declared = declared_length(req);
    int v = check_message(req);
    if (v == ADMIT_GO_ON)
        v = check_route(req, url, method, declared);
    if (v == ADMIT_GO_ON)
        v = check_capacity(req);
    if (v != ADMIT_GO_ON)
        return v;
    if (req->route->json_body && declared > 0)
        return check_declared(req, declared);
    return MHD_YES;
}

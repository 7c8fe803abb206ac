/*
 * lifecycle.c - the access handler and the completion callback (see
 * lifecycle.h).
 */
#include "lifecycle.h"

#include <stdint.h>
#include <string.h>

#include "access_log.h"
#include "admission.h"
#include "body_intake.h"
#include "compute_dispatch.h"
#include "compute_gate.h"
#include "mono_clock.h"
#include "reply.h"
#include "request.h"

_Static_assert(ROUTE_COUNT <= METRICS_MAX_ROUTES, "raise METRICS_MAX_ROUTES to label every route");

/* Last call: the whole body is in (kept, or dropped for a refusal). */
static enum MHD_Result finish(http_request *req)
{
    conn_guard_await_body(req->ce, false);
    conn_guard_disarm(req->ce); /* the server's turn to work */
    switch (req_get_state(req)) {
    case REQ_REFUSED:
        return reply_error(req, false,
                           req->refusal_never ? API_E_PAYLOAD_TOO_LARGE : API_E_UNAVAILABLE, "%s",
                           req->refusal);
    case REQ_OVER_LIMIT:
        return reply_error(req, false, API_E_PAYLOAD_TOO_LARGE,
                           "the request body is over the limit of %zu bytes",
                           req->srv->cfg.max_body_bytes);
    default:
        break;
    }
    /* The --max-inflight slot, taken only now that the body is in: a slow
     * body holds none (request.h). */
    if (req->route->compute && !compute_gate_admit(req->srv->gate))
        return reply_error(req, false, API_E_UNAVAILABLE,
                           "too many requests in flight (limit %u); retry shortly",
                           req->srv->cfg.max_inflight);
    req_set_state(req, REQ_COMPLETE);
    return compute_dispatch(req);
}

/* What lifecycle_on_uri leaves in *req_cls for a request target it
 * refuses: why (static text, an address no request has; never written). */
static const char target_nul[] = "the path holds an encoded NUL byte (%00)";
static const char target_space[] = "the request target holds whitespace or a control character "
                                   "(RFC 9112 section 3.2 allows "
                                   "none; a space is %20)";

/* The refusal a *req_cls holds, or NULL when it is a request (or NULL). */
static const char *target_fault(const void *req_cls)
{
    return req_cls == target_nul || req_cls == target_space ? req_cls : NULL;
}

void *lifecycle_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    for (const unsigned char *c = (const unsigned char *)uri; *c; c++)
        if (*c <= 0x20 || *c == 0x7F)
            return (void *)(uintptr_t)target_space;
    size_t path = strcspn(uri, "?");
    for (const char *p = uri; (p = strstr(p, "%00")) != NULL && p < uri + path; p++)
        return (void *)(uintptr_t)target_nul;
    return NULL;
}

/* The first call: a new request. With a body coming, it is checked now so
 * that a refusal skips the body. MHD closes the connection after such an
 * early answer, so requests without a body are checked on the last call
 * instead and keep their connection alive. */
static enum MHD_Result begin(server_ctx *srv, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, void **req_cls)
{
    http_request *req = req_new(srv, conn, url, method, version, target_fault(*req_cls));
    if (req == NULL)
        return MHD_NO;
    *req_cls = req;
    return req->has_body ? admission_check(req, url, method) : MHD_YES;
}

enum MHD_Result lifecycle_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls)
{
    http_request *req = *req_cls;

    if (req == NULL || target_fault(req))
        return begin(cls, conn, url, method, version, req_cls);
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return body_intake_receive(req, upload_data, n);
    }
    switch (req_get_state(req)) {
    case REQ_ANSWERED:
    case REQ_QUEUED: /* a spurious call before the worker resumes it */
        return MHD_YES;
    case REQ_COMPUTED:
        return reply_send(req, false);
    case REQ_NEW: {
        enum MHD_Result r = admission_check(req, url, method);
        if (r != MHD_YES || req_get_state(req) == REQ_ANSWERED)
            return r;
        return finish(req);
    }
    default:
        return finish(req);
    }
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

/* The status the client saw: ours when the response went out (or when we
 * closed the connection on purpose), else why it ended. */
static int final_status(const http_request *req, bool answered, enum MHD_RequestTerminationCode toe)
{
    bool delivered = answered && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    int status = delivered || (!answered && req->status != 0) ? req->status
                                                              : unanswered_status(toe);
    if (!answered && req->ce != NULL && atomic_load(&req->ce->timed_out))
        status = MHD_HTTP_REQUEST_TIMEOUT; /* the watchdog closed it */
    return status;
}

void lifecycle_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                            enum MHD_RequestTerminationCode toe)
{
    server_ctx *srv = cls;
    http_request *req = *req_cls;
    (void)conn;

    *req_cls = NULL;
    if (req == NULL || target_fault(req))
        return; /* refused by libmicrohttpd before the access handler */

    bool answered = req_get_state(req) == REQ_ANSWERED;
    if (answered) {
        atomic_fetch_sub_explicit(&srv->metrics.sending, 1, memory_order_release);
        if (toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
            atomic_fetch_add_explicit(&srv->metrics.drain_cut, 1, memory_order_relaxed);
    }
    bool delivered = answered && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    int status = final_status(req, answered, toe);
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

    /* The next request on this connection must arrive in time. */
    conn_guard_arm(srv->guard, req->ce);
    conn_guard_request_done(srv->guard, req->ce);
    req_free(req);
}

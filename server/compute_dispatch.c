/*
 * compute_dispatch.c - where a handler runs (see compute_dispatch.h).
 */
#include "compute_dispatch.h"

#include <string.h>

#include <microhttpd.h>

#include "compute_gate.h"
#include "handlers.h"
#include "reply.h"

/* Runs the route's handler on the body into req->reply, then frees the
 * body (not needed while sending). */
static void compute_reply(http_request *req)
{
    handler_reply *rep = &req->reply;
    const handler_body body = {req->body ? req->body : "", req->body_len, req->body_charged};
    memset(rep, 0, sizeof *rep);
    req->route->handler(req->srv, &body, rep);
    if (rep->api.status < 100 || rep->api.status > 599) {
        int bad = rep->api.status;
        api_response_free(&rep->api);
        memset(rep, 0, sizeof *rep);
        api_respond_errorf(&rep->api, API_E_INTERNAL, NULL,
                           "the handler of %s set no valid status (%d)", req->route->path, bad);
    }
    req_drop_body(req);
}

/* A worker's job: compute, then hand the connection back to MHD, which
 * calls the access handler again to send req->reply. req may be freed as
 * soon as the connection is resumed, so that is the last thing done with
 * it. */
static void job_run(void *arg)
{
    http_request *req = arg;
    struct MHD_Connection *conn = req->conn;
    compute_reply(req);
    req_set_state(req, REQ_COMPUTED);
    MHD_resume_connection(conn);
}

/* The pool stopped before this job ran (drain timeout): answer 503. */
static void job_cancel(void *arg)
{
    http_request *req = arg;
    struct MHD_Connection *conn = req->conn;
    memset(&req->reply, 0, sizeof req->reply);
    api_respond_errorf(&req->reply.api, API_E_UNAVAILABLE, NULL, "the server is shutting down");
    req_set_state(req, REQ_COMPUTED);
    MHD_resume_connection(conn);
}

/* compute_gate_run_inline's job: compute on this HTTP thread. */
static void compute_here(void *arg)
{
    compute_reply(arg);
}

/* What req will cost (api.h's estimate, from the body not yet decoded):
 * where it computes and in which lane (compute_gate.h). */
static uint64_t request_cost(const http_request *req)
{
    handler_fn *h = req->route->handler;
    api_endpoint ep = h == handle_encode  ? API_ENDPOINT_ENCODE
                      : h == handle_apply ? API_ENDPOINT_APPLY
                                          : API_ENDPOINT_DIAGNOSE;
    if (h != handle_encode && h != handle_apply && h != handle_diagnose)
        return API_COST_UNKNOWN; /* a compute route this does not know */
    return api_request_cost(req->srv->svc, ep, req->body ? req->body : "", req->body_len);
}

/* The one place compute requests meet the gate: computed here when the
 * gate allows (compute_gate.h), else queued for a worker while the
 * connection is suspended. */
static int dispatch_to_gate(http_request *req)
{
    compute_gate *gate = req->srv->gate;
    const work_job here = {compute_here, NULL, req};
    uint64_t cost = request_cost(req);
    if (compute_gate_run_inline(gate, cost, &here))
        return reply_send(req, false);

    const work_job job = {job_run, job_cancel, req};
    /* Suspend first: a worker may resume the connection at once. The pool
     * refuses jobs only once it is stopping; then the answer is a 503,
     * sent the same way as a computed one. */
    MHD_suspend_connection(req->conn);
    req_set_state(req, REQ_QUEUED);
    if (!compute_gate_queue(gate, cost, &job))
        job_cancel(req);
    return MHD_YES;
}

int compute_dispatch(http_request *req)
{
    if (req->route->compute)
        return dispatch_to_gate(req);
    compute_reply(req);
    return reply_send(req, false);
}

/*
 * compute_dispatch.h - running a route's handler once its request is
 * complete: on this HTTP thread, or on a worker while the connection is
 * suspended.
 *
 * /encode, /apply and /diagnose go through the compute gate
 * (compute_gate.h) with their estimated cost (api_request_cost): cheap
 * requests on the HTTP thread itself when a permit is free and another
 * HTTP thread stays idle, the others on a worker thread of their lane
 * (light or heavy). The other routes answer on the HTTP thread at once.
 */
#ifndef SERVER_COMPUTE_DISPATCH_H
#define SERVER_COMPUTE_DISPATCH_H

#include "request.h"

/* Answers req (REQ_COMPLETE): computed and sent here, or queued for a
 * worker (REQ_QUEUED; the worker resumes the connection once req is
 * REQ_COMPUTED, and the access handler then sends req->reply). Returns
 * libmicrohttpd's MHD_YES or MHD_NO. */
int compute_dispatch(http_request *req);

#endif /* SERVER_COMPUTE_DISPATCH_H */

/*
 * request.h - one HTTP request's state, from its headers to its
 * completion callback, and the one place its states are defined.
 *
 * lifecycle.c allocates a request on the first call of the access handler
 * (req_new) and frees it in the completion callback (req_free),
 * which also runs for aborted requests. admission.c, body_intake.c,
 * compute_dispatch.c and reply.c move it between the states below, always
 * through req_set_state.
 *
 * States and transitions. All run on the connection's HTTP thread but
 * QUEUED -> COMPUTED, made by a worker (the state is atomic for it):
 *
 *   REQ_NEW         headers in; admission (admission.h) not yet run
 *     -> REQ_ANSWERED   refused by the headers (401 400 404 405 413 415 503)
 *     -> REQ_REFUSED    a 503 decided while a body is still coming
 *     -> REQ_RECEIVING  admitted
 *   REQ_RECEIVING   the body (if any) arrives and is kept, up to
 *                   --max-body-bytes, charged to the memory budget as
 *                   it arrives (a declared length is only checked against
 *                   the whole budget); no --max-inflight slot yet
 *     -> REQ_ANSWERED   the memory budget can never hold the body (413)
 *     -> REQ_REFUSED    the memory budget cannot hold it now
 *     -> REQ_OVER_LIMIT the body passed --max-body-bytes
 *     -> REQ_COMPLETE   the body is in; a compute route takes its
 *                       --max-inflight slot here (503 when none is free)
 *   REQ_OVER_LIMIT  the body is dropped as it arrives; 413 when it ends
 *     -> REQ_ANSWERED
 *   REQ_REFUSED     the body is dropped as it arrives; 503 (`refusal`)
 *                   when it ends, 413 when it could never fit the budget
 *     -> REQ_ANSWERED
 *   REQ_COMPLETE    the body is in; the answer is computed on this thread
 *     -> REQ_ANSWERED
 *     -> REQ_QUEUED     handed to a worker, the connection suspended
 *   REQ_QUEUED      on a worker (or waiting for one)
 *     -> REQ_COMPUTED   (worker) `reply` is filled, the connection resumed
 *   REQ_COMPUTED    -> REQ_ANSWERED (the HTTP thread sends `reply`)
 *   REQ_ANSWERED    a response is queued; final
 *
 * The --max-inflight slot is held exactly in COMPLETE, QUEUED and
 * COMPUTED of a compute route (req_holds_slot): a client sending its body
 * slowly holds none (admission only checks that one is free at the
 * headers, to refuse early). It is taken just before COMPLETE and given
 * back by req_set_state on
 * the way out of those states (before the answer's first byte goes out),
 * or by req_free when the request ends in one of them.
 */
#ifndef SERVER_REQUEST_H
#define SERVER_REQUEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "body_stream.h"
#include "conn_guard.h"
#include "framing.h"
#include "handlers.h"
#include "request_id.h"
#include "routes.h"
#include "server.h"

struct MHD_Connection;

typedef enum request_state {
    REQ_NEW = 0,
    REQ_RECEIVING,
    REQ_OVER_LIMIT,
    REQ_REFUSED,
    REQ_COMPLETE,
    REQ_QUEUED,
    REQ_COMPUTED,
    REQ_ANSWERED
} request_state;

typedef struct http_request {
    server_ctx *srv;             /* borrowed: outlives every request */
    struct MHD_Connection *conn; /* borrowed from libmicrohttpd */
    conn_entry *ce;              /* borrowed: the connection's guard entry, or NULL */
    const route *route;          /* static; NULL: unknown path (404) */
    _Atomic request_state state; /* see above; only through req_set_state */
    bool has_body;               /* the headers announce a body (fixed at the headers) */
    bool on_probe_port;          /* came to --probe-port (fixed at the connection) */
    char method[16];             /* printable copy for the log */
    char id[REQUEST_ID_MAX + 1]; /* X-Request-Id, echoed and logged */
    int64_t start_ns;            /* mono_now_ns() at the headers */
    char *body;                  /* owned: the accumulated body (json_body routes) */
    size_t body_len;
    size_t body_cap;
    size_t body_charged;     /* of the memory budget, for the body */
    size_t body_declared;    /* Content-Length, or 0 when none (chunked) */
    uint64_t bytes_in;       /* body bytes received, kept or not */
    framing_verdict framing; /* of the headers as received */
    const char *nul_header;  /* borrowed from MHD: a header that held a NUL, or NULL */
    char malformed[160];     /* why the request line or headers break RFC 9112, or "" */
    char refusal[160];       /* the message of a REQ_REFUSED request */
    bool refusal_never;      /* it could never fit (413), not only now (503) */
    handler_reply reply;     /* owned: what was computed (freed by req_free) */
    body_stream *stream;     /* borrowed: a streamed answer being sent, or NULL */
    /* What was answered, for the access log and metrics. */
    int status;
    uint64_t bytes_out;
    const char *error_code; /* static */
    size_t tokens;
} http_request;

/* New request for the headers just received on conn (url, method and
 * version as libmicrohttpd gives them; target_fault: why the raw request
 * target is refused (400), or NULL: a %00 in its path, which url was cut
 * at, or whitespace), counted in flight. NULL when out of memory, or when
 * the connection was shut at the end of a drain (conn_guard_request_begins):
 * the request is then neither answered nor logged. */
http_request *req_new(server_ctx *srv, struct MHD_Connection *conn, const char *url,
                      const char *method, const char *version, const char *target_fault);

/* Gives back what req holds (slot, body, reply), uncounts it and frees it;
 * accepts NULL. */
void req_free(http_request *req);

/* The request's state (acquire: a worker's reply is visible once COMPUTED
 * is seen). */
request_state req_get_state(const http_request *req);

/* Moves req to state next, giving back its --max-inflight slot when it
 * leaves the states that hold one (see above). */
void req_set_state(http_request *req, request_state next);

/* Whether req holds a --max-inflight slot now. */
bool req_holds_slot(const http_request *req);

/* Frees req's body and gives its charge back to the memory budget. */
void req_drop_body(http_request *req);

/* A request header's value (the first of that name), or NULL. */
const char *req_header(const http_request *req, const char *name);

#endif /* SERVER_REQUEST_H */

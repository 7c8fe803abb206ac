/*
 * daemon.h - the libmicrohttpd daemon: start, quiesce, stop.
 *
 * With body_stream.c, the only file that includes microhttpd.h. Each
 * request gets a struct allocated on the first call of the access handler
 * and freed in the completion callback (which also runs for aborted
 * requests). Before a handler runs, the request passes, in this order: API
 * key (401, when one is set, for every path but /healthz and /readyz,
 * unknown paths included: the contract puts it before any other check; a
 * key followed by a NUL byte is wrong), framing (framing.h: 400, or 501
 * for a transfer coding other than chunked; the connection is closed), a
 * NUL byte in any header value (400, closed), route (404), method (405),
 * declared body size (413), media type (415), then a connection past
 * --max-connections (503; the open probes are still served on it),
 * draining and capacity (503 with Retry-After), and the memory budget for
 * a declared body (mem_budget.h: 413 past the whole budget, 503 with
 * Retry-After when not free now). A 503 is sent once the body (dropped as
 * it arrives) is in, so that a client still sending reads it instead of a
 * reset. The body is otherwise accumulated up to --max-body-bytes (a
 * chunked one charged to the budget as it grows). A chunked body that
 * passes the limit is dropped from there on and answered with 413 when it
 * ends (libmicrohttpd 0.9.75 cannot answer in the middle of a body); one
 * that runs on past twice the limit (at least 1 MiB past it) has its
 * connection closed instead. A client that hangs up mid-body is noticed
 * by conn_guard.h's watchdog and its request ends (499) at once.
 *
 * /encode and /apply then go through the compute gate (compute_gate.h):
 * small requests on the HTTP thread itself when a permit is free and
 * another HTTP thread stays idle, the others on a worker thread while the
 * connection is suspended. A streamed answer is written while it is sent
 * (body_stream.h). Connections carry deadlines (conn_guard.h): a client
 * that keeps the server waiting past --request-timeout loses its
 * connection.
 */
#ifndef SERVER_DAEMON_H
#define SERVER_DAEMON_H

#include "server.h"

/* Exit statuses of daemon_start besides 0. */
#define DAEMON_EXIT_FAILURE 1 /* could not listen (port taken, ...) */
#define DAEMON_EXIT_USAGE 2   /* --host does not resolve */

/* Starts listening on cfg.host:cfg.port with the worker threads, logs and
 * prints `posenc listening on http://HOST:PORT` on stdout. Returns 0, or
 * an exit status after logging why. */
int daemon_start(server_ctx *srv);

/* Stops accepting connections (new ones are refused); running and
 * keep-alive connections go on. Returns the listening socket, to be closed
 * by daemon_stop (-1 if MHD could not quiesce; stopping still works). */
int daemon_quiesce(server_ctx *srv);

/* Ends every connection, joins the worker threads (running computations
 * finish first; queued ones are answered 503) and closes listen_fd when it
 * is >= 0. */
void daemon_stop(server_ctx *srv, int listen_fd);

/* The version of the libmicrohttpd in use, e.g. "0.9.75". */
const char *daemon_library_version(void);

#endif /* SERVER_DAEMON_H */

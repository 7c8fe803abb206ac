/*
 * daemon.h - the libmicrohttpd daemon: start, quiesce, stop.
 *
 * What a request goes through is spread over files with one purpose each:
 * request.h (its state, the one list of states and transitions),
 * lifecycle.h (libmicrohttpd's callbacks, which move it along),
 * admission.h (the checks on its headers, in their order), body_intake.h
 * (its body, bounded), compute_dispatch.h (where its handler runs) and
 * reply.h (its response). A client that hangs up mid-body is noticed by
 * conn_guard.h's watchdog and its request ends (499) at once. A streamed
 * answer is written while it is sent (body_stream.h). Connections carry
 * deadlines (conn_guard.h): a client that keeps the server waiting past
 * --request-timeout loses its connection; one closed while its client may
 * still be sending gets a lingering close (linger.h). With --probe-port, a
 * second daemon on its own thread serves the probe routes.
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

/*
 * shutdown.h - signals and the graceful stop.
 *
 * SIGTERM and SIGINT are blocked in every thread and taken synchronously
 * by the main thread with sigwait, so no code runs in signal-handler
 * context. On the first one the server drains: /readyz turns 503, new
 * /encode and /apply requests get 503, new connections are refused, and
 * requests in progress get up to --drain-timeout seconds to finish
 * (responses then carry `Connection: close`), and answers already being
 * sent then get --drain-send-timeout seconds more (the defaults, 6 + 3,
 * stay under Docker's 10 s); idle keep-alive connections are shut at the
 * end, before the stop, so that no request is read that would then be cut,
 * and the answers cut are counted and logged. A second signal cuts
 * the wait short. A handler
 * still computing when the wait ends finishes before the workers stop
 * (compute runs on the worker threads and cannot be interrupted); its
 * response is dropped.
 */
#ifndef SERVER_SHUTDOWN_H
#define SERVER_SHUTDOWN_H

#include <signal.h>
#include <stdbool.h>

#include "server.h"

/* Blocks SIGTERM and SIGINT in the calling thread (call it before any
 * other thread starts, so that all inherit the mask), fills *set with
 * them, and ignores SIGPIPE. Returns 0, or -1 after logging. */
int shutdown_block_signals(sigset_t *set, log_format fmt);

/* Waits for a stop signal in *set (SIGTERM or SIGINT; SIGHUP, SIGUSR1 and
 * SIGUSR2 are logged and ignored: see shutdown.c), then drains and stops
 * the daemon. */
void shutdown_wait_and_drain(server_ctx *srv, const sigset_t *set);

/* A watch on *set while the models load, before there is anything to
 * drain: a stop signal then ends the process at once (exit status 0, as
 * any SIGTERM stop) instead of waiting for the load to end; the signals
 * that are no stop are logged and ignored. NULL when no thread could be
 * started (then signals wait for the load, as before). */
typedef struct shutdown_watch shutdown_watch;
shutdown_watch *shutdown_watch_start(const sigset_t *set, log_format fmt);

/* Ends the watch (accepts NULL); a stop signal that comes later stays
 * pending for shutdown_wait_and_drain. */
void shutdown_watch_end(shutdown_watch *w);

#endif /* SERVER_SHUTDOWN_H */

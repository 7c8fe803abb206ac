/*
 * shutdown.c - signal handling and the drain on SIGTERM (see shutdown.h).
 */
#include "shutdown.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "access_log.h"
#include "mono_clock.h"
#include "daemon.h"

#define DRAIN_POLL_NS 20000000L /* 20 ms between looks at the counter */

int shutdown_block_signals(sigset_t *set, log_format fmt)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    int rc = pthread_sigmask(SIG_BLOCK, set, NULL);
    if (rc != 0) {
        log_msg(fmt, "error", "cannot block signals: %s", strerror(rc));
        return -1;
    }
    /* MHD sends with MSG_NOSIGNAL on Linux; this covers everything else. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

void shutdown_wait_and_drain(server_ctx *srv, const sigset_t *set)
{
    const log_format fmt = srv->cfg.log_format;
    int sig = 0;
    while (sigwait(set, &sig) != 0) {
    }

    const int64_t t0 = mono_now_ns();
    log_msg(fmt, "info", "%s: draining (up to %u s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
            srv->cfg.drain_timeout_s);
    atomic_store(&srv->draining, true);
    int listen_fd = daemon_quiesce(srv);

    /* Requests in flight are those whose headers arrived and whose
     * response is not yet fully sent; idle keep-alive connections do not
     * count and are closed by daemon_stop. */
    const struct timespec poll = {0, DRAIN_POLL_NS};
    unsigned left;
    while ((left = atomic_load_explicit(&srv->metrics.in_flight, memory_order_acquire)) > 0) {
        if (mono_seconds_since(t0) >= (double)srv->cfg.drain_timeout_s) {
            log_msg(fmt, "warn", "drain timeout: stopping with %u requests in flight", left);
            break;
        }
        int again = sigtimedwait(set, NULL, &poll);
        if (again > 0) {
            log_msg(fmt, "warn", "second signal: stopping with %u requests in flight", left);
            break;
        }
        if (again < 0 && errno != EAGAIN && errno != EINTR)
            break;
    }
    daemon_stop(srv, listen_fd);
    log_msg(fmt, "info", "stopped after %.3f s of draining", mono_seconds_since(t0));
}

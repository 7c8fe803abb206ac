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

/* Waits, a look every DRAIN_POLL_NS, while *count > 0 and until `until`
 * seconds after t0. Returns false when a second signal cut it short. */
static bool wait_while(const atomic_uint *count, const sigset_t *set, int64_t t0, double until)
{
    const struct timespec poll = {0, DRAIN_POLL_NS};
    while (atomic_load_explicit(count, memory_order_acquire) > 0 &&
           mono_seconds_since(t0) < until) {
        int again = sigtimedwait(set, NULL, &poll);
        if (again > 0)
            return false;
        if (again < 0 && errno != EAGAIN && errno != EINTR)
            break;
    }
    return true;
}

void shutdown_wait_and_drain(server_ctx *srv, const sigset_t *set)
{
    const log_format fmt = srv->cfg.log_format;
    int sig = 0;
    while (sigwait(set, &sig) != 0) {
    }

    const int64_t t0 = mono_now_ns();
    const double drain = (double)srv->cfg.drain_timeout_s;
    const double send = drain + (double)srv->cfg.drain_send_timeout_s;
    log_msg(fmt, "info", "%s: draining (up to %u s, then %u s for answers being sent)",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", srv->cfg.drain_timeout_s,
            srv->cfg.drain_send_timeout_s);
    atomic_store(&srv->draining, true);
    int listen_fd = daemon_quiesce(srv);

    /* Requests in flight are those whose headers arrived and whose
     * response is not yet fully sent; idle keep-alive connections do not
     * count and are closed by daemon_stop. Past --drain-timeout, answers
     * already going out (computed, being sent: a large one to a client
     * reading at its pace) get --drain-send-timeout more; requests not
     * answered by then are not waited for. */
    const metrics *m = &srv->metrics;
    bool calm = wait_while(&m->in_flight, set, t0, drain);
    unsigned left = atomic_load(&m->in_flight);
    if (calm && left > 0) {
        log_msg(fmt, "warn", "drain timeout with %u requests in flight, %u of them being sent",
                left, atomic_load(&m->sending));
        calm = wait_while(&m->sending, set, t0, send);
    }
    left = atomic_load(&m->in_flight);
    if (!calm)
        log_msg(fmt, "warn", "second signal: stopping with %u requests in flight", left);
    daemon_stop(srv, listen_fd);
    /* Counted as they end, in daemon_stop (posenc_drain_cut_responses_total
     * for whoever scraped last; the log line for everyone). */
    unsigned long long cut = (unsigned long long)atomic_load(&m->drain_cut);
    log_msg(fmt, "info",
            "stopped after %.3f s of draining (%u requests cut, %llu of them answers being sent)",
            mono_seconds_since(t0), left, cut);
}

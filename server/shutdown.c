/*
 * shutdown.c - signal handling and the drain on SIGTERM (see shutdown.h).
 */
#include "shutdown.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "access_log.h"
#include "conn_guard.h"
#include "mono_clock.h"
#include "daemon.h"

#define DRAIN_POLL_NS 20000000L /* 20 ms between looks at the counter */

int shutdown_block_signals(sigset_t *set, log_format fmt)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
    int rc = pthread_sigmask(SIG_BLOCK, set, NULL);
    if (rc != 0) {
        log_msg(fmt, "error", "cannot block signals: %s", strerror(rc));
        return -1;
    }
    /* MHD sends with MSG_NOSIGNAL on Linux; this covers everything else. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* SIGHUP is ignored, not a stop: posenc has nothing to reload (flags and
 * models are fixed at start) and no log file to reopen (it writes to
 * stdout and stderr), while supervisors and tools send SIGHUP to mean
 * "reload" (systemctl reload, logrotate's postrotate, `docker kill -s
 * HUP`): taking the server down, or even draining it, would turn a
 * routine reload into lost capacity. Stopping is SIGTERM's (or SIGINT's)
 * job, which every supervisor sends. SIGUSR1 and SIGUSR2 have no meaning
 * here either. Each is logged, so that whoever sent it sees it arrived. */
static bool is_stop(int sig, log_format fmt)
{
    if (sig == SIGTERM || sig == SIGINT)
        return true;
    log_msg(fmt, "info",
            "%s: ignored (posenc stops on SIGTERM or SIGINT and has nothing to reload)",
            sig == SIGHUP    ? "SIGHUP"
            : sig == SIGUSR1 ? "SIGUSR1"
                             : "SIGUSR2");
    return false;
}

/* The next stop signal of *set, waiting up to *timeout (NULL: for ever);
 * the signals that are no stop are logged on the way. 0 when none came. */
static int next_stop(const sigset_t *set, const struct timespec *timeout, log_format fmt)
{
    for (;;) {
        int sig = timeout ? sigtimedwait(set, NULL, timeout) : sigwaitinfo(set, NULL);
        if (sig < 0 && errno == EINTR)
            continue;
        if (sig < 0)
            return 0;
        if (is_stop(sig, fmt))
            return sig;
    }
}

/* Waits, a look every DRAIN_POLL_NS, while *count > 0 and until `until`
 * seconds after t0. Returns false when a second signal cut it short. */
static bool wait_while(const atomic_uint *count, const sigset_t *set, int64_t t0, double until,
                       log_format fmt)
{
    const struct timespec poll = {0, DRAIN_POLL_NS};
    while (atomic_load_explicit(count, memory_order_acquire) > 0 &&
           mono_seconds_since(t0) < until) {
        if (next_stop(set, &poll, fmt) != 0)
            return false;
    }
    return true;
}

void shutdown_wait_and_drain(server_ctx *srv, const sigset_t *set)
{
    const log_format fmt = srv->cfg.log_format;
    int sig = next_stop(set, NULL, fmt);

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
    bool calm = wait_while(&m->in_flight, set, t0, drain, fmt);
    unsigned left = atomic_load(&m->in_flight);
    if (calm && left > 0) {
        log_msg(fmt, "warn", "drain timeout with %u requests in flight, %u of them being sent",
                left, atomic_load(&m->sending));
        calm = wait_while(&m->sending, set, t0, send, fmt);
    }
    /* Idle keep-alive connections are shut before the stop: a request
     * arriving on one between the last look at the counter and
     * daemon_stop would be read and logged, then cut unanswered (the soak
     * saw one). From here on no request starts; the few that started
     * before the shut get their answer (the drain's 503, mostly) out,
     * within the same deadline. */
    conn_guard_close_idle(srv->guard);
    if (calm && left == 0)
        calm = wait_while(&m->in_flight, set, t0, send, fmt);
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

struct shutdown_watch {
    pthread_t thread;
    const sigset_t *set; /* borrowed: main's */
    log_format fmt;
    atomic_bool done;
};

/* The watch's thread: a look at `done` every DRAIN_POLL_NS. */
static void *watch_loading(void *arg)
{
    shutdown_watch *w = arg;
    const struct timespec poll = {0, DRAIN_POLL_NS};
    while (!atomic_load_explicit(&w->done, memory_order_acquire)) {
        int sig = next_stop(w->set, &poll, w->fmt);
        if (sig != 0) {
            /* nothing is served yet: nothing to drain; the loading
             * threads are cut where they are (_exit runs no handlers) */
            log_msg(w->fmt, "info", "%s while loading models: stopped before serving",
                    sig == SIGTERM ? "SIGTERM" : "SIGINT");
            _exit(0);
        }
    }
    return NULL;
}

shutdown_watch *shutdown_watch_start(const sigset_t *set, log_format fmt)
{
    shutdown_watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->set = set;
    w->fmt = fmt;
    atomic_init(&w->done, false);
    if (pthread_create(&w->thread, NULL, watch_loading, w) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

void shutdown_watch_end(shutdown_watch *w)
{
    if (w == NULL)
        return;
    atomic_store_explicit(&w->done, true, memory_order_release);
    pthread_join(w->thread, NULL);
    free(w);
}

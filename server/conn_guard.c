/*
 * conn_guard.c - connection registry, deadlines and the watchdog thread
 * (see conn_guard.h).
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "conn_guard.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "access_log.h"
#include "heap_policy.h"
#include "linger.h"
#include "mono_clock.h"

#define WATCH_PERIOD_NS 100000000L /* the watchdog looks every 100 ms */
/* Freed heap memory goes back to the system once no request has run for
 * this long (heap_policy.h). Long against the gaps inside a burst of
 * requests, short against a person's wait for memory to come back; the
 * soak (tests/soak/run.sh) reads resident memory 2 s after its load. */
#define IDLE_TRIM_NS 1000000000LL

struct conn_guard {
    pthread_mutex_t lock; /* the list, open count, stopping */
    pthread_cond_t wake;  /* stop request */
    conn_entry *head;
    unsigned open;
    unsigned max_connections;
    int64_t timeout_ns; /* 0 = no deadlines */
    log_format fmt;
    bool stopping;
    bool thread_started;
    atomic_bool closing_idle; /* conn_guard_close_idle has run */
    pthread_t thread;
    lingerer *linger;               /* owned: lingering closes */
    const atomic_uint *in_flight;   /* requests under way (the daemon's) */
    _Atomic uint64_t requests_done; /* ever, for the idle trim */
    _Atomic uint64_t timed_out;
    _Atomic uint64_t over_limit;
};

/* Shuts down every socket past its deadline. Under the lock: an entry in
 * the list has a descriptor libmicrohttpd has not closed yet. */
static unsigned expire(conn_guard *g, int64_t now)
{
    unsigned n = 0;
    for (conn_entry *e = g->head; e != NULL; e = e->next) {
        int64_t d = atomic_load_explicit(&e->deadline_ns, memory_order_relaxed);
        if (d == 0 || now < d || atomic_load(&e->timed_out))
            continue;
        atomic_store(&e->timed_out, true);
        shutdown(e->fd, SHUT_RDWR);
        n++;
    }
    return n;
}

/* Whether the client of fd has shut down its side and left nothing to
 * read: a body still awaited from it can never arrive. */
static bool peer_hung_up(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) != 1 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0)
        return false;
    int unread = 0;
    return ioctl(fd, FIONREAD, &unread) != 0 || unread == 0;
}

/* Shuts down every socket whose client hung up in the middle of a body
 * (see conn_guard.h). Under the lock, as expire(). */
static void reap_hung_up(conn_guard *g)
{
    for (conn_entry *e = g->head; e != NULL; e = e->next) {
        if (!atomic_load(&e->awaiting_body) || atomic_load(&e->peer_gone) ||
            atomic_load(&e->timed_out) || !peer_hung_up(e->fd))
            continue;
        atomic_store(&e->peer_gone, true);
        shutdown(e->fd, SHUT_RDWR);
    }
}

/* The watchdog's view of the heap, for the idle trim. */
typedef struct idle_trim {
    uint64_t seen_done; /* requests_done when last looked at */
    int64_t idle_since; /* mono_now_ns() of the last activity seen */
    bool dirty;         /* requests ran since the last trim */
} idle_trim;

/* Whether the heap should be trimmed now: requests ran since the last
 * trim, and none has run or finished for IDLE_TRIM_NS. */
static bool idle_trim_due(conn_guard *g, idle_trim *t, int64_t now)
{
    uint64_t done = atomic_load_explicit(&g->requests_done, memory_order_relaxed);
    bool busy = g->in_flight != NULL &&
                atomic_load_explicit(g->in_flight, memory_order_relaxed) > 0;
    if (done != t->seen_done || busy) {
        t->dirty = t->dirty || done != t->seen_done;
        t->seen_done = done;
        t->idle_since = now;
        return false;
    }
    if (!t->dirty || now - t->idle_since < IDLE_TRIM_NS)
        return false;
    t->dirty = false;
    return true;
}

static void *watchdog_main(void *arg)
{
    conn_guard *g = arg;
    idle_trim trim = {.idle_since = mono_now_ns()};

    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_PERIOD_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&g->wake, &g->lock, &until);
        if (g->stopping)
            break;
        if (rc != 0 && rc != ETIMEDOUT)
            continue;
        int64_t now = mono_now_ns();
        unsigned n = g->timeout_ns > 0 ? expire(g, now) : 0;
        reap_hung_up(g);
        pthread_mutex_unlock(&g->lock);

        if (n > 0) {
            atomic_fetch_add(&g->timed_out, n);
            log_msg(g->fmt, "warn",
                    "closed %u connection%s that kept the server waiting past "
                    "--request-timeout (%lld s)",
                    n, n == 1 ? "" : "s", (long long)(g->timeout_ns / 1000000000LL));
        }
        /* Freed memory stays in the heaps for the next requests while the
         * server is busy, and goes back once it is idle (heap_policy.h). */
        if (idle_trim_due(g, &trim, now))
            heap_policy_trim();
        pthread_mutex_lock(&g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

conn_guard *conn_guard_new(unsigned max_connections, unsigned request_timeout_s, log_format fmt,
                           const atomic_uint *in_flight)
{
    conn_guard *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    g->max_connections = max_connections;
    g->timeout_ns = (int64_t)request_timeout_s * 1000000000LL;
    g->fmt = fmt;
    g->in_flight = in_flight;
    atomic_init(&g->requests_done, 0);
    atomic_init(&g->timed_out, 0);
    atomic_init(&g->over_limit, 0);
    atomic_init(&g->closing_idle, false);
    g->linger = linger_new();
    if (g->linger == NULL || pthread_create(&g->thread, NULL, watchdog_main, g) != 0) {
        conn_guard_free(g);
        return NULL;
    }
    g->thread_started = true;
    return g;
}

void conn_guard_free(conn_guard *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->lock);
    g->stopping = true;
    pthread_cond_broadcast(&g->wake);
    pthread_mutex_unlock(&g->lock);
    if (g->thread_started)
        pthread_join(g->thread, NULL);
    linger_free(g->linger);
    while (g->head != NULL) { /* none, once the daemon has stopped */
        conn_entry *e = g->head;
        g->head = e->next;
        free(e);
    }
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->wake);
    free(g);
}

conn_entry *conn_guard_open(conn_guard *g, int fd)
{
    conn_entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->fd = fd;
    atomic_init(&e->timed_out, false);
    atomic_init(&e->deadline_ns, 0);
    atomic_init(&e->awaiting_body, false);
    atomic_init(&e->peer_gone, false);
    atomic_init(&e->linger, false);
    atomic_init(&e->phase, CONN_IDLE);
    conn_guard_arm(g, e);
    pthread_mutex_lock(&g->lock);
    e->over_limit = g->open >= g->max_connections;
    g->open++;
    e->next = g->head;
    if (g->head != NULL)
        g->head->prev = e;
    g->head = e;
    pthread_mutex_unlock(&g->lock);
    if (e->over_limit)
        atomic_fetch_add(&g->over_limit, 1);
    return e;
}

void conn_guard_close(conn_guard *g, conn_entry *e)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&g->lock);
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    g->open--;
    pthread_mutex_unlock(&g->lock);
    /* libmicrohttpd has shut down its side and closes fd after this. */
    if (atomic_load(&e->linger))
        linger_add(g->linger, e->fd);
    free(e);
}

void conn_guard_arm(conn_guard *g, conn_entry *e)
{
    if (e != NULL && g->timeout_ns > 0)
        atomic_store_explicit(&e->deadline_ns, mono_now_ns() + g->timeout_ns, memory_order_relaxed);
}

void conn_guard_await_body(conn_entry *e, bool on)
{
    if (e != NULL)
        atomic_store(&e->awaiting_body, on);
}

void conn_guard_linger(conn_entry *e)
{
    if (e != NULL)
        atomic_store(&e->linger, true);
}

void conn_guard_disarm(conn_entry *e)
{
    if (e != NULL)
        atomic_store_explicit(&e->deadline_ns, 0, memory_order_relaxed);
}

bool conn_guard_request_begins(conn_entry *e)
{
    if (e == NULL)
        return true;
    int idle = CONN_IDLE;
    return atomic_compare_exchange_strong(&e->phase, &idle, CONN_BUSY);
}

/* Shuts e's socket if it is idle; the phase decides between the request
 * beginning and this, exactly one wins. Under the lock, or from the
 * thread that owns e's current request: the descriptor is still open. */
static bool shut_if_idle(conn_entry *e)
{
    int idle = CONN_IDLE;
    if (!atomic_compare_exchange_strong(&e->phase, &idle, CONN_SHUT))
        return false;
    shutdown(e->fd, SHUT_RDWR);
    return true;
}

void conn_guard_request_done(conn_guard *g, conn_entry *e)
{
    atomic_fetch_add_explicit(&g->requests_done, 1, memory_order_relaxed);
    if (e == NULL)
        return;
    /* Sequentially consistent, as in conn_guard_close_idle: either this
     * sees closing_idle, or close_idle's scan sees the connection idle. */
    atomic_store(&e->phase, CONN_IDLE);
    if (atomic_load(&g->closing_idle))
        shut_if_idle(e);
}

unsigned conn_guard_close_idle(conn_guard *g)
{
    atomic_store(&g->closing_idle, true);
    unsigned n = 0;
    pthread_mutex_lock(&g->lock);
    for (conn_entry *e = g->head; e != NULL; e = e->next)
        n += shut_if_idle(e);
    pthread_mutex_unlock(&g->lock);
    return n;
}

void conn_guard_get_stats(conn_guard *g, conn_guard_stats *out)
{
    pthread_mutex_lock(&g->lock);
    out->open = g->open;
    pthread_mutex_unlock(&g->lock);
    out->timed_out = atomic_load(&g->timed_out);
    out->over_limit = atomic_load(&g->over_limit);
}

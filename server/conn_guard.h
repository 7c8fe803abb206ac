/*
 * conn_guard.h - every open connection, its deadline, and the thread that
 * enforces deadlines (slow clients) and the connection limit.
 *
 * libmicrohttpd's own timeout (--timeout) is an idle timeout: a client
 * that sends one byte every few seconds (slowloris) never trips it and
 * keeps its connection, and its slot under --max-connections, forever.
 * Here each connection carries a deadline, armed while the server waits
 * for the client (for the whole next request; for the client to take a
 * response) and disarmed while the server itself works (computing). A
 * watchdog thread shuts down the socket of any connection past its
 * deadline; libmicrohttpd then sees the connection end and cleans it up.
 *
 * The watchdog also notices a client that hangs up in the middle of a
 * request body. libmicrohttpd 0.9.75 (epoll, edge-triggered) can miss the
 * end of stream when it arrives together with the last bytes it reads: the
 * connection then sits in CLOSE-WAIT with its request in flight until the
 * idle timeout. While a body is awaited, the watchdog polls the socket for
 * POLLRDHUP; once the peer has shut down its side and nothing is left to
 * read, the body can never complete, and the socket is shut down, so that
 * libmicrohttpd ends the request (logged 499) at once.
 *
 * Connections marked with conn_guard_linger get a lingering close
 * (linger.h) when libmicrohttpd closes them.
 *
 * The watchdog also gives freed heap memory back once the server has been
 * idle for a second (heap_policy.h); while busy, requests reuse it.
 *
 * The same registry counts connections: one beyond --max-connections is
 * marked over the limit (libmicrohttpd is allowed a few more, so that such
 * a client gets a 503 instead of hanging in the listen backlog).
 *
 * Thread safety: open/close/arm/disarm may be called from any thread; an
 * entry is only touched by the watchdog under the registry lock, and
 * libmicrohttpd closes a socket only after conn_guard_close returns, so
 * the watchdog never shuts down a descriptor that was reused.
 */
#ifndef SERVER_CONN_GUARD_H
#define SERVER_CONN_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"

typedef struct conn_guard conn_guard;

/* One connection. Fields are private to conn_guard.c except through the
 * functions below. */
typedef struct conn_entry {
    struct conn_entry *prev, *next; /* registry list, under the lock */
    int fd;
    _Atomic int64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none */
    atomic_bool timed_out;       /* the watchdog closed it */
    atomic_bool awaiting_body;   /* a request body is still arriving */
    atomic_bool peer_gone;       /* the watchdog closed it: the client
                                       hung up mid-body */
    atomic_bool linger;          /* closed with a body maybe still coming:
                                       linger.h's lingering close */
    atomic_int phase;            /* conn_phase: between requests or not */
    bool over_limit;             /* beyond --max-connections */
} conn_entry;

/* Where a connection stands, for the end of a drain: between requests
 * (idle keep-alive), a request under way, or shut by conn_guard_close_idle
 * (no request may start on it any more). */
typedef enum conn_phase { CONN_IDLE, CONN_BUSY, CONN_SHUT } conn_phase;

/* What the watchdog reports to metrics. */
typedef struct conn_guard_stats {
    unsigned open;       /* connections open now */
    uint64_t timed_out;  /* closed for a missed deadline, ever */
    uint64_t over_limit; /* accepted beyond --max-connections, ever */
} conn_guard_stats;

/* New registry and watchdog for max_connections and request_timeout_s
 * (0 = no deadlines). in_flight (borrowed, may be NULL) counts the requests
 * under way: the idle trim waits for it to be 0. NULL when out of memory
 * or the thread cannot start. */
conn_guard *conn_guard_new(unsigned max_connections, unsigned request_timeout_s, log_format fmt,
                           const atomic_uint *in_flight);

/* Stops the watchdog and frees the registry; accepts NULL. Every
 * connection must have been closed (the daemon stopped). */
void conn_guard_free(conn_guard *g);

/* A connection opened on socket fd: new entry, deadline armed. NULL when
 * out of memory (the connection is then neither counted nor guarded). */
conn_entry *conn_guard_open(conn_guard *g, int fd);

/* The connection is closing; frees e (accepts NULL). */
void conn_guard_close(conn_guard *g, conn_entry *e);

/* Waiting for the client from now on: deadline = now + request timeout. */
void conn_guard_arm(conn_guard *g, conn_entry *e);

/* Whether a request body is still expected on e (on: from the headers of a
 * request with a body; off: once it is in). Accepts NULL. */
void conn_guard_await_body(conn_entry *e, bool on);

/* The connection will be closed while its client may still be sending (an
 * answer before the body, a body given up on): when it closes, read and
 * drop what comes for a while before the socket is closed (linger.h).
 * Accepts NULL. */
void conn_guard_linger(conn_entry *e);

/* The server is working (the request is complete): no deadline. */
void conn_guard_disarm(conn_entry *e);

/* A request's headers have arrived on e: true when it may be taken on,
 * false when the connection was shut by conn_guard_close_idle (the server
 * is stopping; the caller drops the request unread and unlogged, and the
 * connection closes). e NULL (the probe port, or no memory for an entry)
 * is never refused. */
bool conn_guard_request_begins(conn_entry *e);

/* A request on e (may be NULL) has ended: e is idle again, or shut at
 * once when conn_guard_close_idle has run. Once no request has run for a
 * second, the watchdog returns the heaps' free memory to the system
 * (heap_policy.h), once per idle period: while requests keep coming,
 * their buffers are reused. */
void conn_guard_request_done(conn_guard *g, conn_entry *e);

/* The end of a drain, before libmicrohttpd stops: every idle keep-alive
 * connection is shut now, and every other one as its request ends, so that
 * no request starts any more. Without it, a request arriving on an idle
 * connection between the drain's last look at the requests in flight and
 * the stop would be read and logged, then cut unanswered. Returns how many
 * idle connections were shut. */
unsigned conn_guard_close_idle(conn_guard *g);

void conn_guard_get_stats(conn_guard *g, conn_guard_stats *out);

#endif /* SERVER_CONN_GUARD_H */

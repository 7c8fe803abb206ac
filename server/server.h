/*
 * server.h - the server context: the one struct that owns every piece of
 * mutable state of a running posenc server.
 *
 * main() creates it after parsing flags and frees it after shutdown; MHD
 * callbacks receive it as their closure. Configuration and facts are
 * frozen before the daemon starts; what changes later (counters, the
 * draining flag) is atomic.
 */
#ifndef SERVER_SERVER_H
#define SERVER_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "config.h"
#include "metrics.h"

struct MHD_Daemon;
struct work_pool;
struct conn_guard;

typedef struct server_ctx {
    server_config cfg;          /* frozen after startup */
    api_service *svc;           /* immutable, shared by all workers */
    api_server_facts facts;     /* for GET /info; strings point below */
    char build[192];
    struct MHD_Daemon *daemon;  /* NULL until started */
    struct work_pool *pool;     /* compute workers, with the daemon */
    struct conn_guard *guard;   /* connections and deadlines, with the daemon */
    metrics metrics;
    atomic_bool draining;       /* set once on SIGTERM/SIGINT */
    atomic_uint admitted;       /* compute requests admitted right now */
    atomic_uint inline_computing; /* HTTP threads computing a request */
    atomic_uint computing;      /* requests inside api_encode/api_apply now */
    atomic_uint_fast64_t next_request_id;
    uint64_t request_id_seed;   /* random, fixed at startup */
} server_ctx;

/* New context for *cfg (copied) serving svc (built by models_load; the
 * context owns it from here on, even on failure) and the facts. Returns
 * NULL after logging why. Free with server_free. */
server_ctx *server_new(const server_config *cfg, api_service *svc);

/* Frees the context and the API service; accepts NULL. The daemon must
 * have been stopped. */
void server_free(server_ctx *srv);

/* Around each computation: share the cores between the requests computing
 * at once. A request's OpenMP team (and OpenBLAS's threads, which follow
 * it) is max(1, omp_threads / requests computing now), set on the calling
 * thread only (libgomp keeps the count per thread; nothing global changes).
 * One request alone uses every core; under load each computes on about one,
 * instead of N teams of omp_threads threads oversubscribing the machine. */
void server_compute_begin(server_ctx *srv);
void server_compute_end(server_ctx *srv);

#endif /* SERVER_SERVER_H */

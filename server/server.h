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
#include "mem_budget.h"
#include "metrics.h"

struct MHD_Daemon;
struct compute_gate;
struct conn_guard;

typedef struct server_ctx {
    server_config cfg;      /* frozen after startup */
    api_service *svc;       /* immutable, shared by all workers */
    api_server_facts facts; /* for GET /info; strings point below */
    char build[192];
    struct MHD_Daemon *daemon;                    /* NULL until started */
    struct MHD_Daemon *probe_daemon;              /* --probe-port's, or NULL */
    struct compute_gate *gate;                    /* admission and workers, with the daemon */
    struct conn_guard *guard;                     /* connections and deadlines, with the daemon */
    mem_budget budget;                            /* --max-memory */
    metrics metrics;                              /* labelled by daemon_start */
    const char *route_labels[METRICS_MAX_ROUTES]; /* static strings */
    atomic_bool draining;                         /* set once on SIGTERM/SIGINT */
    atomic_uint_fast64_t next_request_id;
    uint64_t request_id_seed; /* random, fixed at startup */
    /* The running libmicrohttpd parses headers in place, as the NUL and
     * block-end checks read them (framing_layout_is_in_place). */
    bool header_block_in_place;
} server_ctx;

/* New context for *cfg (copied) serving svc (built by models_load; the
 * context owns it from here on, even on failure) and the facts;
 * http_library names the HTTP library for /info (static). Returns NULL
 * after logging why. Free with server_free. */
server_ctx *server_new(const server_config *cfg, api_service *svc, const char *http_library);

/* Frees the context and the API service; accepts NULL. The daemon must
 * have been stopped. */
void server_free(server_ctx *srv);

#endif /* SERVER_SERVER_H */

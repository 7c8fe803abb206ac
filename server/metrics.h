/*
 * metrics.h - request counters and latency histograms, rendered in the
 * Prometheus text format 0.0.4 for GET /metrics.
 *
 * Every counter is a relaxed C11 atomic, so recording from many worker
 * threads takes no lock. Labels are bounded and told at start-up: the
 * route is an index into the labels given to metrics_init (or "other"),
 * the status a number in 100..599, the error code one of api_error.h's
 * codes. Metrics know nothing of the route table itself.
 */
#ifndef SERVER_METRICS_H
#define SERVER_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_N_BUCKETS 15                      /* finite upper bounds, +Inf is implicit */
#define METRICS_MAX_ROUTES 16                     /* labels metrics_init takes */
#define METRICS_N_ROUTES (METRICS_MAX_ROUTES + 1) /* the last one is "other" */
#define METRICS_N_STATUS 500                      /* statuses 100..599 */
#define METRICS_N_CODES 20                        /* distinct error codes */

typedef struct metrics {
    const char *const *route_labels; /* borrowed, n_routes of them */
    size_t n_routes;
    /* [route][status - 100] */
    atomic_uint_fast64_t requests[METRICS_N_ROUTES][METRICS_N_STATUS];
    /* [route][bucket]: non-cumulative; bucket N_BUCKETS is +Inf */
    atomic_uint_fast64_t latency[METRICS_N_ROUTES][METRICS_N_BUCKETS + 1];
    atomic_uint_fast64_t latency_sum_ns[METRICS_N_ROUTES];
    atomic_uint_fast64_t errors[METRICS_N_CODES + 1]; /* last: other */
    atomic_uint_fast64_t request_bytes;
    atomic_uint_fast64_t response_bytes;
    atomic_uint_fast64_t tokens;
    atomic_uint in_flight;          /* every request between headers and done */
    atomic_uint sending;            /* of those, answered: the response going out */
    atomic_uint_fast64_t drain_cut; /* answers cut by the end of a drain */
} metrics;

/* What one finished request contributes. */
typedef struct metrics_sample {
    int route;  /* route index, or -1 for "other" */
    int status; /* HTTP status sent (or logged) */
    uint64_t duration_ns;
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint64_t tokens;
    const char *error_code; /* NULL on success */
} metrics_sample;

/* Values kept elsewhere (the worker pool, the connection guard), read
 * when /metrics is rendered. */
typedef struct metrics_gauges {
    unsigned queued;                 /* compute jobs waiting for a worker */
    unsigned computing;              /* compute jobs running */
    unsigned workers;                /* --workers */
    unsigned connections;            /* open connections */
    uint64_t connections_timed_out;  /* closed by --request-timeout */
    uint64_t connections_over_limit; /* accepted past --max-connections */
    uint64_t memory_budget;          /* --max-memory */
    uint64_t memory_reserved;        /* of it, reserved now */
} metrics_gauges;

/* Zero every counter; route i is labelled route_labels[i] (borrowed: the
 * strings must outlive m), i < n_routes <= METRICS_MAX_ROUTES. */
void metrics_init(metrics *m, const char *const *route_labels, size_t n_routes);

/* Count one finished request. Thread-safe. */
void metrics_record(metrics *m, const metrics_sample *s);

/* Render every metric as Prometheus text into a new malloc'd buffer (the
 * caller frees it); returns NULL when out of memory. */
char *metrics_render(metrics *m, const metrics_gauges *g, size_t *len);

#endif /* SERVER_METRICS_H */

/*
 * compute_gate.h - the one gate of /encode and /apply: admission
 * (--max-inflight), the queue, the worker pool and the OpenMP team sizes.
 *
 * A compute request takes an admission slot once its body is in
 * (compute_gate_admit; its headers only check that one is free,
 * compute_gate_has_room, so that a slow body holds none) and gives it back
 * once its answer is queued or the request ends (compute_gate_leave).
 *
 * Where it computes depends on its estimated cost (api_request_cost, from
 * the body, before it is decoded; thresholds in compute_gate.c), never on
 * its body's size alone: a cheap request computes on the HTTP thread that
 * read it when a permit is free, nothing is queued and another HTTP thread
 * stays idle (or it is tiny: then any HTTP thread computes it)
 * (compute_gate_run_inline); the others go to a worker thread
 * (compute_gate_queue), in one of two lanes:
 *   light  below 10 ms of work;
 *   heavy  the rest (big /diagnose, /apply with scores on many tokens...).
 * Each lane holds at most --workers computations at once (inline ones
 * count as light), and there are --workers + 1 worker threads: a light
 * request never waits for a heavy one to finish, so however many long
 * requests are queued or running, a small one waits at most for the light
 * requests ahead of it (a pure load of either kind runs as before:
 * --workers at once). A lane's jobs run in arrival
 * order; each goes to the pool (work_pool.h) as a token that runs the
 * lane's oldest job, queued behind the pool's earlier tokens.
 *
 * OpenMP teams are set once per thread, never per request. libgomp keeps
 * the team size per thread, and the pool hands a job to its idle worker of
 * lowest index, so worker k computes only while k others do: it gets
 * max(1, omp_threads / (k + 1)) threads, set when it starts. That is the
 * share a request got when the size was set per request (the n-th request
 * computing at once got omp_threads / n): a request alone uses every core,
 * and under load the teams add up to about omp_threads x ln(workers)
 * instead of workers x omp_threads. An HTTP thread computes inline only
 * when nothing is queued, so usually alone: it gets the whole omp_threads,
 * set the first time it computes.
 */
#ifndef SERVER_COMPUTE_GATE_H
#define SERVER_COMPUTE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "work_pool.h"

typedef struct compute_gate compute_gate;

typedef struct compute_gate_config {
    unsigned max_inflight; /* requests admitted at once */
    unsigned workers;      /* computations of each lane at once; the
                              pool has one thread more */
    unsigned http_threads; /* libmicrohttpd threads (one stays free, but
                              for tiny bodies) */
    unsigned omp_threads;  /* team of a request computing alone (>= 1) */
} compute_gate_config;

/* What the gate reports to /metrics. */
typedef struct compute_gate_stats {
    unsigned admitted; /* holding an admission slot */
    unsigned queued;   /* waiting for a worker */
    unsigned running;  /* computing (workers and HTTP threads) */
} compute_gate_stats;

/* New gate and its worker threads. NULL when out of memory or a thread
 * cannot start. */
compute_gate *compute_gate_new(const compute_gate_config *cfg);

/* Stops the pool (see compute_gate_stop) and frees the gate; accepts
 * NULL. */
void compute_gate_free(compute_gate *g);

/* Takes an admission slot; false when --max-inflight are taken. */
bool compute_gate_admit(compute_gate *g);

/* Whether a slot is free now (taking none): a request whose headers find
 * none is refused before its body. */
bool compute_gate_has_room(compute_gate *g);

/* Gives back a slot taken by compute_gate_admit. */
void compute_gate_leave(compute_gate *g);

/* Runs job->run(job->arg) on the calling HTTP thread when a request of
 * this cost (api_request_cost) may compute here (see above); false,
 * having run nothing, otherwise. */
bool compute_gate_run_inline(compute_gate *g, uint64_t cost, const work_job *job);

/* Queues job for a worker, in the lane of its cost. False when the gate
 * is stopping (or, never with admission, its lane is full): neither
 * callback runs then. Suspend the connection before calling: a worker may
 * finish at once. */
bool compute_gate_queue(compute_gate *g, uint64_t cost, const work_job *job);

/* Refuses new jobs, cancels the queued ones and waits for the running
 * ones. Idempotent. */
void compute_gate_stop(compute_gate *g);

void compute_gate_get_stats(compute_gate *g, compute_gate_stats *out);

#endif /* SERVER_COMPUTE_GATE_H */

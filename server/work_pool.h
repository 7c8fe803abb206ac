/*
 * work_pool.h - the compute slots: a fixed set of worker threads, a
 * bounded FIFO queue of jobs, and as many compute permits as workers.
 *
 * /encode and /apply compute under a permit, so that at most --workers
 * requests compute at once, whoever runs them. A job queued here runs on a
 * worker thread; an HTTP thread may instead claim a free permit and
 * compute a small request itself (no hand-over cost), but only while
 * nothing is queued, so queued jobs are never overtaken. However long the
 * computations, the HTTP threads that are not computing stay free to read
 * requests, answer probes and metrics, and turn away excess work with a
 * 503 at once. The queue's bound is the caller's business (admission.c admits
 * at most --max-inflight requests, so the queue never holds more); a job
 * is never dropped once submitted: it either runs or is cancelled, and
 * exactly one of its two callbacks is called, once.
 *
 * A job goes to the idle worker of lowest index, so worker k runs a job
 * only while workers 0..k-1 are all busy: it is the (k+1)-th computation at
 * once. compute_gate.c gives each worker, once at start-up, an OpenMP team
 * that fits that rank.
 */
#ifndef SERVER_WORK_POOL_H
#define SERVER_WORK_POOL_H

#include <stdbool.h>

typedef struct work_pool work_pool;

/* A job: `run` computes on a worker thread; `cancel` replaces it when the
 * pool stops before the job started. Either gets `arg`. */
typedef struct work_job {
    void (*run)(void *arg);
    void (*cancel)(void *arg);
    void *arg;
} work_job;

/* New pool of n_threads workers (>= 1) whose queue holds up to capacity
 * jobs; worker k (0 .. n_threads-1) calls thread_init(k, init_arg) once
 * before its first job (may be NULL). Returns NULL when a thread cannot
 * start. */
work_pool *work_pool_new(unsigned n_threads, unsigned capacity,
                         void (*thread_init)(unsigned index, const void *arg),
                         const void *init_arg);

/* Queues a job (copied). False when the queue is full or the pool is
 * stopping: neither callback will be called then. */
bool work_pool_submit(work_pool *p, const work_job *job);

/* Takes a compute permit for the caller when one is free and no job is
 * queued; false otherwise (then queue the work instead). A true return
 * must be followed by work_pool_release. */
bool work_pool_try_claim(work_pool *p);

/* Gives back a permit taken by work_pool_try_claim. */
void work_pool_release(work_pool *p);

/* Jobs waiting, and permits in use (jobs running plus claims), right now
 * (for metrics). */
unsigned work_pool_queued(work_pool *p);
unsigned work_pool_running(work_pool *p);

/* Stops the pool: refuses new jobs, cancels the queued ones (their
 * `cancel` runs on the calling thread), waits for the running ones and
 * joins the threads. Idempotent. */
void work_pool_stop(work_pool *p);

/* Stops (if needed) and frees the pool; accepts NULL. */
void work_pool_free(work_pool *p);

#endif /* SERVER_WORK_POOL_H */

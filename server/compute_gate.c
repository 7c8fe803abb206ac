/*
 * compute_gate.c - admission, inline or queued computation, OpenMP teams
 * (see compute_gate.h).
 */
#include "compute_gate.h"

#include <stdatomic.h>
#include <stdlib.h>

#include <omp.h>
#include <pthread.h>
#include <stdint.h>

/* Where a request computes, by its estimated cost (api_request_cost, in
 * nanoseconds of computing alone). Up to INLINE_ANY_COST it computes on any
 * HTTP thread, the last idle one included: less than handing it to a
 * worker and back costs (a suspend, a wake-up, a resume through
 * libmicrohttpd's event pipe, ~50 us), and a probe arriving meanwhile
 * waits no longer than that (S1 of the benchmark, 16x64 numbers, is ~0.1
 * ms). Up to INLINE_MAX_COST it computes on an HTTP thread while another
 * stays idle. From HEAVY_COST on it is heavy: it goes to the heavy lane. */
#define INLINE_ANY_COST ((uint64_t)200 * 1000)
#define INLINE_MAX_COST ((uint64_t)1000 * 1000)
#define HEAVY_COST ((uint64_t)10 * 1000 * 1000)

/* One lane: its jobs waiting for a worker, FIFO, and how many of its
 * tokens (work_pool jobs that each run the lane's next job) are out. */
typedef struct lane {
    work_job *ring; /* owned, capacity slots */
    unsigned head, count;
    unsigned slots;  /* tokens queued in the pool or running, <= cap */
    unsigned queued; /* of them, not started yet (each will take a job) */
    unsigned cap;
    struct compute_gate *gate;
} lane;

struct compute_gate {
    compute_gate_config cfg;
    work_pool *pool;      /* owned: cfg.workers + 1 threads */
    pthread_mutex_t lock; /* the lanes */
    lane lanes[2];        /* LANE_LIGHT, LANE_HEAVY */
    bool stopping;
    atomic_uint admitted;       /* admission slots taken */
    atomic_uint inline_running; /* HTTP threads computing a request */
};

static unsigned team_of_rank(unsigned omp_threads, unsigned rank)
{
    unsigned team = omp_threads / (rank + 1);
    return team > 0 ? team : 1;
}

/* Each worker, once, before its first job (work_pool.h). */
static void worker_init(unsigned index, const void *arg)
{
    const compute_gate *g = arg;
    omp_set_num_threads((int)team_of_rank(g->cfg.omp_threads, index));
}

enum { LANE_LIGHT, LANE_HEAVY };

static void token_run(void *arg);
static void token_cancel(void *arg);

/* Under the lock: a token to the pool for each job of l that no token will
 * take, while l has a free slot. The pool's queue never fills: it holds
 * tokens only, at most both caps. */
static void lane_top_up(lane *l)
{
    while (!l->gate->stopping && l->count > l->queued && l->slots < l->cap) {
        const work_job token = {token_run, token_cancel, l};
        if (!work_pool_submit(l->gate->pool, &token))
            return;
        l->slots++;
        l->queued++;
    }
}

/* Under the lock: l's oldest job (l->count > 0). */
static work_job lane_pop(lane *l)
{
    work_job job = l->ring[l->head];
    l->head = (l->head + 1) % l->gate->cfg.max_inflight;
    l->count--;
    return job;
}

/* Under the lock: a slot of l given back (its job done, or a claim that
 * computed nothing); the next job of l, if any, gets a token. */
static void lane_done(lane *l)
{
    l->slots--;
    lane_top_up(l);
}

/* A token on a worker: runs its lane's oldest job. Every job waiting has
 * its token queued behind the pool's earlier work, so the lanes share the
 * workers in arrival order within their caps. */
static void token_run(void *arg)
{
    lane *l = arg;
    compute_gate *g = l->gate;
    pthread_mutex_lock(&g->lock);
    l->queued--;
    work_job job = lane_pop(l); /* a token is sent only for a job */
    pthread_mutex_unlock(&g->lock);
    job.run(job.arg);
    pthread_mutex_lock(&g->lock);
    lane_done(l);
    pthread_mutex_unlock(&g->lock);
}

/* The pool stopped before the token ran: its job is cancelled instead. */
static void token_cancel(void *arg)
{
    lane *l = arg;
    compute_gate *g = l->gate;
    pthread_mutex_lock(&g->lock);
    l->queued--;
    l->slots--;
    work_job job = lane_pop(l);
    pthread_mutex_unlock(&g->lock);
    job.cancel(job.arg);
}

compute_gate *compute_gate_new(const compute_gate_config *cfg)
{
    compute_gate *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->cfg = *cfg;
    if (g->cfg.omp_threads == 0)
        g->cfg.omp_threads = 1;
    if (g->cfg.workers == 0)
        g->cfg.workers = 1;
    if (g->cfg.max_inflight == 0)
        g->cfg.max_inflight = 1;
    atomic_init(&g->admitted, 0);
    atomic_init(&g->inline_running, 0);
    pthread_mutex_init(&g->lock, NULL);
    for (int i = 0; i < 2; i++) {
        lane *l = &g->lanes[i];
        l->gate = g;
        l->cap = g->cfg.workers;
        /* A lane never holds more than the requests admitted at once. */
        l->ring = calloc(g->cfg.max_inflight, sizeof *l->ring); /* owned */
    }
    /* One thread more than either lane may hold: a light request always
     * finds one that no heavy request holds. The pool's queue holds
     * tokens only, at most one per slot of both lanes. */
    if (g->lanes[0].ring != NULL && g->lanes[1].ring != NULL)
        g->pool = work_pool_new(g->cfg.workers + 1, 2 * g->cfg.workers, worker_init, g);
    if (g->pool == NULL) {
        compute_gate_free(g);
        return NULL;
    }
    return g;
}

void compute_gate_free(compute_gate *g)
{
    if (g == NULL)
        return;
    if (g->pool != NULL)
        compute_gate_stop(g);
    work_pool_free(g->pool);
    pthread_mutex_destroy(&g->lock);
    free(g->lanes[0].ring);
    free(g->lanes[1].ring);
    free(g);
}

bool compute_gate_admit(compute_gate *g)
{
    unsigned before = atomic_fetch_add(&g->admitted, 1);
    if (before < g->cfg.max_inflight)
        return true;
    atomic_fetch_sub(&g->admitted, 1);
    return false;
}

bool compute_gate_has_room(compute_gate *g)
{
    return atomic_load(&g->admitted) < g->cfg.max_inflight;
}

void compute_gate_leave(compute_gate *g)
{
    atomic_fetch_sub(&g->admitted, 1);
}

/* The calling HTTP thread's team, set once: it computes inline only when
 * nothing is queued, as if alone. Thread-local by nature (libgomp keeps
 * the size per thread), so this flag is too. */
static void set_http_thread_team(const compute_gate *g)
{
    static _Thread_local bool team_set;
    if (!team_set) {
        omp_set_num_threads((int)g->cfg.omp_threads);
        team_set = true;
    }
}

/* A light slot for the calling HTTP thread, when its lane has one free
 * and no job waiting (queued work is never overtaken). */
static bool claim_light_slot(compute_gate *g)
{
    lane *l = &g->lanes[LANE_LIGHT];
    pthread_mutex_lock(&g->lock);
    bool ok = !g->stopping && l->count == 0 && l->slots < l->cap;
    if (ok)
        l->slots++;
    pthread_mutex_unlock(&g->lock);
    return ok;
}

static void release_light_slot(compute_gate *g)
{
    pthread_mutex_lock(&g->lock);
    lane_done(&g->lanes[LANE_LIGHT]);
    pthread_mutex_unlock(&g->lock);
}

bool compute_gate_run_inline(compute_gate *g, uint64_t cost, const work_job *job)
{
    if (cost > INLINE_MAX_COST)
        return false;
    /* At least one other HTTP thread stays free for probes and 503s,
     * unless the work is too small to matter. */
    unsigned keep_free = cost <= INLINE_ANY_COST ? 0 : 1;
    unsigned n = atomic_load(&g->inline_running);
    do {
        if (n + keep_free >= g->cfg.http_threads)
            return false;
    } while (!atomic_compare_exchange_weak(&g->inline_running, &n, n + 1));
    bool claimed = claim_light_slot(g);
    if (claimed && !work_pool_try_claim(g->pool)) {
        release_light_slot(g);
        claimed = false;
    }
    if (claimed) {
        set_http_thread_team(g);
        job->run(job->arg);
        work_pool_release(g->pool);
        release_light_slot(g);
    }
    atomic_fetch_sub(&g->inline_running, 1);
    return claimed;
}

bool compute_gate_queue(compute_gate *g, uint64_t cost, const work_job *job)
{
    lane *l = &g->lanes[cost >= HEAVY_COST ? LANE_HEAVY : LANE_LIGHT];
    pthread_mutex_lock(&g->lock);
    bool ok = !g->stopping && l->count < g->cfg.max_inflight;
    if (ok) {
        l->ring[(l->head + l->count) % g->cfg.max_inflight] = *job;
        l->count++;
        lane_top_up(l);
    }
    pthread_mutex_unlock(&g->lock);
    return ok;
}

void compute_gate_stop(compute_gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->stopping = true;
    pthread_mutex_unlock(&g->lock);
    /* Queued tokens cancel their jobs; running ones finish and send no
     * more. Then the jobs no token was sent for are cancelled here. */
    work_pool_stop(g->pool);
    for (int i = 0; i < 2; i++)
        for (;;) {
            pthread_mutex_lock(&g->lock);
            bool any = g->lanes[i].count > 0;
            work_job job = any ? lane_pop(&g->lanes[i]) : (work_job){0};
            pthread_mutex_unlock(&g->lock);
            if (!any)
                break;
            job.cancel(job.arg);
        }
}

void compute_gate_get_stats(compute_gate *g, compute_gate_stats *out)
{
    out->admitted = atomic_load(&g->admitted);
    pthread_mutex_lock(&g->lock);
    out->queued = g->lanes[LANE_LIGHT].count + g->lanes[LANE_HEAVY].count;
    pthread_mutex_unlock(&g->lock);
    out->running = work_pool_running(g->pool);
}

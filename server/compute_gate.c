/*
 * compute_gate.c - admission, inline or queued computation, OpenMP teams
 * (see compute_gate.h).
 */
#include "compute_gate.h"

#include <stdatomic.h>
#include <stdlib.h>

#include <omp.h>

/* A compute request with a body up to this size may compute on the HTTP
 * thread that read it (saving the hand-over to a worker, about 50 us).
 * Bigger bodies mean long computations: they always go to the workers. */
#define INLINE_MAX_BODY ((size_t)64 * 1024)
/* A body up to this size computes on any HTTP thread, the last idle one
 * included: its work is tens of microseconds (S1 of the benchmark, 16x64
 * numbers, is 11 KiB and ~50 us), less than handing it to a worker and
 * back costs (a suspend, a wake-up, a resume through libmicrohttpd's
 * event pipe), and a probe arriving meanwhile waits no longer than that.
 * Measured: S1 +20-30% req/s on 2 cores. The worst case such a body can
 * ask for is /apply with ~3000 token_ids on the default model (tens of ms),
 * which then delays a probe on that thread by as much. */
#define ANY_THREAD_MAX_BODY ((size_t)16 * 1024)

struct compute_gate {
    compute_gate_config cfg;
    work_pool *pool;            /* owned */
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

compute_gate *compute_gate_new(const compute_gate_config *cfg)
{
    compute_gate *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->cfg = *cfg;
    if (g->cfg.omp_threads == 0)
        g->cfg.omp_threads = 1;
    atomic_init(&g->admitted, 0);
    atomic_init(&g->inline_running, 0);
    /* The queue never holds more than the requests admitted at once. */
    g->pool = work_pool_new(cfg->workers, cfg->max_inflight, worker_init, g);
    if (g->pool == NULL) {
        free(g);
        return NULL;
    }
    return g;
}

void compute_gate_free(compute_gate *g)
{
    if (g == NULL)
        return;
    work_pool_free(g->pool);
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

bool compute_gate_run_inline(compute_gate *g, size_t body_len, const work_job *job)
{
    if (body_len > INLINE_MAX_BODY)
        return false;
    /* At least one other HTTP thread stays free for probes and 503s,
     * unless the work is too small to matter. */
    unsigned keep_free = body_len <= ANY_THREAD_MAX_BODY ? 0 : 1;
    unsigned n = atomic_load(&g->inline_running);
    do {
        if (n + keep_free >= g->cfg.http_threads)
            return false;
    } while (!atomic_compare_exchange_weak(&g->inline_running, &n, n + 1));
    bool claimed = work_pool_try_claim(g->pool);
    if (claimed) {
        set_http_thread_team(g);
        job->run(job->arg);
        work_pool_release(g->pool);
    }
    atomic_fetch_sub(&g->inline_running, 1);
    return claimed;
}

bool compute_gate_queue(compute_gate *g, const work_job *job)
{
    return work_pool_submit(g->pool, job);
}

void compute_gate_stop(compute_gate *g)
{
    work_pool_stop(g->pool);
}

void compute_gate_get_stats(compute_gate *g, compute_gate_stats *out)
{
    out->admitted = atomic_load(&g->admitted);
    out->queued = work_pool_queued(g->pool);
    out->running = work_pool_running(g->pool);
}

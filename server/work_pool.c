/*
 * work_pool.c - worker threads, a FIFO ring of jobs and compute permits
 * (see work_pool.h).
 *
 * Each worker has its own condition variable and job slot. A job is handed
 * to the idle worker of lowest index when a permit is free, else queued;
 * a worker that finishes takes the queue's head itself (every worker is
 * busy then, or the job would not have been queued), and a released claim
 * hands the head to the lowest idle worker.
 */
#include "work_pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct worker {
    struct work_pool *pool;
    pthread_cond_t wake; /* a job for this worker, or the pool stops */
    work_job job;
    bool has_job; /* job is set and holds a permit */
    unsigned index;
    pthread_t thread;
} worker;

struct work_pool {
    pthread_mutex_t lock; /* everything below and every worker's slot */
    work_job *ring;       /* capacity slots */
    unsigned capacity, head, count;
    unsigned running; /* permits in use: jobs being run + claims */
    bool stopping;
    bool stopped;       /* threads joined */
    worker *workers;    /* n_threads */
    unsigned n_threads; /* started */
    void (*thread_init)(unsigned, const void *);
    const void *init_arg;
};

/* Under the lock: the queue's head to the idle worker of lowest index, as
 * long as permits and idle workers last. */
static void dispatch_queued(work_pool *p)
{
    for (unsigned i = 0; i < p->n_threads && p->count > 0; i++) {
        worker *w = &p->workers[i];
        if (w->has_job || p->running >= p->n_threads)
            continue;
        w->job = p->ring[p->head];
        p->head = (p->head + 1) % p->capacity;
        p->count--;
        w->has_job = true;
        p->running++;
        pthread_cond_signal(&w->wake);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    work_pool *p = w->pool;

    if (p->thread_init)
        p->thread_init(w->index, p->init_arg);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!w->has_job && !p->stopping)
            pthread_cond_wait(&w->wake, &p->lock);
        if (!w->has_job)
            break; /* stopping, nothing handed over */
        work_job job = w->job;
        pthread_mutex_unlock(&p->lock);
        job.run(job.arg);
        pthread_mutex_lock(&p->lock);
        w->has_job = false;
        p->running--;
        dispatch_queued(p);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

work_pool *work_pool_new(unsigned n_threads, unsigned capacity,
                         void (*thread_init)(unsigned, const void *), const void *init_arg)
{
    work_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    unsigned n = n_threads > 0 ? n_threads : 1;
    p->capacity = capacity > 0 ? capacity : 1;
    p->ring = calloc(p->capacity, sizeof *p->ring); /* owned */
    p->workers = calloc(n, sizeof *p->workers);     /* owned */
    p->thread_init = thread_init;
    p->init_arg = init_arg;
    if (p->ring == NULL || p->workers == NULL) {
        free(p->ring);
        free(p->workers);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    for (unsigned i = 0; i < n; i++) {
        worker *w = &p->workers[i];
        w->pool = p;
        w->index = i;
        pthread_cond_init(&w->wake, NULL);
    }
    for (unsigned i = 0; i < n; i++) {
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            work_pool_free(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

bool work_pool_submit(work_pool *p, const work_job *job)
{
    bool ok = false;
    pthread_mutex_lock(&p->lock);
    if (!p->stopping && p->count < p->capacity) {
        p->ring[(p->head + p->count) % p->capacity] = *job;
        p->count++;
        ok = true;
        dispatch_queued(p);
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

bool work_pool_try_claim(work_pool *p)
{
    bool ok = false;
    pthread_mutex_lock(&p->lock);
    if (!p->stopping && p->count == 0 && p->running < p->n_threads) {
        p->running++;
        ok = true;
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

void work_pool_release(work_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->running--;
    dispatch_queued(p); /* a job may have waited for this permit */
    pthread_mutex_unlock(&p->lock);
}

unsigned work_pool_queued(work_pool *p)
{
    pthread_mutex_lock(&p->lock);
    unsigned n = p->count;
    pthread_mutex_unlock(&p->lock);
    return n;
}

unsigned work_pool_running(work_pool *p)
{
    pthread_mutex_lock(&p->lock);
    unsigned n = p->running;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void work_pool_stop(work_pool *p)
{
    pthread_mutex_lock(&p->lock);
    if (p->stopped) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    p->stopping = true;
    /* Take the queued jobs out first, so no worker starts them. */
    unsigned n = p->count;
    work_job *left = malloc((n > 0 ? n : 1) * sizeof *left); /* owned */
    if (left != NULL) {
        for (unsigned i = 0; i < n; i++)
            left[i] = p->ring[(p->head + i) % p->capacity];
        p->count = 0;
    } else {
        dispatch_queued(p);
    }
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_cond_signal(&p->workers[i].wake);
    pthread_mutex_unlock(&p->lock);

    /* Out of memory for the list: the jobs stay queued, and the workers,
     * which take the queue's head after each job, run them instead. */
    for (unsigned i = 0; left != NULL && i < n; i++)
        left[i].cancel(left[i].arg);
    free(left);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->workers[i].thread, NULL);
    pthread_mutex_lock(&p->lock);
    p->stopped = true;
    pthread_mutex_unlock(&p->lock);
}

void work_pool_free(work_pool *p)
{
    if (p == NULL)
        return;
    work_pool_stop(p);
    pthread_mutex_destroy(&p->lock);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_cond_destroy(&p->workers[i].wake);
    free(p->ring);
    free(p->workers);
    free(p);
}

/*
 * work_pool.c - compute workers and their bounded queue (see work_pool.h).
 *
 * One mutex guards a ring buffer of jobs; workers sleep on a condition
 * variable. Jobs are few and long (milliseconds to seconds), so one lock
 * costs nothing measurable.
 */
#include "work_pool.h"

#include <pthread.h>
#include <stdlib.h>

struct work_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a job arrived or the pool stops */
    work_job *ring;         /* capacity slots */
    unsigned capacity, head, count;
    unsigned running;       /* permits in use: jobs being run + claims */
    bool stopping;
    bool stopped;           /* threads joined */
    pthread_t *threads;
    unsigned n_threads;     /* started */
    void (*thread_init)(const void *);
    const void *init_arg;
};

static void *worker_main(void *arg)
{
    work_pool *p = arg;

    if (p->thread_init)
        p->thread_init(p->init_arg);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        /* A job and a permit (claims by HTTP threads hold some). */
        while ((p->count == 0 || p->running >= p->n_threads) && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->count == 0)
            break; /* stopping and nothing left to run */
        while (p->running >= p->n_threads) /* stopping: claims end soon */
            pthread_cond_wait(&p->wake, &p->lock);
        work_job job = p->ring[p->head];
        p->head = (p->head + 1) % p->capacity;
        p->count--;
        p->running++;
        pthread_mutex_unlock(&p->lock);
        job.run(job.arg);
        pthread_mutex_lock(&p->lock);
        p->running--;
        if (p->count > 0)
            pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

work_pool *work_pool_new(unsigned n_threads, unsigned capacity,
                         void (*thread_init)(const void *), const void *init_arg)
{
    work_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->capacity = capacity > 0 ? capacity : 1;
    p->ring = calloc(p->capacity, sizeof *p->ring);
    p->threads = calloc(n_threads > 0 ? n_threads : 1, sizeof *p->threads);
    p->thread_init = thread_init;
    p->init_arg = init_arg;
    if (p->ring == NULL || p->threads == NULL) {
        free(p->ring);
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
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
        pthread_cond_signal(&p->wake);
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
    /* A worker may be waiting for this permit (a job came meanwhile); on
     * a stop, every waiting worker must look again. */
    if (p->count > 0 || p->stopping)
        pthread_cond_broadcast(&p->wake);
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
    work_job *left = malloc((n > 0 ? n : 1) * sizeof *left);
    if (left != NULL) {
        for (unsigned i = 0; i < n; i++)
            left[i] = p->ring[(p->head + i) % p->capacity];
        p->count = 0;
    }
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    /* Out of memory for the list: the workers run the queued jobs
     * instead (they drain the queue before exiting). */
    for (unsigned i = 0; left != NULL && i < n; i++)
        left[i].cancel(left[i].arg);
    free(left);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
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
    pthread_cond_destroy(&p->wake);
    free(p->ring);
    free(p->threads);
    free(p);
}

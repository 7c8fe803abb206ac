/*
 * test_concurrency.c - several client threads send different /encode and
 * /apply requests at the same time; every answer must be the one for its
 * own request (results must not cross between requests).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

#define NTHREADS 8

typedef struct worker {
    const server *s;
    const default_model *dm;
    int id;
    int iters;
} worker;

static void one_encode(const worker *w, int it, trng *g)
{
    size_t t = 6, d = 24;
    float x[6 * 24];
    trng_fill(g, x, t * d, -1, 1);
    int64_t off = (int64_t)w->id * 1000 + it * 7;
    double scale = 1 + w->id;
    int64_t pos[6];
    for (size_t i = 0; i < t; i++)
        pos[i] = off + (int64_t)i;
    double want[6 * 24];
    ref_absolute_sinusoidal(x, scale, 10000, w->id % 2 == 1, pos, t, d, want);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"embeddings\":");
    sb_farray(&b, x, 2, (size_t[]){t, d});
    sb_printf(&b, ",\"offset\":%lld,\"embed_scale\":%g,\"params\":{\"layout\":\"%s\"}}",
              (long long)off, scale, w->id % 2 ? "split" : "interleaved");
    char label[96];
    snprintf(label, sizeof label, "POST /encode [thread %d, request %d]", w->id, it);
    post_compare(w->s, "/encode", label, b.s, "encoded", 2, (size_t[]){t, d}, want, ABS_ONCE,
                 ULPS_ONCE);
    sb_free(&b);
}

static void one_apply(const worker *w, int it, trng *g)
{
    size_t t = 2, d = DEFAULT_D;
    float *x = xmalloc(t * d * sizeof *x);
    trng_fill(g, x, t * d, -1, 1);
    int64_t pos[2] = {w->id * 100 + it, w->id * 100 + it + 50};
    double *pre = xmalloc(t * d * sizeof *pre);
    ref_absolute_sinusoidal(x, 1, 10000, false, pos, t, d, pre);
    float *z = xmalloc(t * d * sizeof *z);
    ref_round_f32(pre, t * d, z);
    double *q = xmalloc(t * d * sizeof *q);
    ref_project(z, t, d, w->dm->wq, d, NULL, q);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"embeddings\":");
    sb_base64_floats(&b, x, t * d);
    sb_printf(&b, ",\"shape\":[2,512],\"positions\":[%lld,%lld],\"return\":[\"q\",\"encoded\"]}",
              (long long)pos[0], (long long)pos[1]);
    char label[96];
    snprintf(label, sizeof label, "POST /apply [thread %d, request %d]", w->id, it);
    http_resp r;
    farr a;
    if (post_read(w->s, "/apply", label, b.s, "q", 2, (size_t[]){t, d}, &r, &a)) {
        check_close_rownorm(label, "q", &a, q, t * d, d, 2e-5, 1e-6);
        farr_free(&a);
        if (get_farr(label, &r, "encoded", &a)) {
            check_close(label, "encoded", &a, pre, t * d, ABS_ONCE, ULPS_ONCE);
            farr_free(&a);
        }
    }
    http_resp_free(&r);
    sb_free(&b);
    free(x);
    free(pre);
    free(z);
    free(q);
}

static void *run_worker(void *arg)
{
    const worker *w = arg;
    trng g;
    trng_seed(&g, 1000 + (uint64_t)w->id);
    for (int it = 0; it < w->iters; it++) {
        if ((it + w->id) % 2 == 0)
            one_encode(w, it, &g);
        else
            one_apply(w, it, &g);
    }
    return NULL;
}

void test_concurrency(const server *s, const default_model *dm)
{
    pthread_t th[NTHREADS];
    worker w[NTHREADS];
    int started = 0;
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (worker){.s = s, .dm = dm, .id = i, .iters = under_valgrind() ? 3 : 12};
        if (pthread_create(&th[i], NULL, run_worker, &w[i]) == 0)
            started++;
        else
            break;
    }
    CHECK(started == NTHREADS, "concurrency", "started %d of %d client threads", started, NTHREADS);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    http_resp r;
    http_get(s, "/healthz", &r);
    CHECK(r.status == 200, "GET /healthz after the concurrent burst", "got %ld", r.status);
    http_resp_free(&r);
}

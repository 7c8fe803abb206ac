/*
 * test_threads.c - the lib called from several threads at once (as the
 * HTTP workers do): every thread must get the single-threaded result.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

enum { THREADS = 6, ROUNDS = 4, T = 96, DM = 64, H = 4, HD = 16 };
enum { W = 3 * H * HD };
_Static_assert(DM == H * HD, "the default weights are square");

typedef struct shared {
    pe_qkv_weights w;
    float z[T * DM];
    int64_t pos[T];
} shared;

/* What one request computes: encode, project, rotate q and k, score. */
typedef struct result {
    float enc[T * DM], qkv[T * W], scores[H * T * T];
} result;

static void run_request(const shared *s, result *r)
{
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_INTERLEAVED};
    pe_rope rope;
    double inv[HD / 2], att;

    memset(&rope, 0, sizeof rope);
    rope.base = 10000.0;
    rope.head_dim = rope.rotary_dim = HD;
    pe_encode_absolute(&pe, NULL, 1.0, s->z, s->pos, T, DM, r->enc, NULL);
    pe_project_qkv(&s->w, r->enc, T, r->qkv);
    pe_rope_frequencies(&rope, T, inv, &att);
    pe_rope_apply(&rope, inv, att, s->pos, T, 2 * H * HD, r->qkv, W, r->qkv, W);
    pe_attention_scores(r->qkv, W, r->qkv + H * HD, W, T, H, H, HD, 1.0 / sqrt((double)HD), NULL,
                        r->scores);
}

typedef struct worker {
    const shared *s;
    const result *want;
    result got;
    bool same;
} worker;

static bool close_all(const float *a, const float *b, size_t n)
{
    for (size_t e = 0; e < n; e++)
        if (!(fabsf(a[e] - b[e]) <= 1e-5f * (1.0f + fabsf(b[e]))))
            return false;
    return true;
}

static void *work(void *arg)
{
    worker *wk = arg;
    wk->same = true;
    for (int round = 0; round < ROUNDS; round++) {
        run_request(wk->s, &wk->got);
        wk->same &= close_all(wk->got.enc, wk->want->enc, T * DM) &&
                    close_all(wk->got.qkv, wk->want->qkv, T * W) &&
                    close_all(wk->got.scores, wk->want->scores, H * T * T);
    }
    return NULL;
}

void test_threads(void)
{
    shared *s = calloc(1, sizeof *s);
    result *want = malloc(sizeof *want);
    worker *workers = calloc(THREADS, sizeof *workers);
    pthread_t tid[THREADS];
    float *wq = malloc(3 * DM * DM * sizeof *wq);
    uint64_t rng = 77;

    if (!s || !want || !workers || !wq) {
        CHECK(false, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < T * DM; e++)
        s->z[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t t = 0; t < T; t++)
        s->pos[t] = (int64_t)(t * 1009);
    pe_default_weights(3, DM, wq, wq + DM * DM, wq + 2 * DM * DM);
    if (pe_qkv_weights_init(&s->w, DM, H, H, HD, wq, wq + DM * DM, wq + 2 * DM * DM, NULL, NULL,
                            NULL) != PE_OK) {
        CHECK(false, "qkv init");
        goto done;
    }
    run_request(s, want);

    size_t started = 0;
    for (; started < THREADS; started++) {
        workers[started].s = s;
        workers[started].want = want;
        if (pthread_create(&tid[started], NULL, work, &workers[started]))
            break;
    }
    CHECK(started == THREADS, "started %zu threads", started);
    bool same = true;
    for (size_t i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        same &= workers[i].same;
    }
    CHECK(same, "%d concurrent callers get the single-caller results", THREADS);
done:
    if (s)
        pe_qkv_weights_free(&s->w);
    free(s);
    free(want);
    free(workers);
    free(wq);
}

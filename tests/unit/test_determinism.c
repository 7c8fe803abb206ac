/*
 * test_determinism.c - batch invariance and team-size independence (issue
 * limit same-bits): a row's q|k|v depends only on that row and the weights, never
 * on how many rows share the call, where the row sits among them or how
 * many OpenMP threads compute it; the scores of one sequence likewise never
 * depend on the team. Every comparison is memcmp: bits, not tolerances.
 *
 * The regression this pins down: with the projection done by one OpenBLAS
 * sgemm per request, 152 of 12,128 concurrent /apply answers differed from
 * their sequential ones (by up to 2.4e-6), and a row of a batch from the row
 * sent alone, because OpenBLAS's kernels give a row different bits by its
 * position in the call and by the thread split.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

/* Widths off every kernel tile size: d_model 72, q|k|v 4*20 + 2*2*20 = 160
 * columns with grouped-query heads, and up to 301 rows. */
enum { DM = 72, H = 4, KV = 2, HD = 20, ROWS = 301 };
enum { QC = H * HD, KC = KV * HD, W = QC + 2 * KC };

static const size_t batch_sizes[] = {1, 2, 3, 5, 6, 7, 16, 17, 48, 97, 128, 300};
static const int teams[] = {1, 2, 3, 4};

/* The alone row r of every row, team 1; then every batch (at several
 * offsets) under every team, row by row against it. */
static void check_rows_alone_vs_batched(const pe_qkv_weights *w, const float *z, const char *what)
{
    float *alone = malloc((size_t)ROWS * W * sizeof *alone); /* owned */
    float *out = malloc((size_t)ROWS * W * sizeof *out);     /* owned */
    size_t differing = 0, first_n = 0, first_row = 0;
    int first_team = 0, team_before = omp_get_max_threads();

    if (!alone || !out) {
        CHECK(false, "out of memory");
        goto done;
    }
    omp_set_num_threads(1);
    for (size_t r = 0; r < ROWS; r++)
        pe_project_qkv(w, z + r * DM, 1, alone + r * W);
    for (size_t ti = 0; ti < ARRAY_LEN(teams); ti++) {
        omp_set_num_threads(teams[ti]);
        for (size_t bi = 0; bi < ARRAY_LEN(batch_sizes); bi++) {
            size_t n = batch_sizes[bi];
            for (size_t off = 0; off + n <= ROWS; off += n > 40 ? ROWS : 13) {
                pe_project_qkv(w, z + off * DM, n, out);
                for (size_t r = 0; r < n; r++) {
                    if (memcmp(out + r * W, alone + (off + r) * W, W * sizeof *out) == 0)
                        continue;
                    if (differing++ == 0) {
                        first_n = n;
                        first_row = off + r;
                        first_team = teams[ti];
                    }
                }
            }
        }
    }
    CHECK(differing == 0,
          "%s: every row of every batch (sizes 1-300, teams 1-4) has the bits of the row alone "
          "(%zu rows differ, the first row %zu in a batch of %zu, team %d)",
          what, differing, first_row, first_n, first_team);
done:
    omp_set_num_threads(team_before);
    free(alone);
    free(out);
}

/* Every element is one fused multiply-add chain over k in order, from +0:
 * the contract of the projection, so this is its exact reference. */
static void check_exact_reference(const pe_qkv_weights *w, const float *z)
{
    float *out = malloc((size_t)ROWS * W * sizeof *out); /* owned */
    bool same = out != NULL;

    if (out)
        pe_project_qkv(w, z, ROWS, out);
    for (size_t r = 0; same && r < ROWS; r++)
        for (size_t c = 0; c < W; c++) {
            float acc = 0.0f;
            for (size_t k = 0; k < DM; k++)
                acc = fmaf(z[r * DM + k], w->w_qkv[k * W + c], acc);
            if (w->b_qkv)
                acc += w->b_qkv[c];
            same &= memcmp(&acc, &out[r * W + c], sizeof acc) == 0;
        }
    CHECK(same, "the projection is the in-order fma chain, bit for bit");
    free(out);
}

/* The scores of one sequence under teams 1-4, and against each head's
 * in-order fma chain. */
static void check_scores(const float *qkv)
{
    enum { T = 67 };
    float *want = malloc((size_t)H * T * T * sizeof *want); /* owned */
    float *got = malloc((size_t)H * T * T * sizeof *got);   /* owned */
    bool same = want && got;
    double scale = 1.0 / sqrt((double)HD);
    int team_before = omp_get_max_threads();

    if (!same) {
        CHECK(false, "out of memory");
        goto done;
    }
    omp_set_num_threads(1);
    pe_attention_scores(qkv, W, qkv + QC, W, T, H, KV, HD, scale, NULL, want);
    for (size_t ti = 1; ti < ARRAY_LEN(teams); ti++) {
        omp_set_num_threads(teams[ti]);
        pe_attention_scores(qkv, W, qkv + QC, W, T, H, KV, HD, scale, NULL, got);
        same &= memcmp(got, want, (size_t)H * T * T * sizeof *got) == 0;
    }
    CHECK(same, "scores of one sequence have the same bits under teams 1-4");
    same = true;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++) {
                const float *q = qkv + i * W + h * HD, *k = qkv + j * W + QC + h / (H / KV) * HD;
                float acc = 0.0f;
                for (size_t e = 0; e < HD; e++)
                    acc = fmaf(q[e], k[e], acc);
                float s = (float)(scale * (double)acc);
                same &= memcmp(&s, &want[(h * T + i) * T + j], sizeof s) == 0;
            }
    CHECK(same, "scores are the in-order fma chain, then the scale, bit for bit");
done:
    omp_set_num_threads(team_before);
    free(want);
    free(got);
}

void test_determinism(void)
{
    float *wq = malloc((size_t)DM * QC * sizeof *wq);       /* owned */
    float *wk = malloc((size_t)DM * KC * sizeof *wk);       /* owned */
    float *wv = malloc((size_t)DM * KC * sizeof *wv);       /* owned */
    float *z = malloc((size_t)ROWS * DM * sizeof *z);       /* owned */
    float *qkv = malloc((size_t)ROWS * W * sizeof *qkv);    /* owned */
    float *bias = malloc((size_t)(QC + KC) * sizeof *bias); /* owned */
    pe_qkv_weights w = {0}, wb = {0};
    uint64_t rng = 2108;

    if (!wq || !wk || !wv || !z || !qkv || !bias) {
        CHECK(false, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < (size_t)DM * QC; e++)
        wq[e] = (float)test_uniform(&rng, -0.2, 0.2);
    for (size_t e = 0; e < (size_t)DM * KC; e++) {
        wk[e] = (float)test_uniform(&rng, -0.2, 0.2);
        wv[e] = (float)test_uniform(&rng, -0.2, 0.2);
    }
    for (size_t e = 0; e < (size_t)ROWS * DM; e++)
        z[e] = (float)test_uniform(&rng, -2, 2);
    for (size_t e = 0; e < QC + KC; e++)
        bias[e] = (float)test_uniform(&rng, -1, 1);
    if (pe_qkv_weights_init(&w, DM, H, KV, HD, wq, wk, wv, NULL, NULL, NULL) != PE_OK ||
        pe_qkv_weights_init(&wb, DM, H, KV, HD, wq, wk, wv, bias, NULL, bias + QC) != PE_OK) {
        CHECK(false, "qkv init");
        goto done;
    }
    check_rows_alone_vs_batched(&w, z, "q|k|v");
    check_rows_alone_vs_batched(&wb, z, "q|k|v with biases");
    check_exact_reference(&w, z);
    check_exact_reference(&wb, z);
    pe_project_qkv(&w, z, ROWS, qkv);
    check_scores(qkv);
done:
    pe_qkv_weights_free(&w);
    pe_qkv_weights_free(&wb);
    free(wq);
    free(wk);
    free(wv);
    free(z);
    free(qkv);
    free(bias);
}

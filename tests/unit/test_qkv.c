/*
 * test_qkv.c - fused Q/K/V weights, the projection and the attention
 * scores against naive double loops written here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

/* |got - want| <= 1e-5 * (1 + sum of |terms|) for every element. */
static bool close_rel(float got, double want, double magnitude)
{
    return fabs((double)got - want) <= 1e-5 * (1.0 + magnitude);
}

static float *random_floats(uint64_t *rng, size_t n, double lo, double hi)
{
    float *a = malloc(n * sizeof *a);
    for (size_t e = 0; a && e < n; e++)
        a[e] = (float)test_uniform(rng, lo, hi);
    return a;
}

static void fused_layout(void)
{
    enum { DM = 6, H = 4, KV = 2, HD = 3, QC = H * HD, KC = KV * HD };
    uint64_t rng = 1;
    float wq[DM * QC], wk[DM * KC], wv[DM * KC], bq[QC], bv[KC];
    pe_qkv_weights w;
    bool ok = true;

    for (size_t e = 0; e < DM * QC; e++)
        wq[e] = (float)test_uniform(&rng, -1, 1);
    for (size_t e = 0; e < DM * KC; e++) {
        wk[e] = (float)test_uniform(&rng, -1, 1);
        wv[e] = (float)test_uniform(&rng, -1, 1);
    }
    for (size_t e = 0; e < QC; e++)
        bq[e] = (float)e + 1;
    for (size_t e = 0; e < KC; e++)
        bv[e] = -(float)e - 1;

    CHECK(pe_qkv_weights_init(&w, DM, H, KV, HD, wq, wk, wv, bq, NULL, bv) == PE_OK,
          "qkv init PE_OK");
    CHECK(pe_qkv_width(&w) == QC + 2 * KC, "qkv width (h + 2 kv) * hd");
    for (size_t r = 0; r < DM; r++)
        for (size_t c = 0; c < QC + 2 * KC; c++) {
            float want = c < QC        ? wq[r * QC + c]
                         : c < QC + KC ? wk[r * KC + c - QC]
                                       : wv[r * KC + c - QC - KC];
            ok &= w.w_qkv[r * (QC + 2 * KC) + c] == want;
        }
    CHECK(ok, "w_qkv rows are wq | wk | wv");
    ok = w.b_qkv != NULL;
    for (size_t c = 0; ok && c < QC + 2 * KC; c++)
        ok &= w.b_qkv[c] == (c < QC ? bq[c] : c < QC + KC ? 0.0f : bv[c - QC - KC]);
    CHECK(ok, "b_qkv is bq | 0 | bv when bk is NULL");
    pe_qkv_weights_free(&w);
    CHECK(w.w_qkv == NULL && w.b_qkv == NULL, "free empties the struct");
    pe_qkv_weights_free(&w);
    pe_qkv_weights_free(NULL);

    CHECK(pe_qkv_weights_init(&w, DM, H, KV, HD, wq, wk, wv, NULL, NULL, NULL) == PE_OK &&
              w.b_qkv == NULL,
          "no biases: b_qkv stays NULL");
    pe_qkv_weights_free(&w);

    CHECK(pe_qkv_weights_init(&w, SIZE_MAX / 2, H, KV, HD, wq, wk, wv, NULL, NULL, NULL) ==
                  PE_ENOMEM &&
              w.w_qkv == NULL && w.b_qkv == NULL,
          "size overflow: PE_ENOMEM, struct left empty");
    CHECK(pe_qkv_weights_init(&w, DM, 3, 2, HD, wq, wk, wv, NULL, NULL, NULL) == PE_EINVAL &&
              w.w_qkv == NULL,
          "kv_heads not dividing heads: PE_EINVAL");
}

/* Projection and scores of one configuration vs naive double loops. */
static void project_and_score(size_t n, size_t dm, size_t h, size_t kv, size_t hd, bool with_bias)
{
    uint64_t rng = 1000 + n;
    size_t qc = h * hd, kc = kv * hd, width = qc + 2 * kc;
    float *wq = random_floats(&rng, dm * qc, -0.5, 0.5);
    float *wk = random_floats(&rng, dm * kc, -0.5, 0.5);
    float *wv = random_floats(&rng, dm * kc, -0.5, 0.5);
    float *bq = random_floats(&rng, qc, -1, 1);
    float *bk = random_floats(&rng, kc, -1, 1);
    float *bv = random_floats(&rng, kc, -1, 1);
    float *z = random_floats(&rng, n * dm, -2, 2);
    float *bias = random_floats(&rng, h * n * n, -3, 3);
    float *qkv = malloc(n * width * sizeof *qkv);
    float *scores = malloc(h * n * n * sizeof *scores);
    pe_qkv_weights w = {0};
    bool ok = true;

    if (!wq || !wk || !wv || !bq || !bk || !bv || !z || !bias || !qkv || !scores) {
        CHECK(false, "out of memory");
        goto done;
    }
    if (pe_qkv_weights_init(&w, dm, h, kv, hd, wq, wk, wv, with_bias ? bq : NULL,
                            with_bias ? bk : NULL, with_bias ? bv : NULL) != PE_OK) {
        CHECK(false, "qkv init");
        goto done;
    }
    pe_project_qkv(&w, z, n, qkv);
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < width; c++) {
            const float *m = c < qc ? wq : c < qc + kc ? wk : wv;
            size_t cols = c < qc ? qc : kc;
            size_t col = c < qc ? c : c < qc + kc ? c - qc : c - qc - kc;
            const float *b = c < qc ? bq : c < qc + kc ? bk : bv;
            double sum = with_bias ? b[col] : 0, mag = fabs(sum);
            for (size_t i = 0; i < dm; i++) {
                sum += (double)z[t * dm + i] * m[i * cols + col];
                mag += fabs((double)z[t * dm + i] * m[i * cols + col]);
            }
            ok &= close_rel(qkv[t * width + c], sum, mag);
        }
    CHECK(ok,
          "projection n %zu d_model %zu heads %zu/%zu hd %zu bias %d "
          "vs naive double",
          n, dm, h, kv, hd, (int)with_bias);

    /* Scores from the projection's Q and K, rows strided by width. */
    double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < 2; b++) {
        const float *bb = b ? bias : NULL;
        pe_attention_scores(qkv, width, qkv + qc, width, n, h, kv, hd, scale, bb, scores);
        ok = true;
        for (size_t hh = 0; hh < h; hh++) {
            size_t g = hh / (h / kv);
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                    double dot = 0, mag = 0;
                    for (size_t e = 0; e < hd; e++) {
                        double p = (double)qkv[i * width + hh * hd + e] *
                                   qkv[j * width + qc + g * hd + e];
                        dot += p;
                        mag += fabs(p);
                    }
                    size_t at = (hh * n + i) * n + j;
                    double want = scale * dot + (bb ? bb[at] : 0.0);
                    ok &= close_rel(scores[at], want, scale * mag + (bb ? fabs(bb[at]) : 0.0));
                }
        }
        CHECK(ok, "scores t %zu heads %zu/%zu bias %d vs naive double", n, h, kv, b);
    }
done:
    pe_qkv_weights_free(&w);
    free(wq);
    free(wk);
    free(wv);
    free(bq);
    free(bk);
    free(bv);
    free(z);
    free(bias);
    free(qkv);
    free(scores);
}

void test_qkv(void)
{
    fused_layout();
    project_and_score(7, 6, 4, 2, 3, true);
    project_and_score(5, 8, 2, 1, 4, false);
    project_and_score(200, 64, 4, 4, 16, true); /* parallel bias paths */
    project_and_score(1, 16, 8, 2, 8, true);
}

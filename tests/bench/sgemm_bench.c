/*
 * sgemm_bench.c - the numeric-core baseline of the benchmark suite: OpenBLAS
 * cblas_sgemm alone, C[M][N] = A[M][K] * B[K][N] (row-major, as posenc's
 * Q = Z*W), on the shapes given, with nothing else around it.
 *
 *   sgemm_bench [--threads N] [--seconds S] MxKxN...
 *
 * For each shape: one untimed warm-up call, then calls until S seconds
 * (default 1) have passed (at least 5, at most 1000). Prints one line per
 * shape:  sgemm M K N median_ms min_ms gflops_at_median reps
 * --threads sets OpenBLAS's thread count (default: OMP_NUM_THREADS or the
 * OpenMP default, as posenc-server uses).
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#define MAX_REPS 1000

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (p == NULL)
        return NULL;
    unsigned long long s = 0x9E3779B97F4A7C15ULL * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (float)((double)(s >> 40) / (double)(1ULL << 24) - 0.5);
    }
    return p;
}

static int bench(int m, int k, int n, double seconds)
{
    float *a = filled((size_t)m * k, 1);
    float *b = filled((size_t)k * n, 2);
    float *c = calloc((size_t)m * n, sizeof *c);
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "sgemm_bench: out of memory for %dx%dx%d\n", m, k, n);
        free(a);
        free(b);
        free(c);
        return 1;
    }
    static double t[MAX_REPS];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a,
                k, b, n, 0.0f, c, n);
    int reps = 0;
    double start = now_ms();
    while (reps < MAX_REPS && (reps < 5 || now_ms() - start < seconds * 1e3)) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                    a, k, b, n, 0.0f, c, n);
        t[reps++] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    double med = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
    double gflops = 2.0 * m * n * (double)k / (med * 1e6);
    printf("sgemm %d %d %d %.4f %.4f %.2f %d\n", m, k, n, med, t[0], gflops,
           reps);
    fflush(stdout);
    free(a);
    free(b);
    free(c);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    int status = 0, shapes = 0;
    for (int i = 1; i < argc; i++) {
        int m, k, n;
        char extra;
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            openblas_set_num_threads(atoi(argv[++i]));
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (sscanf(argv[i], "%dx%dx%d%c", &m, &k, &n, &extra) == 3 &&
                   m > 0 && k > 0 && n > 0) {
            status |= bench(m, k, n, seconds);
            shapes++;
        } else {
            fprintf(stderr, "usage: sgemm_bench [--threads N] [--seconds S] "
                            "MxKxN...\n");
            return 2;
        }
    }
    if (shapes == 0) {
        fprintf(stderr, "usage: sgemm_bench [--threads N] [--seconds S] "
                        "MxKxN...\n");
        return 2;
    }
    return status;
}

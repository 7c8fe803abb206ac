/*
 * test_finite.c - array_check_finite, the last step before an answer is
 * written: every NaN and infinity is found wherever it sits (the vector
 * lanes, the scalar tail of a row, a strided view's skipped columns left
 * alone), the message names the first one by its index, and the parallel
 * pass for big results (past 2^18 values) agrees with one thread. The
 * reference is the position the test itself poisoned.
 */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "json/array_writer.h"
#include "test_list.h"

/* rows x cols of finite values that are edge cases of the bit test:
 * FLT_MAX, the smallest subnormal, -0, and ordinary numbers; `stride`
 * floats per row, the columns past cols holding NaN (a strided view must
 * not look at them). */
static float *finite_rows(size_t rows, size_t cols, size_t stride)
{
    static const float edge[] = {FLT_MAX, -FLT_MAX, 1.4e-45f, -0.0f, 0.5f, -3.25f, 1e-38f, 65504.f};
    float *a = malloc(rows * stride * sizeof *a);
    if (!a)
        return NULL;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < stride; c++)
            a[r * stride + c] = c < cols ? edge[(r * 7 + c) % 8] : NAN;
    return a;
}

static void check_case(size_t rows, size_t cols, size_t stride, size_t bad_r, size_t bad_c,
                       float bad, int threads)
{
    float *a = finite_rows(rows, cols, stride);
    if (!a) {
        CHECK(0, "allocation");
        return;
    }
    array_view v = {.data = a, .ndim = 2, .dim = {rows, cols}, .row_stride = stride};
    json_error err = {0};
    omp_set_num_threads(threads);
    CHECK(array_check_finite(&v, "q", &err) == 0, "%zux%zu (stride %zu, %d threads) all finite",
          rows, cols, stride, threads);
    a[bad_r * stride + bad_c] = bad;
    /* a second bad value later: the message must name the first */
    if (bad_r + 1 < rows)
        a[(bad_r + 1) * stride] = INFINITY;
    char want[64];
    snprintf(want, sizeof want, "q[%zu][%zu]", bad_r, bad_c);
    memset(&err, 0, sizeof err);
    int rc = array_check_finite(&v, "q", &err);
    CHECK(rc == -1 && err.kind == JSON_E_NON_FINITE && strstr(err.message, want) != NULL,
          "%zux%zu (stride %zu, %d threads): %g at %s found (message: %s)", rows, cols, stride,
          threads, (double)bad, want, err.message);
    free(a);
}

void test_finite_check(void)
{
    int saved = omp_get_max_threads();
    static const float bads[] = {NAN, INFINITY, -INFINITY};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t b = 0; b < 3; b++) {
            check_case(3, 5, 5, 1, 4, bads[b], threads);           /* scalar only */
            check_case(4, 19, 19, 2, 17, bads[b], threads);        /* the tail of a row */
            check_case(4, 19, 24, 3, 0, bads[b], threads);         /* strided, first column */
            check_case(700, 515, 530, 577, 301, bads[b], threads); /* parallel, strided */
            check_case(700, 512, 512, 0, 511, bads[b], threads);   /* parallel, first row */
            check_case(700, 512, 512, 699, 8, bads[b], threads);   /* parallel, last row */
        }
    omp_set_num_threads(saved);
}

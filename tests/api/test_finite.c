/*
 * test_finite.c - NaN and infinity found where they sit. array_check_finite,
 * the last step before an answer is written: every NaN and infinity is
 * found wherever it sits (the vector lanes, the scalar tail of a row, a
 * strided view's skipped columns left alone), the message names the first
 * one by its index, and the parallel pass for big results (past 2^18
 * values) agrees with one thread. floats_first_non_finite (finite.h), which
 * checks base64 inputs, the same way on flat arrays; then both through the
 * handlers: a big base64 input, and /apply's one pass over q|k|v. The
 * reference is the position the test itself poisoned.
 */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "api.h"
#include "json/array_writer.h"
#include "json/base64.h"
#include "json/finite.h"
#include "test_request_path.h"
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

/* floats_first_non_finite on n values with `bad` at `at` (and an infinity
 * after it, which must not be the one named). */
static void check_flat(size_t n, size_t at, float bad, int threads)
{
    float *a = finite_rows(1, n, n);
    if (!a) {
        CHECK(0, "allocation");
        return;
    }
    omp_set_num_threads(threads);
    CHECK(floats_first_non_finite(a, n) == n && !floats_have_non_finite(a, n),
          "%zu finite values (%d threads): none found", n, threads);
    a[at] = bad;
    if (at + 1 < n)
        a[n - 1] = INFINITY;
    size_t got = floats_first_non_finite(a, n);
    CHECK(got == at && floats_have_non_finite(a, n),
          "%zu values (%d threads): %g at %zu found at %zu", n, threads, (double)bad, at, got);
    free(a);
}

/* A base64 input of rows x cols with NaN at [bad_r][bad_c] and an infinity
 * in the last value: /encode answers 422 naming the NaN. */
static void check_base64_input(const api_service *svc, size_t rows, size_t cols, size_t bad_r,
                               size_t bad_c)
{
    float *x = finite_rows(rows, cols, cols);
    size_t text_len = base64_encoded_len(rows * cols * sizeof(float));
    char *body = malloc(text_len + 128);
    if (!x || !body) {
        CHECK(0, "allocation");
        free(x);
        free(body);
        return;
    }
    x[bad_r * cols + bad_c] = NAN;
    x[rows * cols - 1] = INFINITY;
    int head = snprintf(body, 64, "{\"scheme\":\"none\",\"embeddings\":\"");
    base64_writer w = {.out = body + head};
    base64_write(&w, x, rows * cols * sizeof(float));
    base64_finish(&w);
    snprintf(w.out, 64, "\",\"shape\":[%zu,%zu]}", rows, cols);
    api_response r;
    api_encode(svc, NULL, body, strlen(body), &r);
    test_collect(&r, 1 << 16);
    char want[64];
    snprintf(want, sizeof want, "embeddings[%zu][%zu] is not a finite", bad_r, bad_c);
    CHECK(r.status == 422 && r.body && strstr(r.body, "non_finite") && strstr(r.body, want),
          "base64 input %zux%zu with NaN at [%zu][%zu] -> %d %.200s", rows, cols, bad_r, bad_c,
          r.status, r.body ? r.body : "");
    api_response_free(&r);
    free(body);
    free(x);
}

/* /apply with an inline 2-wide model whose projections double k or v:
 * embeddings of 3e38 overflow exactly that array. */
static void check_apply_overflow(const api_service *svc, const char *weights, const char *ret,
                                 int want_status, const char *want_text)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"embeddings\":[[1,2],[3e38,1]],\"return\":%s,\"model\":{\"d_model\":2,"
             "\"heads\":1,\"scheme\":\"none\",\"weights\":{%s}}}",
             ret, weights);
    api_response r;
    api_apply(svc, NULL, body, strlen(body), &r);
    test_collect(&r, 1 << 16);
    CHECK(r.status == want_status && r.body && strstr(r.body, want_text),
          "apply %s return %s -> %d, want %d with %s: %.200s", weights, ret, r.status, want_status,
          want_text, r.body ? r.body : "");
    api_response_free(&r);
}

static void test_finite_handlers(void)
{
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err);
    CHECK(svc != NULL, "service");
    if (!svc)
        return;
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        check_base64_input(svc, 3, 5, 2, 1);         /* one thread's path */
        check_base64_input(svc, 600, 512, 577, 301); /* 307,200 values: the team's */
        check_base64_input(svc, 600, 512, 0, 0);
    }
    const char *i2 = "[[1,0],[0,1]]", *x2 = "[[2,0],[0,2]]";
    char k_doubles[128], v_doubles[128];
    snprintf(k_doubles, sizeof k_doubles, "\"wq\":%s,\"wk\":%s,\"wv\":%s", i2, x2, i2);
    snprintf(v_doubles, sizeof v_doubles, "\"wq\":%s,\"wk\":%s,\"wv\":%s", i2, i2, x2);
    check_apply_overflow(svc, k_doubles, "[\"q\",\"k\",\"v\"]", 422, "result k[1][0]");
    check_apply_overflow(svc, v_doubles, "[\"q\",\"k\",\"v\"]", 422, "result v[1][0]");
    /* v overflows but only q and k are asked for: the pass over all of
     * q|k|v sees it, the arrays answered are finite */
    check_apply_overflow(svc, v_doubles, "[\"q\",\"k\"]", 200, "\"k\":[[1,2],[3e38,1]]");
    api_service_free(svc);
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
            check_flat(1, 0, bads[b], threads);
            check_flat(9, 8, bads[b], threads);             /* the scalar tail */
            check_flat(4097, 4096, bads[b], threads);       /* past the first block */
            check_flat((1 << 18) + 5, 0, bads[b], threads); /* the team's pass */
            check_flat((1 << 18) + 5, 200003, bads[b], threads);
            check_flat((1 << 18) + 5, (1 << 18) + 3, bads[b], threads);
        }
    test_finite_handlers();
    omp_set_num_threads(saved);
}

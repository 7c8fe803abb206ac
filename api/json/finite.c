/*
 * finite.c - NaN and infinity in float32 arrays (see finite.h).
 */
#include "json/finite.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static bool have_non_finite_scalar(const float *v, size_t n)
{
    uint32_t any = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        any |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return any != 0;
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static bool have_non_finite_avx2(const float *v, size_t n)
{
    const __m256i exponent = _mm256_set1_epi32(0x7f800000);
    __m256i any = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i bits = _mm256_loadu_si256((const __m256i *)(const void *)(v + i));
        any = _mm256_or_si256(any, _mm256_cmpeq_epi32(_mm256_and_si256(bits, exponent), exponent));
    }
    return !_mm256_testz_si256(any, any) || have_non_finite_scalar(v + i, n - i);
}
#endif

bool floats_have_non_finite(const float *v, size_t n)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2"))
        return have_non_finite_avx2(v, n);
#endif
    return have_non_finite_scalar(v, n);
}

/* Blocks of this many values: the index search after a hit reads one. */
#define BLOCK ((size_t)1 << 12)

size_t floats_first_non_finite(const float *v, size_t n)
{
    size_t blocks = (n + BLOCK - 1) / BLOCK;
    if (n >= FLOATS_PARALLEL_MIN && omp_get_max_threads() > 1) {
        int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
        for (size_t b = 0; b < blocks; b++) {
            size_t start = b * BLOCK, len = n - start < BLOCK ? n - start : BLOCK;
            bad |= floats_have_non_finite(v + start, len);
        }
        if (!bad)
            return n;
    }
    for (size_t b = 0; b < blocks; b++) {
        size_t start = b * BLOCK, len = n - start < BLOCK ? n - start : BLOCK;
        if (!floats_have_non_finite(v + start, len))
            continue;
        for (size_t i = start; i < start + len; i++)
            if (!isfinite(v[i]))
                return i;
    }
    return n;
}

/*
 * internal.h - helpers shared by the lib/ sources; not part of the public
 * API (posenc.h is). Nothing here allocates or keeps state.
 */
#ifndef POSENC_INTERNAL_H
#define POSENC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "posenc.h"

/* Below this many output elements a kernel stays on the calling thread:
 * waking the OpenMP team would cost more than the work. */
#define PE_PARALLEL_MIN_WORK ((size_t)16384)

/* Sizes are multiplied with the compiler's checked multiply,
 * __builtin_mul_overflow(a, b, &out) (what C23's ckd_mul is; gcc 12 has no
 * <stdckdint.h>): nonzero when the product overflows, the convention of
 * api/json/tensor.h's mul_size (which lib/ may not include), so a size check
 * reads the same in every layer: `if (overflows) fail`. */

/* The standard inverse frequency 1 / base^(2i/d), in double. Sinusoidal
 * tables and RoPE share it; the form (reciprocal of pow) is the one of
 * Hugging Face and of the numpy reference, so results agree to the ulp. */
double pe_inv_freq(double base, size_t i, size_t d);

/* w[ceil(d/2)] = pe_inv_freq(base, i, d) for every sinusoidal frequency. */
void pe_sinusoidal_freqs(double base, size_t d, double *w);

/* pe_sinusoidal_row with the frequencies already computed (w as above). */
void pe_sinusoidal_row_freqs(const double *w, pe_sin_layout layout, int64_t position, size_t d,
                             double *row);

/* x rounded to bfloat16 (through float32, as a float32 tensor's
 * .bfloat16() is; past the largest finite value: inf) and to float16
 * (infinite past 65504), nearest, ties to even, subnormals kept
 * (lib/low_precision.c). */
double pe_round_bfloat16(double x);
double pe_round_float16(double x);

/* c[i][j] = sum over l of a[i][l] * b[l][j] for i < m, j < n: a is
 * a[i*lda + l], b is b[l*ldb + j], or with b_trans b[j*ldb + l] (b given
 * as its rows' transpose, as k is for the scores); c has row stride ldc
 * and must not alias a or b. Every c[i][j] is the chain of fused
 * multiply-adds acc = fmaf(a[i][l], b[l][j], acc) over l = 0..k-1 from
 * acc = +0, on every machine and path (lib/matmul.c): a row's result
 * depends only on that row and b, never on m, on the row's place or on the
 * OpenMP team (which the product uses when large). No allocation. */
void pe_matmul(const float *a, size_t lda, size_t m, size_t k, const float *b, size_t ldb,
               bool b_trans, size_t n, float *c, size_t ldc);

/* b[k][n] (as for pe_matmul) copied once into the kernel's panel layout,
 * for products with the same b again and again (the weights): packed has
 * pe_matmul_packed_count(k, n) floats (0 when that overflows). */
size_t pe_matmul_packed_count(size_t k, size_t n);
void pe_matmul_pack(const float *b, size_t ldb, bool b_trans, size_t k, size_t n, float *packed);

/* pe_matmul with b given packed: the same bits, without re-reading b's
 * strided rows per call. */
void pe_matmul_packed(const float *a, size_t lda, size_t m, size_t k, const float *packed, size_t n,
                      float *c, size_t ldc);

#endif /* POSENC_INTERNAL_H */

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

#endif /* POSENC_INTERNAL_H */

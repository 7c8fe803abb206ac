/*
 * finite.h - NaN and infinity in float32 arrays, found on the bit patterns
 * (all exponent bits set), 8 lanes at a time where the CPU has AVX2.
 *
 * Shared by the decoder (base64 inputs, tensor.c) and the writer's last
 * check of results (array_check_finite): GCC 12 at -O2 leaves the plain
 * isfinite loop scalar, which cost S3 3.7 ms on its results and 0.75 ms on
 * its base64 input.
 */
#ifndef JSON_FINITE_H
#define JSON_FINITE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether v[0 .. n) holds a NaN or an infinity; on the calling thread. */
bool floats_have_non_finite(const float *v, size_t n);

/* The index of the first NaN or infinity in v[0 .. n), or n when every
 * value is finite. Past FLOATS_PARALLEL_MIN values the caller's OpenMP
 * team looks first, and one thread finds the index only when there is one
 * to find. */
size_t floats_first_non_finite(const float *v, size_t n);

#define FLOATS_PARALLEL_MIN ((size_t)1 << 18)

#endif /* JSON_FINITE_H */

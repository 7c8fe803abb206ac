/*
 * default_weights.c - the built-in default model's weights: Xavier-uniform
 * values from a SplitMix64 stream, identical on every machine.
 */
#include <math.h>

#include "posenc.h"

/* SplitMix64 (Steele, Lea, Flood 2014; Vigna's reference constants). */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z;

    *state += UINT64_C(0x9E3779B97F4A7C15);
    z = *state;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* u = L*(2*(r >> 11)*2^-53 - 1): the top 53 bits make a double in [0, 1)
 * exactly, mapped to [-L, L) and rounded to float32 once. */
static void fill_uniform(uint64_t *state, double limit, size_t count, float *w)
{
    for (size_t e = 0; e < count; e++) {
        uint64_t r = splitmix64_next(state);
        w[e] = (float)(limit * (2.0 * (double)(r >> 11) * 0x1p-53 - 1.0));
    }
}

void pe_default_weights(uint64_t seed, size_t d, float *wq, float *wk, float *wv)
{
    uint64_t state = seed;
    double limit = sqrt(6.0 / (double)(d + d));

    if (d == 0)
        return;
    fill_uniform(&state, limit, d * d, wq);
    fill_uniform(&state, limit, d * d, wk);
    fill_uniform(&state, limit, d * d, wv);
}

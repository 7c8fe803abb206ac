/*
 * test_default_weights.c - the default model's generator: determinism,
 * range, and values recomputed by an independent SplitMix64.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "posenc.h"

/* SplitMix64 as a counter-based function: output k (from 1) of the stream
 * seeded with s is mix(s + k * golden). */
static uint64_t splitmix_at(uint64_t seed, uint64_t k)
{
    uint64_t z = seed + k * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void reference_stream(void)
{
    /* Published first outputs of SplitMix64 seeded with 0. */
    CHECK(splitmix_at(0, 1) == UINT64_C(0xE220A8397B1DCDAF) &&
              splitmix_at(0, 2) == UINT64_C(0x6E789E6AA1B965F4) &&
              splitmix_at(0, 3) == UINT64_C(0x06C45D188009454F) &&
              splitmix_at(0, 4) == UINT64_C(0xF88BB8A8724C81EC),
          "test SplitMix64 matches the published seed-0 stream");

    static const uint64_t seeds[] = {0, 42, UINT64_C(0xDEADBEEFCAFEF00D)};
    enum { D = 5, DD = D * D };
    for (size_t s = 0; s < ARRAY_LEN(seeds); s++) {
        float w[3][DD];
        bool same = true;
        double limit = sqrt(6.0 / (2.0 * D));
        pe_default_weights(seeds[s], D, w[0], w[1], w[2]);
        for (size_t m = 0; m < 3; m++)
            for (size_t e = 0; e < DD; e++) {
                uint64_t r = splitmix_at(seeds[s], m * DD + e + 1);
                double u = ldexp((double)(r >> 11), -52) - 1.0;
                same &= w[m][e] == (float)(limit * u);
            }
        CHECK(same, "default weights seed %zu: wq, wk, wv from one stream", s);
    }
}

static void determinism_and_range(void)
{
    enum { D = 512, DD = D * D };
    float *a = malloc(3 * DD * sizeof *a), *b = malloc(3 * DD * sizeof *b);
    if (!a || !b) {
        CHECK(false, "out of memory");
        goto done;
    }
    pe_default_weights(0, D, a, a + DD, a + 2 * DD);
    pe_default_weights(0, D, b, b + DD, b + 2 * DD);
    CHECK(memcmp(a, b, 3 * DD * sizeof *a) == 0, "same seed, same weights");
    pe_default_weights(1, D, b, b + DD, b + 2 * DD);
    CHECK(memcmp(a, b, DD * sizeof *a) != 0, "another seed, other weights");

    float limit = (float)sqrt(6.0 / (2.0 * D));
    float lo = limit, hi = -limit;
    double sum = 0;
    for (size_t e = 0; e < 3 * DD; e++) {
        lo = fminf(lo, a[e]);
        hi = fmaxf(hi, a[e]);
        sum += a[e];
    }
    CHECK(lo >= -limit && hi <= limit, "values within +-L (%g, %g)", (double)lo, (double)hi);
    CHECK(lo < -0.999f * limit && hi > 0.999f * limit, "values fill [-L, L): %g .. %g", (double)lo,
          (double)hi);
    CHECK(fabs(sum / (3.0 * DD)) < 0.005 * limit, "mean near 0");
done:
    free(a);
    free(b);
}

void test_default_weights(void)
{
    reference_stream();
    determinism_and_range();
}

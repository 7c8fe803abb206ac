/*
 * float_text_all.c - float_to_text() (Dragonbox's digits) against the
 * reference with Schubfach's (float_text.c), and the strtof round trip,
 * for all 2^32 float32 bit patterns
 * (NaN and infinity skipped). Run by `make test-float-text`, not by
 * `make test` (it takes minutes; test_codecs.c runs a sample of it).
 * Prints "N passed, M failed" like the other suites: one check per block
 * of 2^20 patterns.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../api/test_codecs.h"

int main(void)
{
    const uint64_t block = (uint64_t)1 << 20, blocks = ((uint64_t)1 << 32) / block;
    uint64_t mismatches = 0, failed_blocks = 0;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : mismatches, failed_blocks)
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t bad = codecs_float_text_range((uint32_t)(b * block),
                                               (uint32_t)(b * block + block - 1));
        mismatches += bad;
        failed_blocks += bad != 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("float text: all 2^32 patterns in %.0f s, %llu mismatches\n", seconds,
           (unsigned long long)mismatches);
    printf("float-text: %llu passed, %llu failed\n", (unsigned long long)(blocks - failed_blocks),
           (unsigned long long)failed_blocks);
    return mismatches == 0 ? 0 : 1;
}

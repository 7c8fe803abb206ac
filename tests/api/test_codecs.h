/*
 * test_codecs.h - the fast codecs against their plain references: the AVX2
 * base64 kernels against the portable ones, the binary32 shortest
 * formatter against Dragonbox (tests/api/test_codecs.c).
 */
#ifndef TEST_CODECS_H
#define TEST_CODECS_H

#include <stdint.h>

/* float_to_text() against the Dragonbox writer for the bit patterns
 * [first, last] (both inclusive, NaN and infinity skipped), plus the
 * round trip strtof(text) == v. Returns the number of mismatches and
 * prints the first few. Shared with the exhaustive run
 * (tests/exhaustive/float_text_all.c). */
uint64_t codecs_float_text_range(uint32_t first, uint32_t last);

#endif /* TEST_CODECS_H */

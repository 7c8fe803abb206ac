/*
 * base64_avx2.c - the base64 inner loops with AVX2: 32 characters <-> 24
 * bytes per step, after Wojciech Mula and Daniel Lemire, "Faster Base64
 * Encoding and Decoding Using AVX2 Instructions" (ACM TWEB 2018), with the
 * validating lookup of Alfred Klomp's libbase64. Each function carries
 * __attribute__((target("avx2"))), so the build needs no -mavx2 and the
 * binary still runs on CPUs without AVX2 (base64.c asks
 * base64_avx2_supported() first). The tails shorter than a step go to the
 * portable kernels, which the tests use as the reference.
 */
#include "json/base64_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

bool base64_avx2_supported(void)
{
    return __builtin_cpu_supports("avx2");
}

#define AVX2 __attribute__((target("avx2")))

/* 32 characters -> 32 sextets in place, or false if any character is not
 * in the alphabet. Each byte's high nibble selects a class bit (lut_hi),
 * its low nibble the classes it may belong to (lut_lo): a byte is valid
 * iff the two share no bit. The offset that maps the character to its
 * sextet depends on the high nibble, except for '/' (0x2F), whose offset
 * differs from the rest of 0x2_ ('+'), hence the eq_2f adjustment. */
static AVX2 inline bool chars_to_sextets(__m256i *chars)
{
    const __m256i lut_lo = _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                            0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A, 0x15, 0x11,
                                            0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13,
                                            0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m256i lut_hi = _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10,
                                            0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
                                            0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10,
                                            0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0,
                                              0, 0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0,
                                              0, 0);
    const __m256i mask_2f = _mm256_set1_epi8(0x2F);
    __m256i str = *chars;
    __m256i hi_nibbles = _mm256_and_si256(_mm256_srli_epi32(str, 4), mask_2f);
    __m256i lo_nibbles = _mm256_and_si256(str, mask_2f);
    __m256i lo = _mm256_shuffle_epi8(lut_lo, lo_nibbles);
    __m256i hi = _mm256_shuffle_epi8(lut_hi, hi_nibbles);
    if (!_mm256_testz_si256(lo, hi))
        return false;
    __m256i eq_2f = _mm256_cmpeq_epi8(str, mask_2f);
    __m256i roll = _mm256_shuffle_epi8(lut_roll, _mm256_add_epi8(eq_2f, hi_nibbles));
    *chars = _mm256_add_epi8(str, roll);
    return true;
}

/* 32 sextets (8 groups of 4) -> 24 bytes: merge pairs of sextets into 12-bit
 * fields, pairs of those into 24-bit groups, then gather the three bytes
 * of each group (big-endian) and close the gap between the lanes. */
static AVX2 inline __m256i sextets_to_bytes(__m256i sextets)
{
    __m256i pairs = _mm256_maddubs_epi16(sextets, _mm256_set1_epi32(0x01400140));
    __m256i groups = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00011000));
    __m256i packed = _mm256_shuffle_epi8(groups,
                                         _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12,
                                                          -1, -1, -1, -1, 2, 1, 0, 6, 5, 4, 10, 9,
                                                          8, 14, 13, 12, -1, -1, -1, -1));
    return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
}

static AVX2 bool decode_groups_avx2(const unsigned char *in, size_t groups, uint8_t *out)
{
    size_t steps = groups / 8;
    for (size_t s = 0; s < steps; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(in + 32 * s));
        if (!chars_to_sextets(&v))
            return false;
        __m256i bytes = sextets_to_bytes(v);
        /* 24 bytes: no store past the end of the output */
        uint8_t *dst = out + 24 * s;
        _mm_storeu_si128((__m128i *)(void *)dst, _mm256_castsi256_si128(bytes));
        _mm_storel_epi64((__m128i *)(void *)(dst + 16), _mm256_extracti128_si256(bytes, 1));
    }
    return base64_portable_kernels.decode_groups(in + 32 * steps, groups - 8 * steps,
                                                 out + 24 * steps);
}

/* 24 bytes, 12 per lane at the lane's start, -> 32 sextets: each 32-bit
 * word gets the bytes (b1, b0, b2, b1) of its group, then two multiplies
 * move the four 6-bit fields into the four bytes. */
static AVX2 inline __m256i bytes_to_sextets(__m256i in)
{
    in = _mm256_shuffle_epi8(in,
                             _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1,
                                              0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10));
    __m256i t0 = _mm256_and_si256(in, _mm256_set1_epi32(0x0FC0FC00));
    __m256i t1 = _mm256_mulhi_epu16(t0, _mm256_set1_epi32(0x04000040));
    __m256i t2 = _mm256_and_si256(in, _mm256_set1_epi32(0x003F03F0));
    __m256i t3 = _mm256_mullo_epi16(t2, _mm256_set1_epi32(0x01000010));
    return _mm256_or_si256(t1, t3);
}

/* Sextets -> alphabet characters: an offset per range (A-Z +65, a-z +71,
 * 0-9 -4, '+' -19, '/' -16), indexed by a saturating subtraction. */
static AVX2 inline __m256i sextets_to_chars(__m256i in)
{
    const __m256i lut = _mm256_setr_epi8(65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16,
                                         0, 0, 65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19,
                                         -16, 0, 0);
    __m256i index = _mm256_subs_epu8(in, _mm256_set1_epi8(51));
    index = _mm256_sub_epi8(index, _mm256_cmpgt_epi8(in, _mm256_set1_epi8(25)));
    return _mm256_add_epi8(in, _mm256_shuffle_epi8(lut, index));
}

static AVX2 void encode_groups_avx2(const uint8_t *in, size_t groups, char *out)
{
    /* A step reads 28 bytes (two 16-byte loads 12 apart) to use 24: stop
     * while the last load still ends inside the input. */
    size_t steps = groups >= 10 ? (groups * 3 - 28) / 24 + 1 : 0;
    for (size_t s = 0; s < steps; s++) {
        const uint8_t *src = in + 24 * s;
        __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)src);
        __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(src + 12));
        __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
        _mm256_storeu_si256((__m256i *)(void *)(out + 32 * s),
                            sextets_to_chars(bytes_to_sextets(v)));
    }
    base64_portable_kernels.encode_groups(in + 24 * steps, groups - 8 * steps, out + 32 * steps);
}

const base64_kernels base64_avx2_kernels = {
    .name = "avx2",
    .decode_groups = decode_groups_avx2,
    .encode_groups = encode_groups_avx2,
};

#else /* not x86: the portable kernels under the AVX2 name */

bool base64_avx2_supported(void)
{
    return false;
}

static bool decode_groups_fallback(const unsigned char *in, size_t groups, uint8_t *out)
{
    return base64_portable_kernels.decode_groups(in, groups, out);
}

static void encode_groups_fallback(const uint8_t *in, size_t groups, char *out)
{
    base64_portable_kernels.encode_groups(in, groups, out);
}

const base64_kernels base64_avx2_kernels = {
    .name = "portable (no AVX2 on this architecture)",
    .decode_groups = decode_groups_fallback,
    .encode_groups = encode_groups_fallback,
};

#endif

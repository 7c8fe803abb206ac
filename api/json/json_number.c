/*
 * json_number.c - JSON number text to float32, fast and correctly rounded
 * (see json_number.h).
 *
 * The numbers posenc receives are shortest float32 texts ("-0.30471708",
 * "1.0399841", "-2.3e-05"): one to seven integer digits, up to fifteen
 * after the point, 9 to 11 bytes. fast_number reads them a word at a time
 * without a branch on the count of digits (what varies from one number to
 * the next): the integer digits as one 8-byte word, the fraction as one
 * 16-byte SSE2 block (two words without SSE2, and near end), then one
 * double division.
 * Any other shape (a 0 before another digit, eight or more integer digits,
 * more than 15 digits in all) goes to plain_number, one byte at a time,
 * which accepts the same grammar and hands what needs it to fast_float.
 */
#include "json/json_number.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "json/number_shim.h"

/* JSON_NUMBER_NO_SSE2 builds the portable fraction reader on x86 too (to
 * test it). */
#if defined(__SSE2__) && !defined(JSON_NUMBER_NO_SSE2)
#define JSON_NUMBER_SSE2 1
#include <emmintrin.h>
#else
#define JSON_NUMBER_SSE2 0
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the digit runs are read as little-endian words (the first byte lowest)"
#endif

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Powers of ten exact in double (5^22 < 2^53), and in uint64_t. */
static const double exact_powers_d[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const uint64_t powers_u[] = {1,
                                    10,
                                    100,
                                    1000,
                                    10000,
                                    100000,
                                    1000000,
                                    10000000,
                                    100000000,
                                    1000000000,
                                    10000000000,
                                    100000000000,
                                    1000000000000,
                                    10000000000000,
                                    100000000000000,
                                    1000000000000000};

/* The doubles nearest 10^-k. */
static const double inverse_powers_d[] = {1e0,  1e-1, 1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,
                                          1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15};

/* (float)d, d >= 0, with the sign: without a branch, as signs of real
 * data are random. */
static inline void store_float(double d, bool negative, float *out)
{
    float v = (float)d;
    uint32_t v_bits;
    memcpy(&v_bits, &v, sizeof v_bits);
    v_bits |= (uint32_t)negative << 31;
    memcpy(out, &v_bits, sizeof v_bits);
}

/* d, the correctly rounded double of a decimal, to float32 with the sign
 * (or false when d lies exactly on a float midpoint: see below). */
static inline bool double_to_float(double d, bool negative, float *out)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    if ((bits & 0x1FFFFFFFu) == 0x10000000u)
        return false; /* exactly on a float midpoint: decide exactly */
    store_float(d, negative, out);
    return true;
}

/* m * 10^exp10 rounded to float32, when it can be done exactly and fast:
 * m < 2^53 and |exp10| <= 22 are both exact doubles, so d = m*10^e is the
 * correctly rounded double, within half a double ulp of the exact value.
 * No float rounding boundary (a midpoint between two floats, itself a
 * double) can lie strictly between them unless d is that midpoint, so
 * unless d's 29 bits below float precision read exactly half, (float)d is
 * the correctly rounded float. 1e-22 <= d < 2^53 * 10^22 < FLT_MAX keeps
 * d clear of float's subnormals and of overflow. (A truncated m has
 * 19 digits, more than 2^53: it never passes.)
 * Returns false when that does not apply (the caller asks fast_float). */
static inline __attribute__((always_inline)) bool decimal_to_float(uint64_t m, int exp10,
                                                                   bool negative, float *out)
{
    if (m == 0) {
        *out = negative ? -0.0f : 0.0f;
        return true;
    }
    if (m >= (uint64_t)1 << 53 || exp10 < -22 || exp10 > 22)
        return false;
    double dm = (double)(int64_t)m;
    return double_to_float(exp10 < 0 ? dm / exact_powers_d[-exp10] : dm * exact_powers_d[exp10],
                           negative, out);
}

/* fast_float's answer for [start, p), which the grammar accepted. */
static __attribute__((noinline, cold)) const char *exact(const char *start, const char *p,
                                                         float *out)
{
    return parse_f32(start, p, out) == p ? p : NULL;
}

/* The exponent part at p, if one is there ([eE][+-]?[0-9]+): adds it to
 * *exp10 and returns its end (p itself when there is none), or NULL when
 * the 'e' has no digits. Past 100000 the digits only move the pointer (the
 * value is 0 or infinite long before). */
static inline const char *exponent_part(const char *p, const char *end, int *exp10)
{
    int sign = 1, e = 0;
    if (p >= end || (*p | 0x20) != 'e')
        return p;
    p++;
    if (p < end && (*p == '+' || *p == '-'))
        sign = *p++ == '-' ? -1 : 1;
    if (p >= end || !is_digit(*p))
        return NULL;
    for (; p < end && is_digit(*p); p++)
        if (e < 100000)
            e = e * 10 + (*p - '0');
    *exp10 += sign * e;
    return p;
}

/* The number one byte at a time: every shape the grammar allows. */
static const char *plain_number(const char *p, const char *end, float *out)
{
    const char *start = p;
    uint64_t m = 0;
    int digits = 0, exp10 = 0;
    bool negative = false;

    if (p < end && *p == '-') {
        negative = true;
        p++;
    }
    if (p >= end || !is_digit(*p))
        return NULL;
    if (*p == '0') {
        p++;
    } else {
        for (; p < end && is_digit(*p); p++) {
            if (digits < 19)
                m = m * 10 + (uint64_t)(*p - '0');
            else
                exp10++;
            digits++;
        }
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p))
            return NULL;
        for (; p < end && is_digit(*p); p++) {
            if (m == 0 && *p == '0') {
                exp10--; /* a leading zero is not a significant digit */
                continue;
            }
            if (digits < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                exp10--;
            }
            digits++;
        }
    }
    p = exponent_part(p, end, &exp10);
    if (!p)
        return NULL;
    if (digits <= 19 && decimal_to_float(m, exp10, negative, out))
        return p;
    return exact(start, p, out);
}

/* ---------------------------------------------------------------------- */
/* Eight digits at a time                                                 */
/* ---------------------------------------------------------------------- */

/* The 8 bytes at p + at, the first in the low byte. With room, all of
 * them lie before end. Without, bytes from end on read as 0 (not a digit)
 * and nothing at or past end is read: near end the word is the last 8
 * bytes before end shifted down (the caller makes sure that those 8 are
 * text), one load as with room (a copy into a buffer would make the load
 * wait for the bytes' stores). */
static inline uint64_t word_at(const char *p, ptrdiff_t at, const char *end, bool room)
{
    uint64_t w = 0;
    ptrdiff_t left = end - p - at;
    if (room || left >= 8) {
        memcpy(&w, p + at, 8);
    } else if (left > 0) {
        memcpy(&w, end - 8, 8);
        w >>= 8 * (8 - left);
    }
    return w;
}

/* The byte at p, or 0 at end. */
static inline char byte_at(const char *p, const char *end, bool room)
{
    return room || p < end ? *p : '\0';
}

/* How many of w's bytes, from the first, are '0'..'9' (0 to 8). Bit 7 of
 * a byte below is set when the byte is not a digit: below '0', subtracting
 * 0x30 wraps; above '9', adding 0x46 reaches 0x80 (and bytes of 0x80 and
 * more already have it or get it from one of the two). A digit neither
 * borrows nor carries, so every byte up to the first non-digit is tested
 * as if alone; what happens past it does not count. */
static inline int leading_digits(uint64_t w)
{
    uint64_t not_digit = ((w - 0x3030303030303030u) | (w + 0x4646464646464646u)) &
                         0x8080808080808080u;
    /* bit 8k marks byte k; bit 63, past the last mark, makes 8 of "none"
     * without a branch (the count of digits is what real data varies) */
    return (__builtin_ctzll(not_digit >> 7 | (uint64_t)1 << 63) + 1) >> 3;
}

/* The value of w's first n digits (n <= leading_digits(w)). Less '0',
 * they are shifted up into the top n bytes (what followed them falls off,
 * the bytes below read as leading zeros; a digit byte never borrows from
 * its neighbour). Then neighbours are joined, 1 digit to 2, 2 to 4, 4 to
 * 8, each step as lane = lane * 10^k + next lane (the next byte, 16 or 32
 * bits up, shifted down onto it) and the odd lanes masked off: the lanes
 * hold at most 99, 9999 and 99999999, so no step overflows into the next. */
static inline uint64_t digits_value(uint64_t w, int n)
{
    int half_shift = 32 - 4 * n; /* two shifts: n = 0 shifts all out */
    uint64_t v = ((w - 0x3030303030303030u) << half_shift) << half_shift;
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFu;
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFu;
    return (v * 10000 + (v >> 32)) & 0xFFFFFFFFu;
}

#if JSON_NUMBER_SSE2
/* Inverses of 5^k modulo 2^64 (5^k * x = 1 mod 2^64): a multiple of 5^k
 * times the inverse is the exact quotient. */
static const uint64_t inverse_powers_5[16] = {0x1,
                                              0xcccccccccccccccd,
                                              0x8f5c28f5c28f5c29,
                                              0x1cac083126e978d5,
                                              0xd288ce703afb7e91,
                                              0x5d4e8fb00bcbe61d,
                                              0x790fb65668c26139,
                                              0xe5032477ae8d46a5,
                                              0xc767074b22e90e21,
                                              0x8e47ce423a2e9c6d,
                                              0x4fa7f60d3ed61f49,
                                              0x0fee64690c913975,
                                              0x3662e0e1cf503eb1,
                                              0xa47a2cf9f6433fbd,
                                              0x54186f653140a659,
                                              0x7738164770402145};

/* How many of b's bytes, from the first, are digits (0 to 16), and into
 * *value the number they make when there are at most 15. Less '0', a
 * digit is a byte <= 9; the bytes from the first other one on are cleared,
 * so the 16 bytes read as value * 10^(16-n). They are joined as in
 * digits_value (pairs with a 16-bit multiply, then 4 and 8 digits with
 * pmaddwd's multiply-and-add of neighbours), the two halves of 8 digits
 * into one number below 10^16; dividing out 10^k = 2^k 5^k is exact, so
 * it is a shift and a multiply by the inverse of 5^k. */
static inline int digit_run(__m128i b, uint64_t *value)
{
    /* from keep + 16 - n, 16 bytes that keep the first n */
    static const signed char keep[32] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1, -1, -1, -1, -1, -1, -1};
    __m128i x = _mm_sub_epi8(b, _mm_set1_epi8('0'));
    __m128i is_digit = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(9)), x);
    int n = __builtin_ctz(~(unsigned)_mm_movemask_epi8(is_digit));
    x = _mm_and_si128(x, _mm_loadu_si128((const __m128i *)(const void *)(keep + 16 - n)));
    __m128i two = _mm_add_epi16(_mm_mullo_epi16(_mm_and_si128(x, _mm_set1_epi16(0xFF)),
                                                _mm_set1_epi16(10)),
                                _mm_srli_epi16(x, 8));
    __m128i four = _mm_madd_epi16(two, _mm_set1_epi32(100 | 1 << 16));
    __m128i eight = _mm_madd_epi16(_mm_packs_epi32(four, four), _mm_set1_epi32(10000 | 1 << 16));
    uint64_t both = (uint64_t)_mm_cvtsi128_si64(eight);
    uint64_t scaled = (both & 0xFFFFFFFFu) * 100000000 + (both >> 32); /* value * 10^(16-n) */
    int k = (16 - n) & 15; /* 16 digits: no value to give (and k stays in the table) */
    *value = (scaled >> k) * inverse_powers_5[k];
    return n;
}

#endif

/* The digits at p (right after a '.'): how many (0 to 16) and, when at
 * most 15, into *value the number they make. With room and SSE2 one
 * 16-byte block, else two words. */
static inline int fraction_digits(const char *p, const char *end, bool room, uint64_t *value)
{
#if JSON_NUMBER_SSE2
    if (room)
        return digit_run(_mm_loadu_si128((const __m128i *)(const void *)p), value);
#endif
    uint64_t w1 = word_at(p, 0, end, room), w2 = word_at(p, 8, end, room);
    int n1 = leading_digits(w1);
    int n2 = leading_digits(w2) & -(n1 >> 3); /* w2 counts when w1 is all digits */
    *value = digits_value(w1, n1) * powers_u[n2] + digits_value(w2, n2);
    return n1 + n2;
}

/* The rest of a number from its exponent part at p on. */
static __attribute__((noinline)) const char *with_exponent(const char *start, const char *p,
                                                           const char *end, uint64_t m, int exp10,
                                                           bool negative, float *out)
{
    p = exponent_part(p, end, &exp10);
    if (!p)
        return NULL;
    if (decimal_to_float(m, exp10, negative, out))
        return p;
    return exact(start, p, out);
}

/* The common shapes, -?[0-9]{1,7}(.[0-9]{1,15})?([eE][+-]?[0-9]+)?, the
 * first digit not a 0 before another one and 15 digits at most; any other
 * text goes to plain_number. room: at least 32 bytes lie before end (this
 * reads at most 25 before an exponent part, which reads byte by byte);
 * without it every read is checked against end (word_at, byte_at; the
 * 16-byte block is read only with room): nothing at or past end is read. */
static inline __attribute__((always_inline)) const char *fast_number(const char *p, const char *end,
                                                                     float *out, bool room)
{
    const char *start = p;
    bool negative = byte_at(p, end, room) == '-';
    p += negative;

    uint64_t w = word_at(p, 0, end, room);
    int whole = leading_digits(w);
    if (whole == 0)
        return NULL;
    if (whole == 8 || (whole > 1 && (char)w == '0'))
        return plain_number(start, end, out);
    /* one integer digit is the usual case: its value without the join */
    uint64_t m = whole == 1 ? (w & 0xF) : digits_value(w, whole);
    int exp10 = 0;
    p += whole;

    if ((char)(w >> (8 * whole)) == '.') {
        uint64_t fraction;
        int n = fraction_digits(p + 1, end, room, &fraction);
        if (n == 0)
            return NULL;
        if (whole + n > 15)
            return plain_number(start, end, out);
        m = m * powers_u[n] + fraction;
        exp10 = -n;
        p += 1 + n;
    }
    if ((byte_at(p, end, room) | 0x20) == 'e')
        return with_exponent(start, p, end, m, exp10, negative, out);

    /* m < 10^15 and -15 <= exp10 <= 0 (m = 0 gives a zero of the right
     * sign). A multiplication by the double nearest 10^exp10, not the
     * division: two roundings put d within 2 of its ulps of m * 10^exp10
     * (1.24 the most in 300000 random cases). A float midpoint between the
     * two would lie in d's binade (none is a power of two), so d's bits
     * below float precision would be within 2 of 0x10000000; more than 4
     * away, d rounds to the float that the exact value rounds to. Nearer,
     * the division, exact as in decimal_to_float. */
    double dm = (double)(int64_t)m, d = dm * inverse_powers_d[-exp10];
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    if (((bits & 0x1FFFFFFFu) - 0x10000000u + 4) > 8) {
        store_float(d, negative, out);
        return p;
    }
    if (double_to_float(dm / exact_powers_d[-exp10], negative, out))
        return p;
    return exact(start, p, out);
}

/* Near end: every read checked (kept apart so that the common case
 * needs fewer registers). */
static __attribute__((noinline)) const char *near_end(const char *p, const char *end, float *out)
{
    if (end - p < 8) /* no word before end */
        return plain_number(p, end, out);
    return fast_number(p, end, out, false);
}

const char *json_number_to_float(const char *p, const char *end, float *out)
{
    if (end - p < 32)
        return near_end(p, end, out);
    return fast_number(p, end, out, true);
}

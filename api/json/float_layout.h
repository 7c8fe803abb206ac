/*
 * float_layout.h - shortest digits laid out as a JSON number, shared by the
 * writer (number_shim.cc, Dragonbox's digits) and the tests' reference
 * (float_text.c, f32_shortest's): plain notation for moderate exponents
 * ("0.00123", "123456"), exponent notation beyond ("1.5e-7", "3e38").
 *
 * Everything is static inline and valid C11 and C++17: it runs once per
 * number in the hottest loop of the JSON writer. Include it only where
 * numbers are written.
 */
#ifndef FLOAT_LAYOUT_H
#define FLOAT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static const char float_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The nine digits of n < 10^9, zero-padded, into out[0..9), without a
 * division: y = n * ceil(2^57 / 10^8) is n / 10^8 in 7.57 fixed point, so
 * its integer part is the first digit; each multiply of the fraction by
 * 100 moves the next two digits into the integer part (a two-digit table
 * lookup). The rounding up errs by under 1.7e-9 in n / 10^8, which stays
 * below the 10^-8 step of the exact fraction through all four multiplies,
 * so every digit is exact (and make test-float-text compares the text of
 * every float32 with the Dragonbox writer's). */
static inline void float_nine_digits(uint32_t n, char *out)
{
    const uint64_t fraction_mask = ((uint64_t)1 << 57) - 1;
    uint64_t y = (uint64_t)n * 1441151881u;
    out[0] = (char)('0' + (y >> 57));
    for (int i = 1; i < 9; i += 2) {
        y = (y & fraction_mask) * 100;
        memcpy(out + i, float_digit_pairs + 2 * (y >> 57), 2);
    }
}

/* Decimal digits of n, 1 <= n < 10^9 (Schubfach's significands have at
 * most nine): the bit length gives the count to within one. */
static inline unsigned float_digit_count(uint32_t n)
{
    static const uint32_t powers[10] = {0u,      10u,      100u,      1000u,      10000u,
                                        100000u, 1000000u, 10000000u, 100000000u, 1000000000u};
    unsigned guess = (unsigned)(32 - __builtin_clz(n | 1)) * 1233 >> 12; /* ~log10(2) */
    return guess + (n >= powers[guess]);
}

static inline size_t float_write_exponent(int e, char *out)
{
    size_t n = 0;
    out[n++] = 'e';
    if (e < 0) {
        out[n++] = '-';
        e = -e;
    }
    if (e >= 10)
        out[n++] = (char)('0' + e / 10);
    out[n++] = (char)('0' + e % 10);
    return n;
}

typedef void float_shortest_fn(float v, uint32_t *significand, int *exponent);

/* The text of v (finite) with the digits from `shortest` (a shortest
 * decimal: significand * 10^exponent, trailing zeros removed): plain
 * notation for moderate exponents, exponent notation beyond. Returns the
 * length; buf needs FLOAT_TEXT_MAX bytes. Inlined with a constant
 * `shortest`, the call goes away. */
static inline size_t float_layout(float v, char *buf, float_shortest_fn *shortest)
{
    /* nine digits, then room so that fixed 16-byte copies can read past them */
    char nine[32] = {0};
    char *p = buf;
    uint32_t significand, bits;
    int exponent;

    memcpy(&bits, &v, sizeof bits);
    /* The sign without a branch: signs of real data are random, and a
     * mispredicted branch costs more than the store. */
    *p = '-';
    p += bits >> 31;
    if ((bits & 0x7fffffffu) == 0) {
        *p++ = '0';
        *p = '\0';
        return (size_t)(p - buf);
    }
    shortest(v, &significand, &exponent);
    unsigned nd = float_digit_count(significand);
    float_nine_digits(significand, nine);
    const char *digits = nine + 9 - nd;
    /* value = 0.d1 d2 ... dnd * 10^point */
    int point = (int)nd + exponent;
    if (point > 0 && point <= 9) {
        /* Fixed-size copies (the compiler makes them single stores); the
         * bytes past the number are overwritten by what follows. */
        if ((unsigned)point >= nd) { /* an integer: digits, then zeros */
            memcpy(p, digits, 16);
            memset(p + nd, '0', 16);
            p += point;
        } else {
            memcpy(p, digits, 16);
            p += point;
            *p++ = '.';
            memcpy(p, digits + point, 16);
            p += nd - (unsigned)point;
        }
    } else if (point <= 0 && point > -5) {
        memcpy(p, "0.000000", 8);
        p += 2 - point;
        memcpy(p, digits, 16);
        p += nd;
    } else {
        *p++ = digits[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, 16);
            p += nd - 1;
        }
        p += float_write_exponent(point - 1, p);
    }
    *p = '\0';
    return (size_t)(p - buf);
}

#endif /* FLOAT_LAYOUT_H */

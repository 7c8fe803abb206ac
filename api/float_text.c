/*
 * float_text.c - shortest round-trip float32 text.
 *
 * Dragonbox (number_shim) finds the shortest decimal significand and
 * exponent that read back as the value; this file only lays the digits out
 * as a JSON number: plain notation for moderate exponents ("0.00123",
 * "123456"), exponent notation beyond ("1.5e-7", "3e38").
 */
#include "float_text.h"

#include <math.h>
#include <string.h>

#include "number_shim.h"

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Digits of n (n < 10^10), most significant first; returns their count.
 * Two digits per division, written from the right (the classic table
 * trick): this runs once per number of every JSON response. */
static size_t decimal_digits(uint32_t n, char *out)
{
    size_t len = n >= 1000000000u ? 10 : n >= 100000000u ? 9 : n >= 10000000u ? 8
               : n >= 1000000u ? 7 : n >= 100000u ? 6 : n >= 10000u ? 5
               : n >= 1000u ? 4 : n >= 100u ? 3 : n >= 10u ? 2 : 1;
    char *p = out + len;
    while (n >= 100) {
        uint32_t pair = (n % 100) * 2;
        n /= 100;
        *--p = digit_pairs[pair + 1];
        *--p = digit_pairs[pair];
    }
    if (n >= 10) {
        *--p = digit_pairs[n * 2 + 1];
        *--p = digit_pairs[n * 2];
    } else {
        *--p = (char)('0' + n);
    }
    return len;
}

static size_t write_exponent(int e, char *out)
{
    size_t n = 0;
    out[n++] = 'e';
    if (e < 0) {
        out[n++] = '-';
        e = -e;
    }
    return n + decimal_digits((uint32_t)e, out + n);
}

size_t float_to_text(float v, char *buf)
{
    char digits[10];
    size_t n = 0;
    uint32_t significand;
    int exponent;

    if (signbit(v))
        buf[n++] = '-';
    if (v == 0.0f) {
        buf[n++] = '0';
        buf[n] = '\0';
        return n;
    }
    shortest_decimal_f32(v, &significand, &exponent);
    size_t nd = decimal_digits(significand, digits);
    /* value = 0.d1 d2 ... dnd * 10^point */
    int point = (int)nd + exponent;
    if (point > 0 && point <= 9) {
        for (int i = 0; i < point; i++)
            buf[n++] = (size_t)i < nd ? digits[i] : '0';
        if ((size_t)point < nd) {
            buf[n++] = '.';
            for (size_t i = (size_t)point; i < nd; i++)
                buf[n++] = digits[i];
        }
    } else if (point <= 0 && point > -5) {
        buf[n++] = '0';
        buf[n++] = '.';
        for (int i = point; i < 0; i++)
            buf[n++] = '0';
        memcpy(buf + n, digits, nd);
        n += nd;
    } else {
        buf[n++] = digits[0];
        if (nd > 1) {
            buf[n++] = '.';
            memcpy(buf + n, digits + 1, nd - 1);
            n += nd - 1;
        }
        n += write_exponent(point - 1, buf + n);
    }
    buf[n] = '\0';
    return n;
}

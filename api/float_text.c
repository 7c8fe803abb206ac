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

/* Digits of n (n < 10^10), most significant first; returns their count. */
static size_t decimal_digits(uint32_t n, char *out)
{
    char tmp[10];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    for (size_t i = 0; i < k; i++)
        out[i] = tmp[k - 1 - i];
    return k;
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

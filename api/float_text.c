/*
 * float_text.c - shortest round-trip float32 text.
 *
 * For p significant digits, "%.*e" gives the correctly rounded p-digit
 * decimal of the value (glibc's printf is exact). If any p-digit decimal
 * reads back as the same float, the correctly rounded one does too, except
 * at powers of two where the rounding interval is lopsided; there we may
 * print one digit more than the theoretical minimum, which still reads back
 * exactly. Round-tripping is monotone in p, so a binary search over 1..9
 * (9 digits always suffice for float32, FLT_DECIMAL_DIG) finds the shortest.
 * The result is then written in the shorter of plain and exponent notation.
 */
#include "float_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int round_trips(float v, int digits, char *buf)
{
    snprintf(buf, FLOAT_TEXT_MAX, "%.*e", digits - 1, (double)v);
    return strtof(buf, NULL) == v;
}

/* Rewrite "d.ddde±XX" (digits significant) as the shortest valid JSON
 * number: plain notation when the exponent is small, else "de-7" style. */
static size_t tidy(const char *sci, char *out)
{
    const char *p = sci;
    char digits[16];
    size_t nd = 0;
    size_t n = 0;
    int negative = 0;

    if (*p == '-') {
        negative = 1;
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    int exponent = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--; /* trailing zeros of the mantissa carry no information */

    if (negative)
        out[n++] = '-';
    /* value = 0.d1d2...dnd * 10^(exponent+1) */
    int point = exponent + 1; /* digits before the decimal point */
    if (point > 0 && point <= 9) {
        for (int i = 0; i < point; i++)
            out[n++] = (size_t)i < nd ? digits[i] : '0';
        if ((size_t)point < nd) {
            out[n++] = '.';
            for (size_t i = (size_t)point; i < nd; i++)
                out[n++] = digits[i];
        }
    } else if (point <= 0 && point > -5) {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = point; i < 0; i++)
            out[n++] = '0';
        for (size_t i = 0; i < nd; i++)
            out[n++] = digits[i];
    } else {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            for (size_t i = 1; i < nd; i++)
                out[n++] = digits[i];
        }
        n += (size_t)snprintf(out + n, FLOAT_TEXT_MAX - n, "e%d", exponent);
    }
    out[n] = '\0';
    return n;
}

size_t float_to_text(float v, char *buf)
{
    char sci[FLOAT_TEXT_MAX];
    int lo = 1, hi = 9;

    if (v == 0.0f) {
        strcpy(buf, signbit(v) ? "-0" : "0");
        return strlen(buf);
    }
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (round_trips(v, mid, sci))
            hi = mid;
        else
            lo = mid + 1;
    }
    snprintf(sci, sizeof sci, "%.*e", lo - 1, (double)v);
    return tidy(sci, buf);
}

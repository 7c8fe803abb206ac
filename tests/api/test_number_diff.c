/*
 * test_number_diff.c - json_number_to_float against an independent
 * reference: RFC 8259's number grammar checked the simple way (one byte at
 * a time, below) and glibc's strtof on the text that grammar accepts.
 * Both must stop at the same place (or both say no number), and the floats
 * must be the same bits (-0 included).
 *
 * The texts, a few million a run: the shortest text of random float32 bit
 * patterns (float_to_text) and of values like posenc's embeddings, the
 * same digits laid out again (the point moved, leading and trailing zeros,
 * e/E, signed and zero-padded exponents), random digit strings with '.',
 * 'e', '-', '+' and leading zeros anywhere, mantissas of 17 to 40 digits,
 * and the exact midpoints between neighbouring floats (normal, subnormal,
 * past FLT_MAX), with a digit more or less. Each text is parsed
 *   - followed by more JSON (or by junk), `end` well past it: the parser's
 *     path for text with room after it;
 *   - as the last bytes of a heap block, `end` the block's end, then every
 *     prefix of it the same way: a read past `end` is caught by ASan
 *     (make SANITIZE=1) and, in a plain build, by the next case;
 *   - followed by digits that lie past `end`: they must change nothing.
 */
#include "test_list.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "json/float_text.h"
#include "json/json_number.h"

enum {
    TEXT_MAX = 256,       /* the longest generated text, with room */
    BLOCK = 2 * TEXT_MAX, /* the heap block a text ends (ASan's redzone past it) */
    REPORT = 8,           /* failures printed one by one */
};

typedef struct diff_run {
    uint64_t state;
    char *block;
    long texts, compared, wrong;
} diff_run;

static uint64_t rnd(diff_run *r)
{
    /* SplitMix64 */
    uint64_t z = (r->state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static int below(diff_run *r, int n)
{
    return (int)(rnd(r) % (uint64_t)n);
}

/* ---------------------------------------------------------------------- */
/* The reference                                                          */
/* ---------------------------------------------------------------------- */

static int digit_at(const char *p, const char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* The end of the JSON number at p (RFC 8259: -? (0 | [1-9][0-9]*)
 * (. [0-9]+)? ([eE] [+-]? [0-9]+)?), or NULL. A '.' or an 'e' commits:
 * "1." and "1e" are no number (json_number.h: as the decoder wants). */
static const char *ref_grammar(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (!digit_at(p, end))
        return NULL;
    if (*p == '0')
        p++;
    else
        while (digit_at(p, end))
            p++;
    if (p < end && *p == '.') {
        p++;
        if (!digit_at(p, end))
            return NULL;
        while (digit_at(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!digit_at(p, end))
            return NULL;
        while (digit_at(p, end))
            p++;
    }
    return p;
}

static const char *ref_parse(const char *p, const char *end, float *out)
{
    const char *q = ref_grammar(p, end);
    char copy[BLOCK + 1];
    if (!q)
        return NULL;
    memcpy(copy, p, (size_t)(q - p));
    copy[q - p] = '\0';
    *out = strtof(copy, NULL);
    return q;
}

/* ---------------------------------------------------------------------- */
/* One comparison                                                         */
/* ---------------------------------------------------------------------- */

static void compare(diff_run *r, const char *p, const char *end, const char *where)
{
    float got = 0.0f, want = 0.0f;
    const char *g = json_number_to_float(p, end, &got);
    const char *w = ref_parse(p, end, &want);
    bool same = g == w && (!w || memcmp(&got, &want, sizeof got) == 0);

    r->compared++;
    if (same)
        return;
    if (++r->wrong <= REPORT)
        CHECK(same, "%s: \"%.*s\" (%d bytes to end): got %s%ld %a, want %s%ld %a", where,
              (int)(end - p), p, (int)(end - p), g ? "end +" : "NULL", g ? (long)(g - p) : 0L,
              (double)got, w ? "end +" : "NULL", w ? (long)(w - p) : 0L, (double)want);
}

/* What may follow a number in a body, and what may not. */
static const char *const after[] = {
    ",-0.30471708,1.0399841,0.0061423727,-2.3e-05,12]]}",
    "]],\"shape\":[2,3],\"scheme\":\"sinusoidal\"}        ",
    " , 1.5 ,  2.25 ,  3.125 ,   4.0625  ,   5.03125 ]",
    "}                                                ",
    "9e9.5e-7E+8-0123456789.0123456789e0123456789.....",
    "x0.1234567890123456789012345678901234567890123456",
    ".e-+0.5e+1E-2.3e.e..+-+-0000000000000000000000000",
    "e-0000000000000000000000000000000000000000000000001",
    "/:/:9:0/\x80\xb9\xba\xff 5                                    ",
    ":1234567890123456789/0123456789\xb0\xb9                      ",
};

/* What lies past end in "digits past end": a digit or two more change the
 * value if they are read, more than 15 send the text to the byte reader. */
static const char *const past[] = {"5,0000000000000000", "0123456789.5e5000", "9]00000000000000",
                                   "e5,0000000000000",   ".5,0000000000000",  "55555,0000000000",
                                   "1e+1,00000000000"};

/* Text s (n bytes) in every setting of the top of the file. */
static void compare_text(diff_run *r, const char *s, size_t n, bool prefixes)
{
    char buf[TEXT_MAX + 64];
    const char *tail = after[below(r, ARRAY_LEN(after))];
    size_t k = strlen(tail);

    r->texts++;
    memcpy(buf, s, n);
    memcpy(buf + n, tail, k);
    compare(r, buf, buf + n + k, "followed by more");
    compare(r, buf, buf + n + 1 + (size_t)below(r, (int)k), "followed by some");

    for (size_t len = prefixes ? 0 : n; len <= n; len++) {
        char *at = r->block + BLOCK - len;
        memcpy(at, s, len);
        compare(r, at, at + len, "at the end of a block");
        memcpy(buf, s, len);
        memcpy(buf + len, past[(len + n) % ARRAY_LEN(past)], 16);
        compare(r, buf, buf + len, "digits past end");
        if (len < n)
            r->texts++;
    }
}

/* ---------------------------------------------------------------------- */
/* The texts                                                              */
/* ---------------------------------------------------------------------- */

static size_t put(char *out, size_t n, char c, size_t times)
{
    while (times-- > 0 && n < TEXT_MAX - 1)
        out[n++] = c;
    return n;
}

/* digits[0..nd) * 10^e10 in plain notation, as posenc's clients write
 * numbers, or 0 when that needs more than a few zeros. */
static size_t plain(bool neg, const char *digits, int nd, long e10, char *out)
{
    size_t n = neg;
    out[0] = '-';
    if (e10 > 0 || e10 < -nd - 3)
        return 0;
    if (-e10 < nd) {
        size_t whole = (size_t)(nd + e10);
        memcpy(out + n, digits, whole);
        n += whole;
        if (e10 < 0)
            out[n++] = '.';
        memcpy(out + n, digits + whole, (size_t)-e10);
        return n + (size_t)-e10;
    }
    memcpy(out + n, "0.000", 2 + (size_t)(-e10 - nd));
    n += 2 + (size_t)(-e10 - nd);
    memcpy(out + n, digits, (size_t)nd);
    return n + (size_t)nd;
}

/* The number digits[0..nd) * 10^e10 written again in one of the many ways
 * JSON allows (and sometimes a trailing '.', a '+' sign or an empty
 * exponent, which it does not). Returns the length. */
static size_t lay_out(diff_run *r, bool neg, const char *digits, int nd, long e10, char *out)
{
    size_t n = 0;
    if (neg)
        out[n++] = '-';
    else if (below(r, 200) == 0)
        out[n++] = '+';
    int style = below(r, 4);
    long plain_zeros = e10 >= 0 ? e10 : -e10 - nd;
    if (style == 0 && plain_zeros <= 45) { /* plain notation */
        if (e10 >= 0) {
            memcpy(out + n, digits, (size_t)nd);
            n = put(out, n + (size_t)nd, '0', (size_t)e10);
        } else if (-e10 < nd) {
            size_t whole = (size_t)(nd + e10);
            memcpy(out + n, digits, whole);
            out[n + whole] = '.';
            memcpy(out + n + whole + 1, digits + whole, (size_t)nd - whole);
            n += (size_t)nd + 1;
        } else {
            n = put(out, n, '0', 1);
            n = put(out, n, '.', 1);
            n = put(out, n, '0', (size_t)plain_zeros);
            memcpy(out + n, digits, (size_t)nd);
            n += (size_t)nd;
        }
        if (below(r, 8) == 0) { /* trailing zeros (none: "12." is no number) */
            if (e10 >= 0)
                out[n++] = '.';
            n = put(out, n, '0', (size_t)below(r, 24));
        }
        return n;
    }
    /* d.ddd or ddd.d or 0.000ddd, then an exponent */
    int lead = below(r, 3) == 0 ? below(r, 6) : 0; /* "0.000" before the digits */
    int whole = lead ? 0 : 1 + below(r, nd);       /* digits before the point */
    long x = lead ? e10 + nd + lead - 1 : e10 + nd - whole;
    bool point = lead || whole < nd || below(r, 10) == 0;
    if (lead) {
        n = put(out, n, '0', 1);
        n = put(out, n, '.', 1);
        n = put(out, n, '0', (size_t)lead - 1);
        memcpy(out + n, digits, (size_t)nd);
        n += (size_t)nd;
    } else {
        memcpy(out + n, digits, (size_t)whole);
        n += (size_t)whole;
        if (point)
            out[n++] = '.';
        memcpy(out + n, digits + whole, (size_t)(nd - whole));
        n += (size_t)(nd - whole);
    }
    if (point && below(r, 10) == 0)
        n = put(out, n, '0', (size_t)below(r, 24));
    if (x == 0 && below(r, 3) == 0)
        return n;
    out[n++] = below(r, 4) == 0 ? 'E' : 'e';
    if (x < 0)
        out[n++] = '-';
    else if (below(r, 3) == 0)
        out[n++] = '+';
    n = put(out, n, '0', below(r, 6) == 0 ? (size_t)below(r, 30) : 0);
    if (below(r, 500) != 0)
        n += (size_t)snprintf(out + n, 24, "%ld", x < 0 ? -x : x);
    return n;
}

/* The significant digits of the decimal in text ("[-]d.ddde[+-]x", as
 * %e writes it) into digits, trailing zeros dropped; returns their count
 * and the exponent of the last one. */
static int e_digits(const char *text, char *digits, long *e10)
{
    int nd = 0;
    const char *p = text + (*text == '-');
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    long x = *p ? strtol(p + 1, NULL, 10) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    *e10 = x - (nd - 1);
    return nd;
}

static float random_float(diff_run *r)
{
    for (;;) {
        uint32_t bits = (uint32_t)rnd(r);
        float v;
        int kind = below(r, 4);
        if (kind == 0) /* like posenc's embeddings */
            v = (float)((double)(int32_t)bits / 2147483648.0 * 3.0);
        else if (kind == 1) /* small magnitudes, many leading zeros */
            v = ldexpf((float)(int32_t)bits / 2147483648.0f, -below(r, 30));
        else
            memcpy(&v, &bits, sizeof v);
        if (isfinite(v))
            return v;
    }
}

/* Shortest texts of floats, as posenc receives them, and their digits
 * laid out again. */
static void float_texts(diff_run *r, long count)
{
    char text[TEXT_MAX], digits[TEXT_MAX];
    for (long i = 0; i < count; i++) {
        float v = random_float(r);
        size_t n = float_to_text(v, text);
        compare_text(r, text, n, i % 8 == 0);
        if (i % 4 == 0) {
            char e[64];
            long e10;
            snprintf(e, sizeof e, "%.8e", (double)v);
            int nd = e_digits(e, digits, &e10);
            compare_text(r, text, lay_out(r, v < 0, digits, nd, e10, text), i % 16 == 0);
        }
    }
}

/* Random strings of the number characters, and numbers built from random
 * parts: leading zeros, empty parts, signs where they may and may not be. */
static void random_texts(diff_run *r, long count)
{
    /* with the bytes next to the digits ('/', ':') and bytes past 0x7f,
     * the edges of a word-at-a-time digit test */
    static const char alphabet[] = "0123456789012345678901234567890123456789..eE-+-+ ,x/:"
                                   "\x80\xb0\xb9\xba\xff";
    char text[TEXT_MAX];
    for (long i = 0; i < count; i++) {
        size_t n = 0;
        if (i % 2 == 0) {
            size_t len = (size_t)below(r, 24);
            for (; n < len; n++)
                text[n] = alphabet[below(r, (int)sizeof alphabet - 1)];
        } else {
            static const char *const signs[] = {"", "", "", "-", "-", "+", "--", "-+"};
            const char *sign = signs[below(r, ARRAY_LEN(signs))];
            n = strlen(sign);
            memcpy(text, sign, n);
            n = put(text, n, '0', below(r, 3) == 0 ? (size_t)below(r, 4) : 0);
            for (int d = below(r, 3) == 0 ? 0 : below(r, 12); d > 0; d--)
                text[n++] = (char)('0' + below(r, 10));
            if (below(r, 3) != 0) {
                text[n++] = '.';
                n = put(text, n, '0', below(r, 3) == 0 ? (size_t)below(r, 12) : 0);
                for (int d = below(r, 8) == 0 ? 0 : below(r, 22); d > 0; d--)
                    text[n++] = (char)('0' + below(r, 10));
            }
            if (below(r, 3) == 0) {
                text[n++] = "eE"[below(r, 2)];
                if (below(r, 2))
                    text[n++] = "+-"[below(r, 2)];
                int width = below(r, 10) == 0 ? below(r, 25) : below(r, 4);
                for (int d = 0; d < width; d++)
                    text[n++] = (char)('0' + below(r, 10));
            }
        }
        compare_text(r, text, n, i % 4 == 0);
    }
}

/* Mantissas of 17 to 40 digits (past 19 the parser asks fast_float),
 * across float32's range and past it. */
static void long_texts(diff_run *r, long count)
{
    char text[TEXT_MAX], digits[48];
    for (long i = 0; i < count; i++) {
        int nd = 17 + below(r, 24);
        for (int d = 0; d < nd; d++)
            digits[d] = (char)('0' + below(r, 10));
        digits[0] = (char)('1' + below(r, 9));
        if (below(r, 4) == 0) /* many zeros or nines after the first digits */
            memset(digits + 2 + below(r, 4), below(r, 2) ? '0' : '9', (size_t)nd - 6);
        long e10 = below(r, 8) == 0 ? below(r, 120) - 60 - nd : -nd + below(r, 100) - 50;
        if (below(r, 16) == 0)
            e10 = below(r, 2) ? 39 - nd + below(r, 3) : -46 - nd - below(r, 3);
        compare_text(r, text, lay_out(r, below(r, 2), digits, nd, e10, text), i % 16 == 0);
    }
}

/* The exact midpoint between a float and the next (ties go to the even
 * one), the same with a digit more (just above) and cut short (just
 * below). The floats: random, subnormal, the largest and around 2^24 and
 * 2^53, whose midpoints are short integers and short decimals. */
static void midpoint_texts(diff_run *r, long count)
{
    char e[TEXT_MAX], digits[TEXT_MAX], text[TEXT_MAX];
    for (long i = 0; i < count; i++) {
        float v;
        switch (i % 6) {
        case 0:
            v = fabsf(random_float(r));
            break;
        case 1: /* subnormal (or zero) */
            v = ldexpf((float)below(r, 1 << 23), -149);
            break;
        case 2: /* the largest floats: past FLT_MAX's midpoint is infinity */
            v = nextafterf(FLT_MAX, 0.0f);
            v = below(r, 2) ? FLT_MAX : v;
            break;
        default: /* short midpoints: integers and short decimals */
            v = ldexpf((float)((1 << 23) + below(r, 1 << 23)), below(r, 40) - 23);
            break;
        }
        int exponent;
        frexp((double)v, &exponent);
        double half_ulp = v < FLT_MIN ? ldexp(1.0, -150) : ldexp(1.0, exponent - 25);
        double mid = (double)v + half_ulp;
        snprintf(e, sizeof e, "%.140e", mid);
        long e10;
        int nd = e_digits(e, digits, &e10);
        bool neg = below(r, 2);
        compare_text(r, text, lay_out(r, neg, digits, nd, e10, text), i % 16 == 0);
        digits[nd] = (char)('1' + below(r, 9)); /* just above */
        compare_text(r, text, lay_out(r, neg, digits, nd + 1, e10 - 1, text), false);
        if (nd > 1) { /* just below: the last digit dropped */
            int keep = 1 + below(r, nd - 1);
            compare_text(r, text, lay_out(r, neg, digits, keep, e10 + nd - keep, text), false);
        }
        if (nd > 17) { /* 14 to 17 digits, in plain notation: the parser's 15-digit limit */
            int keep = 14 + below(r, 4);
            digits[keep - 1] = (char)(digits[keep - 1] + (digits[keep - 1] < '9' && below(r, 2)));
            size_t n = plain(neg, digits, keep, e10 + nd - keep, text);
            if (n)
                compare_text(r, text, n, false);
        }
    }
}

static void report(diff_run *r, const char *what, double start)
{
    CHECK(r->wrong == 0, "%s: %ld of %ld comparisons (%ld texts) differ from the reference", what,
          r->wrong, r->compared, r->texts);
    printf("number_diff %s: %ld texts, %ld comparisons, %.2f s\n", what, r->texts, r->compared,
           check_clock() - start);
    r->texts = r->compared = r->wrong = 0;
}

void test_number_diff(void)
{
    diff_run r = {.state = 20261202, .block = malloc(BLOCK)};
    double start = check_clock();

    if (!r.block) {
        CHECK_FAIL(NULL, "out of memory");
        return;
    }
    float_texts(&r, 500000);
    report(&r, "float texts", start);
    random_texts(&r, 400000);
    report(&r, "random texts", start);
    long_texts(&r, 120000);
    report(&r, "long mantissas", start);
    midpoint_texts(&r, 50000);
    report(&r, "midpoints", start);
    free(r.block);
}

/*
 * json_number.c - JSON number text to float32, fast and correctly rounded
 * (see json_number.h).
 */
#include "json/json_number.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "json/number_shim.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Powers of ten exact in float32 (5^10 < 2^24) and in double (5^22 < 2^53). */
static const float exact_powers_f[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                       1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
static const double exact_powers_d[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* m * 10^exp10 rounded to float32, when it can be done exactly and fast:
 * - m < 10^7 and |exp10| <= 10: both factors are exact floats, so one float
 *   multiplication or division is the correctly rounded result (Clinger);
 * - m < 10^15 and |exp10| <= 22: both are exact doubles, so d = m*10^e is
 *   the correctly rounded double, within half a double ulp of the exact
 *   value. No float rounding boundary (a midpoint between two floats, itself
 *   a double) can lie strictly between them unless d is that midpoint, so
 *   unless d's 29 bits below float precision read exactly half, (float)d is
 *   the correctly rounded float.
 * Returns false when neither applies (the caller asks fast_float). */
static bool fast_decimal_to_float(uint64_t m, int digits, int exp10, float *out)
{
    if (m == 0) {
        *out = 0.0f;
        return true;
    }
    if (digits <= 7 && exp10 >= -10 && exp10 <= 10) {
        float v = (float)m;
        *out = exp10 < 0 ? v / exact_powers_f[-exp10] : v * exact_powers_f[exp10];
        return true;
    }
    if (digits <= 15 && exp10 >= -22 && exp10 <= 22) {
        double d = exp10 < 0 ? (double)m / exact_powers_d[-exp10]
                             : (double)m * exact_powers_d[exp10];
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        if ((bits & 0x1FFFFFFFu) == 0x10000000u)
            return false; /* exactly on a float midpoint: decide exactly */
        *out = (float)d;  /* d >= 1e-22: never a subnormal float */
        return true;
    }
    return false;
}

const char *json_number_to_float(const char *p, const char *end, float *out)
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
    if (p < end && (*p == 'e' || *p == 'E')) {
        int sign = 1, e = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            sign = *p++ == '-' ? -1 : 1;
        if (p >= end || !is_digit(*p))
            return NULL;
        for (; p < end && is_digit(*p); p++)
            if (e < 100000)
                e = e * 10 + (*p - '0');
        exp10 += sign * e;
    }
    float v;
    if (fast_decimal_to_float(m, digits, exp10, &v)) {
        *out = negative ? -v : v;
        return p;
    }
    return parse_f32(start, p, out) == p ? p : NULL;
}

/*
 * low_precision.c - rounding a double to bfloat16 and float16 (nearest,
 * ties to even), the storage formats some clients compute in: Falcon's
 * ALiBi bias here, the emulated client arithmetic of the diagnosis.
 */
#include <math.h>

#include "internal.h"

/* Round x to `bits` significant bits (nearest, ties to even), keeping
 * values below the smallest normal on the subnormal grid min_exp. */
static double round_bits(double x, int bits, int min_exp)
{
    if (x == 0.0 || !isfinite(x))
        return x;
    int e;
    frexp(x, &e); /* x = f * 2^e, 0.5 <= |f| < 1 */
    if (e < min_exp)
        e = min_exp;
    double q = ldexp(1.0, e - bits); /* the spacing at x */
    return nearbyint(x / q) * q;
}

double pe_round_bfloat16(double x)
{
    /* through float32 first, as a float32 tensor's .bfloat16() is */
    double r = round_bits((double)(float)x, 8, -125);
    return fabs(r) > 3.3895313892515355e38 ? copysign(INFINITY, r) : r;
}

double pe_round_float16(double x)
{
    double r = round_bits(x, 11, -13);
    return fabs(r) > 65504.0 ? copysign(INFINITY, r) : r;
}

/*
 * f32_shortest.h - the shortest decimal of a binary32 value: Raffaello
 * Giulietti's Schubfach ("The Schubfach way to render doubles", 2020) for
 * 24-bit significands, after Alexander Bolz's schubfach_32 (drachennest,
 * Boost licence). One 64x32-bit multiply per boundary with a 64-bit power
 * of ten, rounded to odd, then at most two candidates to compare: no loop
 * over digits, no division but by 10 and 4.
 *
 * Everything is static inline: the function runs once per number in the
 * hottest loop of a JSON writer, where a call would cost a fifth of its
 * time. Since Dragonbox (inlined, number_shim.cc) writes the server's
 * numbers, these digits are the tests' independent reference
 * (float_text.c).
 */
#ifndef F32_SHORTEST_H
#define F32_SHORTEST_H

#include <stdint.h>
#include <string.h>

#define F32_SIGNIFICAND_BITS 23
#define F32_EXPONENT_BIAS (127 + F32_SIGNIFICAND_BITS)
#define F32_POW10_MIN (-31)
#define F32_POW10_MAX 45

/* 10^e for e in [F32_POW10_MIN, F32_POW10_MAX], normalised to [2^63, 2^64): exact
 * where 10^e has at most 64 significant bits (0 <= e <= 27), otherwise
 * rounded up (floor + 1), as Schubfach requires. Made by
 *   g = 10**e << (64 - L) (exact) or floor(2**r / 10**-e) + 1
 * in Python's integers; tests compare the result with Dragonbox. */
static const uint64_t f32_pow10_significands[F32_POW10_MAX - F32_POW10_MIN + 1] = {
    0x81CEB32C4B43FCF5ULL, 0xA2425FF75E14FC32ULL, 0xCAD2F7F5359A3B3FULL, 0xFD87B5F28300CA0EULL,
    0x9E74D1B791E07E49ULL, 0xC612062576589DDBULL, 0xF79687AED3EEC552ULL, 0x9ABE14CD44753B53ULL,
    0xC16D9A0095928A28ULL, 0xF1C90080BAF72CB2ULL, 0x971DA05074DA7BEFULL, 0xBCE5086492111AEBULL,
    0xEC1E4A7DB69561A6ULL, 0x9392EE8E921D5D08ULL, 0xB877AA3236A4B44AULL, 0xE69594BEC44DE15CULL,
    0x901D7CF73AB0ACDAULL, 0xB424DC35095CD810ULL, 0xE12E13424BB40E14ULL, 0x8CBCCC096F5088CCULL,
    0xAFEBFF0BCB24AAFFULL, 0xDBE6FECEBDEDD5BFULL, 0x89705F4136B4A598ULL, 0xABCC77118461CEFDULL,
    0xD6BF94D5E57A42BDULL, 0x8637BD05AF6C69B6ULL, 0xA7C5AC471B478424ULL, 0xD1B71758E219652CULL,
    0x83126E978D4FDF3CULL, 0xA3D70A3D70A3D70BULL, 0xCCCCCCCCCCCCCCCDULL, 0x8000000000000000ULL,
    0xA000000000000000ULL, 0xC800000000000000ULL, 0xFA00000000000000ULL, 0x9C40000000000000ULL,
    0xC350000000000000ULL, 0xF424000000000000ULL, 0x9896800000000000ULL, 0xBEBC200000000000ULL,
    0xEE6B280000000000ULL, 0x9502F90000000000ULL, 0xBA43B74000000000ULL, 0xE8D4A51000000000ULL,
    0x9184E72A00000000ULL, 0xB5E620F480000000ULL, 0xE35FA931A0000000ULL, 0x8E1BC9BF04000000ULL,
    0xB1A2BC2EC5000000ULL, 0xDE0B6B3A76400000ULL, 0x8AC7230489E80000ULL, 0xAD78EBC5AC620000ULL,
    0xD8D726B7177A8000ULL, 0x878678326EAC9000ULL, 0xA968163F0A57B400ULL, 0xD3C21BCECCEDA100ULL,
    0x84595161401484A0ULL, 0xA56FA5B99019A5C8ULL, 0xCECB8F27F4200F3AULL, 0x813F3978F8940985ULL,
    0xA18F07D736B90BE6ULL, 0xC9F2C9CD04674EDFULL, 0xFC6F7C4045812297ULL, 0x9DC5ADA82B70B59EULL,
    0xC5371912364CE306ULL, 0xF684DF56C3E01BC7ULL, 0x9A130B963A6C115DULL, 0xC097CE7BC90715B4ULL,
    0xF0BDC21ABB48DB21ULL, 0x96769950B50D88F5ULL, 0xBC143FA4E250EB32ULL, 0xEB194F8E1AE525FEULL,
    0x92EFD1B8D0CF37BFULL, 0xB7ABC627050305AEULL, 0xE596B7B0C643C71AULL, 0x8F7E32CE7BEA5C70ULL,
    0xB35DBF821AE4F38CULL,
};

/* floor(e * log10(2)), and with the lower boundary at 3/4 of the step,
 * floor(log10(3/4 * 2^e)); exact for |e| <= 1500. */
static inline int f32_floor_log10_pow2(int e, int lower_boundary_is_closer)
{
    int scaled = e * 1262611 - (lower_boundary_is_closer ? 524031 : 0);
    return scaled >= 0 ? scaled >> 22 : -((-scaled + (1 << 22) - 1) >> 22);
}

/* floor(e * log2(10)) for |e| <= 1650. */
static inline int f32_floor_log2_pow10(int e)
{
    int scaled = e * 1741647;
    return scaled >= 0 ? scaled >> 19 : -((-scaled + (1 << 19) - 1) >> 19);
}

/* The top 32 bits of the 96-bit g * cp, with a sticky bit: odd when any
 * bit below was set (beyond the last one, which rounding makes noise). */
static inline uint32_t f32_round_to_odd(uint64_t g, uint32_t cp)
{
    unsigned __int128 p = (unsigned __int128)g * cp;
    uint32_t y1 = (uint32_t)(p >> 64);
    uint32_t y0 = (uint32_t)(p >> 32);
    return y1 | (y0 > 1);
}

static inline void f32_remove_trailing_zeros(uint32_t *significand, int *exponent)
{
    while (*significand % 10 == 0) {
        *significand /= 10;
        ++*exponent;
    }
}

/* The shortest decimal significand * 10^exponent that reads back as |v|
 * (the one closest to |v| among the shortest, ties to even significand),
 * trailing zeros removed: the same answer as Dragonbox. v finite and
 * non-zero. */
static inline void f32_shortest(float v, uint32_t *significand, int *exponent)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint32_t fraction = bits & ((1u << F32_SIGNIFICAND_BITS) - 1);
    uint32_t biased = (bits >> F32_SIGNIFICAND_BITS) & 0xFF;
    uint32_t c;
    int q;

    if (biased != 0) {
        c = (1u << F32_SIGNIFICAND_BITS) | fraction;
        q = (int)biased - F32_EXPONENT_BIAS;
        /* integers below 2^24: the value itself */
        if (q <= 0 && -q <= F32_SIGNIFICAND_BITS && (c & ((1u << -q) - 1)) == 0) {
            *significand = c >> -q;
            *exponent = 0;
            f32_remove_trailing_zeros(significand, exponent);
            return;
        }
    } else {
        c = fraction;
        q = 1 - F32_EXPONENT_BIAS;
    }

    /* The interval of reals that round to v, in units of 2^(q-2):
     * [cbl, cbr], closed when c is even (round half to even). */
    int even = (c & 1) == 0;
    int lower_boundary_is_closer = fraction == 0 && biased > 1;
    uint32_t cbl = 4 * c - 2 + (uint32_t)lower_boundary_is_closer;
    uint32_t cb = 4 * c;
    uint32_t cbr = 4 * c + 2;

    int k = f32_floor_log10_pow2(q, lower_boundary_is_closer);
    int h = q + f32_floor_log2_pow10(-k) + 1; /* 1..4 */
    uint64_t g = f32_pow10_significands[-k - F32_POW10_MIN];
    uint32_t vbl = f32_round_to_odd(g, cbl << h);
    uint32_t vb = f32_round_to_odd(g, cb << h);
    uint32_t vbr = f32_round_to_odd(g, cbr << h);
    uint32_t lower = vbl + !even;
    uint32_t upper = vbr - !even;

    /* One digit fewer than vb's, if a multiple of 10 lies in the interval
     * (at most one of the two neighbours can); otherwise s or s + 1: the
     * one inside, or the closer (ties to even). Both are computed and one
     * picked without a branch: which one applies is data, not a pattern a
     * branch predictor can learn. */
    uint32_t s = vb / 4;
    uint32_t sp = s / 10;
    uint32_t up_inside = lower <= 40 * sp;
    uint32_t wp_inside = 40 * sp + 40 <= upper;
    uint32_t shorter = (s >= 10) & (up_inside != wp_inside);
    uint32_t u_inside = lower <= 4 * s;
    uint32_t w_inside = 4 * s + 4 <= upper;
    uint32_t mid = 4 * s + 2;
    uint32_t closer_up = (vb > mid) | ((vb == mid) & (s & 1));
    uint32_t one_inside = u_inside != w_inside;
    uint32_t round_up = one_inside ? w_inside : closer_up;
    *significand = shorter ? sp + wp_inside : s + round_up;
    *exponent = k + (int)shorter;
    f32_remove_trailing_zeros(significand, exponent);
}

#endif /* F32_SHORTEST_H */

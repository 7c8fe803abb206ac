/*
 * diagnose_llama3.c - the llama3 band's parameters read off a measured
 * frequency profile.
 *
 * Llama 3.1's scaling keeps the frequencies whose wavelength is under
 * orig/high_freq_factor, divides those past orig/low_freq_factor by the
 * factor, and blends the band between linearly in u = orig/wavelength:
 * the kept share s = (u - low)/(high - low). Each measured frequency over
 * the base's gives r = 1/f + s (1 - 1/f), so s per frequency; the band's
 * points lie on one line in u, whose zero and one are low and high. Only
 * orig/low and orig/high matter: the values are given at the claim's
 * original context, or at another one when that keeps the claim's band.
 */
#include <math.h>

#include "diagnose_common.h"

/* The kept share of a measured frequency under factor f. */
static double kept_share(double measured, double base, size_t i, size_t rd, double f)
{
    double r = fabs(measured) / pe_inv_freq(base, i, rd);
    return (r - 1.0 / f) / (1.0 - 1.0 / f);
}

/* A value in (lo, hi), as round as the interval allows: the geometric
 * middle to the fewest significant digits that stay inside; 0 when empty. */
static double round_between(double lo, double hi)
{
    if (!(lo > 0) || !(hi > lo))
        return 0;
    double mid = sqrt(lo * hi);
    for (int dg = 1; dg <= 8; dg++) {
        double v = pe_dx_round_sig(mid, dg);
        if (v > lo && v < hi)
            return v;
    }
    return mid;
}

/* low and high to the fewest significant digits (up to 4) under which
 * every band point keeps its share within 1e-4; the exact ones when none
 * does. */
static void round_band(const double *u, const double *s, size_t n, double *low, double *high)
{
    for (int dg = 1; dg <= 4; dg++) {
        double lo = pe_dx_round_sig(*low, dg), hi = pe_dx_round_sig(*high, dg);
        bool fits = hi > lo;
        for (size_t k = 0; k < n && fits; k++)
            fits = fabs((u[k] - lo) / (hi - lo) - s[k]) <= 1e-4;
        if (fits) {
            *low = lo;
            *high = hi;
            return;
        }
    }
}

typedef struct band_points {
    double u[64], s[64]; /* the band's points: u = orig/wavelength, share */
    size_t n, kept;
    double kept_u, divided_u; /* the last kept and first divided, or 0 */
} band_points;

/* Sorts the measured frequencies into kept, band and divided. false when
 * the profile is no llama3 band (a high frequency not kept, a share
 * outside [0, 1] or out of order), or when the highest frequency alone
 * is kept: a band from there down, whose share follows the frequency
 * (s = inv, each frequency squared), is the same profile as the base
 * squared, no scaling a checkpoint uses. */
static bool read_band(const double *m, size_t half, double base, size_t rd, double f, double orig,
                      band_points *b)
{
    b->n = b->kept = 0;
    b->kept_u = b->divided_u = 0;
    double prev = 1.0;
    for (size_t i = 0; i < half; i++) {
        double s = kept_share(m[i], base, i, rd, f);
        double u = orig * pe_inv_freq(base, i, rd) / (2 * DX_PI);
        if (!(s > -0.05 && s < 1.05 && s <= prev + 0.05))
            return false;
        prev = s;
        if (s >= 0.99) {
            b->kept_u = u;
            b->kept++;
        } else if (s <= 0.01) {
            if (b->divided_u == 0)
                b->divided_u = u;
        } else if (b->n < 64) {
            b->u[b->n] = u;
            b->s[b->n++] = s;
        }
    }
    return b->divided_u > 0 && b->kept >= 2;
}

/* low and high from two or more band points: the line s = a u + c fitted
 * by least squares; false when it does not rise. */
static bool fit_band(const band_points *b, double *low, double *high)
{
    double su = 0, ss = 0, suu = 0, sus = 0, n = (double)b->n;
    for (size_t k = 0; k < b->n; k++) {
        su += b->u[k];
        ss += b->s[k];
        suu += b->u[k] * b->u[k];
        sus += b->u[k] * b->s[k];
    }
    double den = n * suu - su * su;
    if (!(fabs(den) > 0))
        return false;
    double a = (n * sus - su * ss) / den, c = (ss - a * su) / n;
    if (!(a > 0))
        return false;
    *low = -c / a;
    *high = (1.0 - c) / a;
    round_band(b->u, b->s, b->n, low, high);
    return *low > 0 && *high > *low;
}

static size_t add(pe_rope_scaling *out, size_t n, size_t room, pe_rope_scaling sc, double low,
                  double high)
{
    if (n >= room || !(low > 0) || !(high >= low) || !isfinite(high))
        return n;
    sc.low_freq_factor = low;
    sc.high_freq_factor = high;
    out[n] = sc;
    return n + 1;
}

/* Band values from one band point or none, keeping the claim's low or
 * its high where the kept and divided neighbours allow. */
static size_t sparse_band(const band_points *b, pe_rope_scaling sc, double cl, double ch,
                          pe_rope_scaling *out, size_t n, size_t room)
{
    double top = b->kept_u > 0 ? b->kept_u : INFINITY, bottom = b->divided_u;
    if (b->n == 1) {
        double u = b->u[0], s = b->s[0];
        double high = cl + (u - cl) / s, low = (u - s * ch) / (1.0 - s);
        if (cl > bottom && cl < u && high > u && high < top)
            n = add(out, n, room, sc, cl, pe_dx_round_sig(high, 6));
        if (ch > u && ch < top && low > bottom && low < u)
            n = add(out, n, room, sc, pe_dx_round_sig(low, 6), ch);
        return n;
    }
    /* no band point: low and high both between the neighbours */
    bool low_fits = cl > bottom && cl<top, high_fits = ch> bottom && ch < top;
    if (low_fits)
        n = add(out, n, room, sc, cl, ch > cl && high_fits ? ch : round_between(cl, top));
    if (high_fits)
        n = add(out, n, room, sc, ch < cl || !low_fits ? round_between(bottom, ch) : cl, ch);
    double v = round_between(bottom, top);
    return add(out, n, room, sc, v, v);
}

size_t pe_dx_llama3_bands(const double *m, size_t half, double base, size_t rd, double f,
                          const pe_rope_scaling *claim, pe_rope_scaling *out, size_t room)
{
    bool own = claim->type == PE_ROPE_SCALING_LLAMA3 && claim->original_max_position_embeddings > 0;
    double orig = own ? claim->original_max_position_embeddings : 8192.0;
    double cl = own ? claim->low_freq_factor : 1.0, ch = own ? claim->high_freq_factor : 4.0;
    pe_rope_scaling sc = {.type = PE_ROPE_SCALING_LLAMA3,
                          .factor = f,
                          .original_max_position_embeddings = orig};
    band_points b;
    double low, high;
    size_t n = 0;

    if (!(f > 1.0) || !read_band(m, half, base, rd, f, orig, &b))
        return 0;
    if (b.n < 2)
        return sparse_band(&b, sc, cl, ch, out, n, room);
    if (!fit_band(&b, &low, &high))
        return 0;
    /* the claim's band on another original context (a whole number of
     * positions): both scaled alike */
    double k = low / cl, other_orig = round(orig / k);
    if (fabs(high / ch - k) <= 1e-3 * k && fabs(other_orig - orig / k) <= 1e-3 * other_orig) {
        pe_rope_scaling other = sc;
        other.original_max_position_embeddings = other_orig;
        n = add(out, n, room, other, cl, ch);
    }
    return add(out, n, room, sc, low, high);
}

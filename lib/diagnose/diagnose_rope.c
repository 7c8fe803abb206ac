/*
 * diagnose_rope.c - the search for RoPE subjects: rotated vectors
 * (embeddings + encoded) and cos/sin caches.
 *
 * 1. Readings: the ways the subject's channels may be paired (head_dim:
 *    the claim's or the whole vector; rotary_dim: the claim's or the count
 *    of channels that moved; layout half or interleaved; for a cache, sin
 *    and cos in place or swapped). Under the right reading every pair keeps
 *    its norm up to one constant, so a norm score ranks them; the few best
 *    go on.
 * 2. Per reading: frequencies by phase progression (diagnose_angles.c);
 *    their sign is the direction; the profile is matched against a fixed
 *    list of candidates (claimed base, its formula transforms, base^(r/h),
 *    the fitted base and its roundings, times the claimed scaling, none,
 *    linear, llama3, yarn and dynamic with factors read off the profile and
 *    usual original contexts); the offset comes from the remaining phase;
 *    the attention factor from the norm ratio.
 * 3. The finalists are rendered and compared; the closest wins.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

#define MAX_READINGS 40
#define MAX_FINALISTS 4
#define MAX_CANDIDATES 640

typedef struct reading {
    size_t hd, rd;
    pe_rope_layout layout;
    bool swapped;
    double norm_score;
} reading;

/* The two channels of in-head pair i. */
static void pair_channels(pe_rope_layout layout, size_t rd, size_t i, size_t *a, size_t *b)
{
    *a = layout == PE_ROPE_HALF ? i : 2 * i;
    *b = layout == PE_ROPE_HALF ? i + rd / 2 : 2 * i + 1;
}

/* Encoded subject: z = y conj(x) per pair of each head. Score: how far the
 * pair norms are from one common gain (|y|^2 = amp2 |x|^2), plus what the
 * pass-through channels changed. *amp_out: sqrt(amp2). */
static double encoded_phasors(const pe_dx_subject *s, const reading *rd_, size_t heads,
                              dx_phasors *ph, double *amp_out)
{
    size_t half = ph->half, pairs = ph->pairs;
    double sum_x2 = 0, sum_y2 = 0, pass_err = 0, pass_tot = 0;
    for (size_t t = 0; t < s->rows; t++)
        for (size_t h = 0; h < heads; h++) {
            const float *x = s->x + t * s->cols + h * rd_->hd;
            const float *y = s->a + t * s->cols + h * rd_->hd;
            for (size_t i = 0; i < half; i++) {
                double *z = ph->z + 2 * (t * pairs + h * half + i);
                size_t a, b;
                pair_channels(rd_->layout, rd_->rd, i, &a, &b);
                double complex zx = x[a] + I * (double)x[b];
                double complex zy = y[a] + I * (double)y[b];
                double complex zz = zy * conj(zx);
                z[0] = creal(zz);
                z[1] = cimag(zz);
                sum_x2 += creal(zx * conj(zx));
                sum_y2 += creal(zy * conj(zy));
            }
            for (size_t c = rd_->rd; c < rd_->hd; c++) {
                double e = (double)y[c] - x[c];
                pass_err += e * e;
                pass_tot += (double)x[c] * x[c] + (double)y[c] * y[c];
            }
        }

    double amp2 = sum_x2 > 0 ? sum_y2 / sum_x2 : 1.0;
    double dev = 0, tot = 0;
    for (size_t t = 0; t < s->rows; t++)
        for (size_t k = 0; k < pairs; k++) {
            /* |z| = |y||x|; |y|^2 - amp2 |x|^2 from |z| needs |x|: redo */
            size_t h = k / half, i = k % half, a, b;
            pair_channels(rd_->layout, rd_->rd, i, &a, &b);
            const float *x = s->x + t * s->cols + h * rd_->hd;
            const float *y = s->a + t * s->cols + h * rd_->hd;
            double nx = (double)x[a] * x[a] + (double)x[b] * x[b];
            double ny = (double)y[a] * y[a] + (double)y[b] * y[b];
            dev += fabs(ny - amp2 * nx);
            tot += ny + amp2 * nx;
        }
    *amp_out = sqrt(amp2);
    return (tot > 0 ? dev / tot : 1.0) + (pass_tot > 0 ? pass_err / pass_tot : 0.0);
}

/* cos/sin cache: one column per frequency, or its two copies (averaged).
 * Score: how far the copies differ, plus how far the norms are from their
 * mean. *amp_out: that mean (the attention factor). */
static double cache_phasors(const pe_dx_subject *s, const reading *rd_, dx_phasors *ph,
                            double *amp_out)
{
    size_t half = ph->half;
    double dup_err = 0, dup_tot = 0, amp_sum = 0;
    for (size_t t = 0; t < s->rows; t++) {
        const float *c = s->a + t * s->cols, *sn = s->b + t * s->cols;
        for (size_t i = 0; i < half; i++) {
            double *z = ph->z + 2 * (t * half + i);
            size_t a, b;
            if (s->cols == half)
                a = b = i;
            else
                pair_channels(rd_->layout, rd_->rd, i, &a, &b);
            double cv = 0.5 * ((double)c[a] + c[b]);
            double sv = 0.5 * ((double)sn[a] + sn[b]);
            dup_err += fabs((double)c[a] - c[b]) + fabs((double)sn[a] - sn[b]);
            dup_tot += fabs(cv) + fabs(sv);
            z[0] = rd_->swapped ? sv : cv;
            z[1] = rd_->swapped ? cv : sv;
            amp_sum += sqrt(cv * cv + sv * sv);
        }
    }

    size_t n = s->rows * half;
    double amp = n ? amp_sum / (double)n : 1.0, dev = 0;
    for (size_t e = 0; e < n; e++)
        dev += fabs(sqrt(ph->z[2 * e] * ph->z[2 * e] + ph->z[2 * e + 1] * ph->z[2 * e + 1]) - amp);
    *amp_out = amp;
    return (dup_tot > 0 ? dup_err / dup_tot : 0.0) + (amp_sum > 0 ? dev / amp_sum : 1.0);
}

/* Phasors of a reading and its norm score (lower: more like rotations).
 * *amp_out: the attention factor the norms show. ph->z is new (the
 * caller frees it, also after an error). */
static pe_status build_phasors(const pe_dx_subject *s, const reading *rd_, dx_phasors *ph,
                               double *amp_out, double *score_out)
{
    size_t half = rd_->rd / 2;
    bool encoded = s->kind == PE_DX_SUBJ_ROPE_ENCODED;
    size_t heads = encoded ? s->cols / rd_->hd : 1;
    size_t pairs = heads * half;

    ph->rows = s->rows;
    ph->pairs = pairs;
    ph->half = half;
    size_t cells = s->rows * pairs;
    ph->z = malloc((cells > 0 ? cells : 1) * 2 * sizeof *ph->z);
    if (!ph->z)
        return PE_ENOMEM;

    double score = encoded ? encoded_phasors(s, rd_, heads, ph, amp_out)
                           : cache_phasors(s, rd_, ph, amp_out);
    *score_out = isfinite(score) ? score : INFINITY;
    return PE_OK;
}

/* Rotated channel count of head size hd: one past the last channel that
 * moved, rounded up to even; 0 when none moved. */
static size_t moved_channels(const pe_dx_subject *s, size_t hd, pe_dx_tolerance tol)
{
    size_t last = 0;
    bool any = false;
    for (size_t t = 0; t < s->rows; t++)
        for (size_t c = 0; c < s->cols; c++) {
            double x = s->x[t * s->cols + c], y = s->a[t * s->cols + c];
            if (!(fabs(y - x) <= tol.atol + tol.rtol * fabs(x))) {
                size_t in_head = c % hd;
                if (!any || in_head > last)
                    last = in_head;
                any = true;
            }
        }
    if (!any)
        return 0;
    size_t n = last + 1;
    return n % 2 ? n + 1 : n;
}

static size_t add_reading(reading *list, size_t n, reading r)
{
    if (n >= MAX_READINGS || r.rd < 2 || r.rd % 2 || r.rd > r.hd || r.hd == 0)
        return n;
    for (size_t k = 0; k < n; k++)
        if (list[k].hd == r.hd && list[k].rd == r.rd && list[k].layout == r.layout &&
            list[k].swapped == r.swapped)
            return n;
    list[n] = r;
    return n + 1;
}

/* Head sizes worth trying when the claim gave none: the even divisors of
 * the width from 8 up (at most 24, the largest kept). */
static size_t head_sizes(size_t cols, size_t *out)
{
    size_t n = 0;
    for (size_t hd = cols; hd >= 8 && n < 24; hd--)
        if (hd % 2 == 0 && cols % hd == 0)
            out[n++] = hd;
    return n;
}

/* Interleaved pairs are (2i, 2i+1) whatever the head size: the head size
 * is the period of the frequency profile measured over the whole vector,
 * the smallest even divisor of the width under which every pair's
 * frequency repeats (within 0.1 rad over the positions' span); the width
 * when none does. */
static pe_status interleaved_period(const pe_dx_subject *s, size_t *period)
{
    size_t cols = s->cols, half = cols / 2;
    reading r = {cols, cols, PE_ROPE_INTERLEAVED, false, 0};
    dx_phasors ph = {0};
    double amp, score, span = pe_dx_seq_len(s, NULL, 0);
    double *m = malloc((half ? half : 1) * sizeof *m); /* owned */
    pe_status st = m ? build_phasors(s, &r, &ph, &amp, &score) : PE_ENOMEM;
    if (st == PE_OK)
        st = pe_dx_measure_freqs(&ph, s->positions, m);
    *period = cols;
    for (size_t hd = 4; st == PE_OK && hd < cols; hd += 2) {
        if (cols % hd)
            continue;
        bool repeats = true;
        for (size_t k = hd / 2; k < half && repeats; k++)
            repeats = fabs(m[k] - m[k % (hd / 2)]) * span <= 0.1;
        if (repeats) {
            *period = hd;
            break;
        }
    }
    free(ph.z);
    free(m);
    return st;
}

/* The readings of a claim without a head size: the interleaved period,
 * and every candidate head size in the half layout (whose pairing differs
 * by head size: the norms tell). Rotary width: the head's, or the claim's
 * when it named a partial one. */
static pe_status free_head_readings(const pe_dx_subject *s, const pe_dx_variant *claim,
                                    reading *list, size_t *n)
{
    size_t crd = claim->rope.rotary_dim, hds[24], period;
    bool full = crd == claim->rope.head_dim;
    pe_status st = interleaved_period(s, &period);
    if (st != PE_OK)
        return st;
    *n = add_reading(list, *n,
                     (reading){period, full ? period : crd, PE_ROPE_INTERLEAVED, false, 0});
    size_t nh = head_sizes(s->cols, hds);
    for (size_t k = 0; k < nh; k++)
        *n = add_reading(list, *n, (reading){hds[k], full ? hds[k] : crd, PE_ROPE_HALF, false, 0});
    return PE_OK;
}

static size_t make_readings(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_tolerance tol,
                            reading *list)
{
    size_t n = 0, chd = claim->rope.head_dim, crd = claim->rope.rotary_dim;
    pe_rope_layout cl = claim->rope.layout;
    pe_rope_layout other = cl == PE_ROPE_HALF ? PE_ROPE_INTERLEAVED : PE_ROPE_HALF;

    if (s->kind == PE_DX_SUBJ_ROPE_CACHE) {
        for (int sw = 0; sw < 2; sw++) {
            n = add_reading(list, n, (reading){chd, crd, cl, sw, 0});
            if (s->cols == crd)
                n = add_reading(list, n, (reading){chd, crd, other, sw, 0});
        }
        return n;
    }
    size_t hds[2] = {chd, s->cols};
    for (int k = 0; k < 2; k++) {
        size_t hd = hds[k];
        size_t moved = moved_channels(s, hd, tol);
        size_t rds[3] = {crd, moved, hd};
        for (int r = 0; r < 3; r++) {
            n = add_reading(list, n, (reading){hd, rds[r], cl, false, 0});
            n = add_reading(list, n, (reading){hd, rds[r], other, false, 0});
        }
    }
    /* twice or half as many heads as claimed (a port's num_heads or
     * head_dim off by a factor of two), in the claimed layout only: two
     * readings more, not four */
    size_t others[2] = {chd / 2, 2 * chd};
    for (int k = 0; k < 2; k++) {
        size_t hd = others[k], rd = crd == chd ? hd : crd < hd ? crd : hd;
        if (hd < 2 || hd >= s->cols || s->cols % hd)
            continue;
        n = add_reading(list, n, (reading){hd, rd, cl, false, 0});
    }
    return n;
}

/* A base worth trying, and why. */
typedef struct base_choice {
    double base;
    pe_dx_formula f;
    size_t fd;
} base_choice;

/* One frequency-profile candidate. */
typedef struct candidate {
    double base;
    pe_dx_formula formula;
    size_t frequency_dim;
    pe_rope_scaling scaling;
} candidate;

static size_t push(candidate *c, size_t n, candidate v)
{
    if (n >= MAX_CANDIDATES || !(v.base > 1.0) || !isfinite(v.base))
        return n;
    c[n] = v;
    return n + 1;
}

/* Factors worth trying: the measured one and its nearest integer. */
static size_t factor_set(double f, double *out)
{
    size_t n = 0;
    if (isfinite(f) && f > 1.0001 && f < 1e6) {
        double r = round(f);
        if (r >= 2 && fabs(f - r) < 0.05 * r)
            out[n++] = r;
        if (n == 0 || fabs(f - r) > 1e-9 * r)
            out[n++] = f;
    }
    return n;
}

/* The bases worth trying at reading r (at most 13): the claim's, its
 * equivalents under the other formulas and widths, and the base fitted
 * to the measured frequencies m (*fit_scale: the fit's intercept). */
static size_t candidate_bases(const pe_dx_variant *claim, const reading *r, const double *m,
                              base_choice *bases, double *fit_scale)
{
    size_t nb = 0, rd = r->rd, hd = r->hd, half = rd / 2;
    double cb = claim->rope.base;
    size_t crd = claim->rope.rotary_dim;
    double fitted = pe_dx_fit_base(m, half, rd, fit_scale);

    bases[nb++] = (base_choice){cb, PE_DX_FORMULA_STANDARD, rd};
    /* frequencies over head_dim first: at rotary_dim = head_dim/2 it is
     * the same base as the i/d formula, and the likelier cause */
    if (rd < hd)
        bases[nb++] = (base_choice){pow(cb, (double)rd / (double)hd), PE_DX_FORMULA_STANDARD, hd};
    for (int f = 1; f < PE_DX_FORMULA_COUNT; f++) {
        double b = pe_dx_formula_base((pe_dx_formula)f, cb, rd);
        if (b > 1.0)
            bases[nb++] = (base_choice){b, (pe_dx_formula)f, rd};
    }
    /* frequencies over the claim's rotary width; not where a full claim
     * reads as a whole other head: that head's own base says it */
    bool whole = crd == claim->rope.head_dim && rd == hd;
    if (rd != crd && crd >= 2 && !whole)
        bases[nb++] = (base_choice){pow(cb, (double)rd / (double)crd), PE_DX_FORMULA_STANDARD, crd};
    if (fitted > 1.0) {
        for (int dg = 1; dg <= 4; dg++)
            bases[nb++] = (base_choice){pe_dx_round_sig(fitted, dg), PE_DX_FORMULA_STANDARD, rd};
        bases[nb++] = (base_choice){fitted, PE_DX_FORMULA_STANDARD, rd};
    }
    return nb;
}

/* Original context lengths worth trying; 0 stands for the claim's own. */
static const double origs[] = {0, 8192, 4096, 2048, 16384, 32768};
#define N_ORIGS (sizeof origs / sizeof origs[0])

/* The powers of two in (lo, hi] (at most `room` of them) into out. */
static size_t powers_in(double lo, double hi, double *out, size_t n, size_t room)
{
    for (double p = 16; p <= hi && p <= 1048576.0 && n < room; p *= 2)
        if (p > lo)
            out[n++] = p;
    return n;
}

/* YaRN's original context from its ramp (factor f): frequencies up to lo =
 * max(floor(corr(32)), 0) keep the base's, those from hi = ceil(corr(1))
 * are divided by f, with corr(b) = rd ln(orig / (2 pi b)) / (2 ln base);
 * the ramp's first step 1 / (hi - lo) gives hi. The powers of two that
 * either bound allows (at most 4). */
static size_t yarn_origs(const double *m, size_t half, double base, size_t rd, double f,
                         double *out)
{
    size_t k = 0, n = 0;
    while (k < half &&
           fabs(fabs(m[k]) - pe_inv_freq(base, k, rd)) <= 1e-3 * pe_inv_freq(base, k, rd))
        k++;
    if (k == 0 || k >= half || !(f > 1.0))
        return 0;
    double e = 2.0 / (double)rd, lo = (double)(k - 1);
    if (lo > 0)
        n = powers_in(64.0 * M_PI * pow(base, e * (lo - 1)), 64.0 * M_PI * pow(base, e * lo), out,
                      n, 2);
    double ramp = (1.0 - fabs(m[k]) / pe_inv_freq(base, k, rd)) / (1.0 - 1.0 / f);
    if (ramp > 0.01 && ramp <= 1.0) {
        double hi = round(lo + 1.0 / ramp);
        n = powers_in(2.0 * M_PI * pow(base, e * (hi - 1)), 2.0 * M_PI * pow(base, e * hi), out, n,
                      4);
    }
    return n;
}

/* A YaRN scaling of Hugging Face's defaults (beta_fast 32, beta_slow 1,
 * truncated bounds) before its factor and original context are set: a
 * best always holds values /encode accepts. */
static void yarn_defaults(pe_rope_scaling *sc)
{
    sc->type = PE_ROPE_SCALING_YARN;
    sc->truncate = true;
    sc->beta_fast = 32.0;
    sc->beta_slow = 1.0;
    sc->has_beta_fast = sc->has_beta_slow = true;
}

/* banded (llama3, yarn): the lowest frequency tells the factor */
static size_t push_banded(candidate *out, size_t n, candidate c, const pe_rope_scaling *cs,
                          const double *m, size_t half, size_t rd)
{
    double yo[4];
    double low_w = pe_inv_freq(c.base, half - 1, rd);
    double f_low = fabs(m[half - 1]) > 0 ? low_w / fabs(m[half - 1]) : 0;
    double fb[2];
    size_t nfb = factor_set(f_low, fb);
    size_t nyo = nfb ? yarn_origs(m, half, c.base, rd, fb[0], yo) : 0;
    for (size_t q = 0; q < nfb; q++)
        for (size_t o = 0; o < N_ORIGS; o++) {
            double orig = o == 0 ? cs->original_max_position_embeddings : origs[o];
            if (!(orig > 0))
                continue;
            memset(&c.scaling, 0, sizeof c.scaling);
            c.scaling.type = PE_ROPE_SCALING_LLAMA3;
            c.scaling.factor = fb[q];
            c.scaling.original_max_position_embeddings = orig;
            bool own = cs->type == PE_ROPE_SCALING_LLAMA3;
            c.scaling.low_freq_factor = own ? cs->low_freq_factor : 1.0;
            c.scaling.high_freq_factor = own ? cs->high_freq_factor : 4.0;
            n = push(out, n, c);
            /* the band's factors exchanged in a port: no smoothed band, every
             * wavelength past orig/high divided (low = high, both the high) */
            c.scaling.low_freq_factor = c.scaling.high_freq_factor;
            n = push(out, n, c);
            memset(&c.scaling, 0, sizeof c.scaling);
            if (cs->type == PE_ROPE_SCALING_YARN)
                c.scaling = *cs;
            else
                yarn_defaults(&c.scaling);
            c.scaling.type = PE_ROPE_SCALING_YARN;
            c.scaling.factor = fb[q];
            c.scaling.original_max_position_embeddings = orig;
            n = push(out, n, c);
        }
    for (size_t q = 0; q < nfb; q++) /* yarn at the original context its ramp says */
        for (size_t o = 0; o < nyo; o++) {
            memset(&c.scaling, 0, sizeof c.scaling);
            yarn_defaults(&c.scaling);
            c.scaling.factor = fb[q];
            c.scaling.original_max_position_embeddings = yo[o];
            n = push(out, n, c);
        }
    /* llama3 with the band read off the profile, where the base keeps the
     * highest frequency; after yarn's, whose ramp a band of one or two
     * frequencies could mimic */
    bool kept = fabs(fabs(m[0]) - pe_inv_freq(c.base, 0, rd)) <= 1e-4 * pe_inv_freq(c.base, 0, rd);
    for (size_t q = 0; q < nfb && kept; q++) {
        pe_rope_scaling bands[4];
        size_t nbands = pe_dx_llama3_bands(m, half, c.base, rd, fb[q], cs, bands, 4);
        for (size_t k = 0; k < nbands; k++) {
            c.scaling = bands[k];
            n = push(out, n, c);
        }
    }
    return n;
}

/* dynamic: a base change that depends on the sequence length seq */
static size_t push_dynamic(candidate *out, size_t n, candidate c, const pe_rope_scaling *cs,
                           double seq)
{
    static const double dyn[] = {0, 2, 4, 8, 16};
    for (size_t q = 0; q < sizeof dyn / sizeof dyn[0]; q++) {
        double f = q == 0 ? (cs->type == PE_ROPE_SCALING_DYNAMIC ? cs->factor : 0) : dyn[q];
        if (!(f > 1.0))
            continue;
        for (size_t o = 0; o < N_ORIGS; o++) {
            double orig = o == 0 ? cs->original_max_position_embeddings : origs[o];
            if (!(orig > 0) || !(seq > orig))
                continue;
            memset(&c.scaling, 0, sizeof c.scaling);
            c.scaling.type = PE_ROPE_SCALING_DYNAMIC;
            c.scaling.factor = f;
            c.scaling.original_max_position_embeddings = orig;
            n = push(out, n, c);
        }
    }
    return n;
}

static size_t make_candidates(const pe_dx_subject *s, const pe_dx_variant *claim, const reading *r,
                              const double *m, candidate *out)
{
    size_t n = 0, rd = r->rd, half = rd / 2;
    size_t crd = claim->rope.rotary_dim;
    const pe_rope_scaling *cs = &claim->rope.scaling;
    double fit_scale;
    base_choice bases[13];
    size_t nb = candidate_bases(claim, r, m, bases, &fit_scale);
    double seq = pe_dx_seq_len(s, NULL, 0);

    for (size_t k = 0; k < nb; k++) {
        candidate c = {bases[k].base, bases[k].f, bases[k].fd, *cs};
        /* the claim's scaling keeps its own lists only at the claim's width */
        if (cs->type == PE_ROPE_SCALING_LONGROPE && rd != crd)
            c.scaling.type = PE_ROPE_SCALING_NONE;
        n = push(out, n, c);
        if (c.scaling.type == PE_ROPE_SCALING_YARN) { /* the correction range (un)rounded */
            c.scaling.truncate = !cs->truncate;
            n = push(out, n, c);
        }
        if (c.scaling.type == PE_ROPE_SCALING_LONGROPE) { /* the lists picked the other way */
            c.scaling.short_factor = cs->long_factor;
            c.scaling.long_factor = cs->short_factor;
            n = push(out, n, c);
        }
        memset(&c.scaling, 0, sizeof c.scaling);
        n = push(out, n, c); /* none */

        /* linear: every frequency divided alike (the intercept) */
        double fl[2];
        size_t nfl = factor_set(1.0 / fit_scale, fl);
        for (size_t q = 0; q < nfl; q++) {
            memset(&c.scaling, 0, sizeof c.scaling);
            c.scaling.type = PE_ROPE_SCALING_LINEAR;
            c.scaling.factor = fl[q];
            n = push(out, n, c);
        }
        n = push_banded(out, n, c, cs, m, half, rd);
        if (k == 0) /* dynamic only on the claimed base */
            n = push_dynamic(out, n, c, cs, seq);
    }
    return n;
}

/* The variant one reading leads to, with the coherence of its phases. */
static pe_status finish_variant(const pe_dx_subject *s, const pe_dx_variant *claim,
                                const dx_phasors *ph, double amp, const candidate *cand, double *w,
                                pe_dx_variant *v);

/* The claim read as r: its head and rotary width, layout, sin/cos order,
 * and the direction most of the measured frequencies m share; exact
 * angles, no offset. */
static pe_dx_variant reading_variant(const pe_dx_variant *claim, const reading *r, const double *m)
{
    size_t neg = 0, pos = 0;
    for (size_t i = 0; i < r->rd / 2; i++) {
        neg += m[i] < 0;
        pos += m[i] > 0;
    }
    pe_dx_variant v = *claim;
    v.rope.head_dim = r->hd;
    v.rope.rotary_dim = r->rd;
    v.rope.layout = r->layout;
    v.sin_cos_swapped = r->swapped;
    v.reversed = neg > pos;
    v.offset = 0;
    v.precision = PE_DX_EXACT;
    return v;
}

/* Scores the nc candidates' frequency profiles against m (w: scratch of
 * half). *best: the earliest (claimed, round) candidate as good as the
 * best; *loose: the earliest within a loose margin of it; *best_score
 * stays INFINITY when none scores. */
static pe_status rank_candidates(const pe_dx_subject *s, const pe_dx_variant *v,
                                 const candidate *cands, size_t nc, const double *m, double *w,
                                 size_t *best, size_t *loose, double *best_score)
{
    size_t half = v->rope.rotary_dim / 2;
    double span = pe_dx_seq_len(s, NULL, 0);
    double *scores = malloc((nc ? nc : 1) * sizeof *scores); /* owned */
    if (!scores)
        return PE_ENOMEM;
    *best_score = INFINITY;
    *best = 0;
    for (size_t k = 0; k < nc; k++) {
        pe_dx_variant t = *v;
        double implied;
        t.rope.base = cands[k].base;
        t.rope.scaling = cands[k].scaling;
        scores[k] = INFINITY;
        if (pe_dx_rope_freqs(s, &t, w, &implied) != PE_OK)
            continue;
        scores[k] = pe_dx_profile_score(m, w, half, PE_DX_EXACT, span);
        if (scores[k] < *best_score) {
            *best_score = scores[k];
            *best = k;
        }
    }
    *loose = *best;
    for (size_t k = 0; k < nc; k++)
        if (scores[k] <= *best_score + 2e-6 + 0.05 * *best_score) {
            *best = k;
            break;
        }
    for (size_t k = 0; k < nc; k++)
        if (scores[k] <= 8 * *best_score + 1e-2) {
            *loose = k;
            break;
        }
    free(scores);
    return PE_OK;
}

/* The variants one reading leads to: out[0] from the candidate profile
 * that fits best, out[1] from the earliest (claimed, roundest) one within
 * a loose margin of it - what coarse (bfloat16) angles call for. */
static pe_status follow_reading(const pe_dx_subject *s, const pe_dx_variant *claim,
                                const reading *r, pe_dx_variant *out)
{
    dx_phasors ph = {0};
    size_t half = r->rd / 2;
    double amp, score, best_score;
    size_t best, loose;
    double *m = malloc(half * sizeof *m);                      /* owned */
    double *w = malloc(half * sizeof *w);                      /* owned */
    candidate *cands = malloc(MAX_CANDIDATES * sizeof *cands); /* owned */
    pe_status st = PE_ENOMEM;

    if (!m || !w || !cands)
        goto out;
    st = build_phasors(s, r, &ph, &amp, &score);
    if (st != PE_OK)
        goto out;
    st = pe_dx_measure_freqs(&ph, s->positions, m);
    if (st != PE_OK)
        goto out;

    pe_dx_variant v = reading_variant(claim, r, m);
    size_t nc = make_candidates(s, claim, r, m, cands);
    st = rank_candidates(s, &v, cands, nc, m, w, &best, &loose, &best_score);
    if (st != PE_OK)
        goto out;
    out[0] = out[1] = v;
    if (nc == 0 || !isfinite(best_score))
        goto out;
    st = finish_variant(s, claim, &ph, amp, &cands[best], w, &out[0]);
    if (st == PE_OK)
        st = finish_variant(s, claim, &ph, amp, &cands[loose], w, &out[1]);
out:
    free(ph.z);
    free(m);
    free(w);
    free(cands);
    return st;
}

/* Base, scaling, offset and attention factor of a variant from one
 * candidate profile. w: scratch [rotary_dim/2]. */
static pe_status finish_variant(const pe_dx_subject *s, const pe_dx_variant *claim,
                                const dx_phasors *ph, double amp, const candidate *cand, double *w,
                                pe_dx_variant *v)
{
    double implied, coherence;
    v->rope.base = cand->base;
    v->rope.scaling = cand->scaling;
    v->formula = cand->formula;
    v->frequency_dim = cand->frequency_dim;
    pe_status st = pe_dx_rope_freqs(s, v, w, &implied);
    if (st != PE_OK)
        return st;
    st = pe_dx_fit_offset(ph, s->positions, w, v->reversed ? -1.0 : 1.0, PE_DX_EXACT, &v->offset,
                          &coherence);
    if (st != PE_OK)
        return st;
    if (v->offset != 0) { /* dynamic scaling depends on the shifted length */
        st = pe_dx_rope_freqs(s, v, w, &implied);
        if (st != PE_OK)
            return st;
    }

    /* the attention factor: the one implied, the claim's, 1, or measured;
     * a vanishing one explains nothing (all-zero subjects) */
    double snaps[3] = {implied, claim->attention_factor, 1.0};
    v->attention_factor = amp;
    bool snapped = false;
    for (double rel = 1e-5; rel <= 2e-2 && !snapped; rel *= 2000)
        for (int k = 0; k < 3 && !snapped; k++)
            if (fabs(amp - snaps[k]) <= rel * snaps[k]) {
                v->attention_factor = snaps[k];
                snapped = true;
            }
    if (!snapped && fabs(amp - pe_dx_round_sig(amp, 4)) <= 1e-6 * amp)
        v->attention_factor = pe_dx_round_sig(amp, 4);
    if (!isfinite(v->attention_factor) || !(v->attention_factor > 1e-6))
        v->attention_factor = implied;
    /* yarn's explicit attention_factor keeps /encode able to say it */
    if (v->rope.scaling.type == PE_ROPE_SCALING_YARN && v->attention_factor != implied) {
        v->rope.scaling.has_attention_factor = true;
        v->rope.scaling.attention_factor = v->attention_factor;
    }
    return PE_OK;
}

/* A reading whose rotary width is the count of channels that moved, short
 * of the head and not the claim's. */
static bool moved_only(const reading *r, const pe_dx_variant *claim)
{
    return r->rd < r->hd && r->rd != claim->rope.rotary_dim;
}

static bool better(const pe_dx_errors *a, const pe_dx_errors *b)
{
    if (a->mismatched != b->mismatched)
        return a->mismatched < b->mismatched;
    return a->max_abs < b->max_abs;
}

pe_status pe_dx_search_rope(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_tolerance tol,
                            pe_dx_variant *best, pe_dx_variant *alt)
{
    reading list[MAX_READINGS];
    size_t n = make_readings(s, claim, tol, list);
    pe_status st = PE_OK;

    if (claim->head_dim_free && s->kind == PE_DX_SUBJ_ROPE_ENCODED) {
        st = free_head_readings(s, claim, list, &n);
        if (st != PE_OK)
            return st;
    }

    *best = *alt = *claim;
    for (size_t k = 0; k < n; k++) {
        if (pe_dx_out_of_time(s)) { /* the readings not scored are not followed */
            n = k;
            break;
        }
        dx_phasors ph = {0};
        double amp;
        st = build_phasors(s, &list[k], &ph, &amp, &list[k].norm_score);
        free(ph.z);
        if (st != PE_OK)
            return st;
    }
    /* the finalists by norm score, in the readings' order (the claim's
     * first) among equals */
    double min_score = INFINITY;
    for (size_t k = 0; k < n; k++)
        if (list[k].norm_score < min_score)
            min_score = list[k].norm_score;
    pe_dx_errors best_err = {.mismatched = 2.0, .max_abs = INFINITY};
    size_t taken = 0;
    for (size_t k = 0; k < n && taken < MAX_FINALISTS && !pe_dx_out_of_time(s); k++) {
        if (!(list[k].norm_score <= 4 * min_score + 1e-6))
            continue;
        taken++;
        pe_dx_variant v[2];
        st = follow_reading(s, claim, &list[k], v);
        if (st != PE_OK)
            return st;
        for (int q = 0; q < 2; q++) {
            pe_dx_errors e;
            bool full;
            st = pe_dx_evaluate_fast(s, &v[q], tol, &e, &full);
            if (st == PE_EINVAL)
                continue; /* frequencies that cannot be computed */
            if (st != PE_OK)
                return st;
            if (better(&e, &best_err)) {
                best_err = e;
                *best = v[q];
                *alt = v[1];
            }
            /* reproduces: no finalist can do better; but channels read as
             * passing through may turn too slowly for the tolerance to see
             * (a large base): the whole head's reading goes on */
            if (full && dx_within(&e) && !moved_only(&list[k], claim))
                return PE_OK;
        }
    }
    return PE_OK;
}

pe_status pe_dx_rope_phasors(const pe_dx_subject *s, const pe_dx_variant *v, dx_phasors *ph,
                             double *w)
{
    reading r = {v->rope.head_dim, v->rope.rotary_dim, v->rope.layout, v->sin_cos_swapped, 0};
    double amp, score, implied;

    ph->z = NULL;
    pe_status st = build_phasors(s, &r, ph, &amp, &score);
    if (st == PE_OK)
        st = pe_dx_rope_freqs(s, v, w, &implied);
    for (size_t i = 0; st == PE_OK && v->reversed && i < v->rope.rotary_dim / 2; i++)
        w[i] = -w[i];
    return st;
}

/*
 * diagnose_angles.c - the angle core shared by the sinusoidal and RoPE
 * searches: frequencies from the phase progression of each pair, the
 * position offset from the phase that remains, a base from the slope of
 * log-frequency, and the score of a candidate frequency profile.
 *
 * Phase progression: for a pure rotation z(t) = A e^{i w p_t}, the product
 * z(t+L) conj(z(t)) has angle w*L whatever A is. Lag 1 gives w within
 * (-pi, pi]; each longer lag (2, 4, ...) refines it by unwrapping against
 * the previous estimate, so the error shrinks like 1/L. Summing the
 * products over rows and heads weights every row by its own amplitude:
 * rows with a tiny pair (near-zero input) count little.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "diagnose_common.h"

pe_status pe_dx_measure_freqs(const dx_phasors *ph, const int64_t *positions, double *m)
{
    size_t half = ph->half;

    for (size_t i = 0; i < half; i++)
        m[i] = 0.0;
    if (ph->rows < 2 || half == 0)
        return PE_OK;
    bool *have = calloc(half, sizeof *have);      /* owned */
    double *acc = malloc(2 * half * sizeof *acc); /* owned: re, im */
    if (!have || !acc) {
        free(have);
        free(acc);
        return PE_ENOMEM;
    }
    /* lags 1, 2, 4, ... below rows: at most 63 of them. Real arithmetic:
     * C's complex product checks for NaN/inf at every step. */
    for (size_t lag = 1; lag < ph->rows; lag *= 2) {
        for (size_t i = 0; i < 2 * half; i++)
            acc[i] = 0;
        for (size_t t = 0; t + lag < ph->rows; t++) {
            if (positions[t + lag] - positions[t] != (int64_t)lag)
                continue;
            const double *za = ph->z + 2 * (t + lag) * ph->pairs;
            const double *zb = ph->z + 2 * t * ph->pairs;
            for (size_t k = 0, i = 0; k < ph->pairs; k++, i = i + 1 == half ? 0 : i + 1) {
                double ar = za[2 * k], ai = za[2 * k + 1];
                double br = zb[2 * k], bi = zb[2 * k + 1];
                acc[2 * i] += ar * br + ai * bi; /* a * conj(b) */
                acc[2 * i + 1] += ai * br - ar * bi;
            }
        }
        for (size_t i = 0; i < half; i++) {
            double mag = sqrt(acc[2 * i] * acc[2 * i] + acc[2 * i + 1] * acc[2 * i + 1]);
            if (!(mag > 0.0) || !isfinite(mag))
                continue;
            double a = atan2(acc[2 * i + 1], acc[2 * i]);
            if (!have[i]) {
                if (lag != 1)
                    continue; /* no coarse estimate to unwrap against */
                m[i] = a;
                have[i] = true;
                continue;
            }
            double predicted = m[i] * (double)lag;
            m[i] = (predicted + pe_dx_wrap(a - predicted)) / (double)lag;
        }
        if (lag > SIZE_MAX / 2)
            break;
    }
    free(have);
    free(acc);
    return PE_OK;
}

/* S_i = sum z * e^{-i angle(p)} over the rows, per frequency of wr (what
 * is left is e^{i sign w o}); *total: the sum of |z| over finite pairs. */
static pe_status derotate(const dx_phasors *ph, const int64_t *positions, const double *wr,
                          double complex *S, double *total)
{
    size_t half = ph->half;
    /* e^{-i angle(p)} per frequency: exact every 32 rows or after a jump,
     * else advanced by one step's rotation (drift ~1e-15 per step) */
    double *ph_re = malloc(4 * half * sizeof *ph_re); /* owned: cur, step */
    if (!ph_re)
        return PE_ENOMEM;
    double *ph_im = ph_re + half, *st_re = ph_re + 2 * half, *st_im = ph_re + 3 * half;
    for (size_t i = 0; i < half; i++) {
        st_re[i] = cos(wr[i]);
        st_im[i] = -sin(wr[i]);
    }
    for (size_t t = 0; t < ph->rows; t++) {
        double p = (double)positions[t];
        bool step = t % 32 != 0 && positions[t] - positions[t - 1] == 1;
        for (size_t i = 0; i < half; i++) {
            if (step) {
                double r = ph_re[i] * st_re[i] - ph_im[i] * st_im[i];
                ph_im[i] = ph_re[i] * st_im[i] + ph_im[i] * st_re[i];
                ph_re[i] = r;
            } else {
                ph_re[i] = cos(wr[i] * p);
                ph_im[i] = -sin(wr[i] * p);
            }
        }
        for (size_t k = 0, i = 0; k < ph->pairs; k++, i = i + 1 == half ? 0 : i + 1) {
            double zr = ph->z[2 * (t * ph->pairs + k)];
            double zi = ph->z[2 * (t * ph->pairs + k) + 1];
            if (!isfinite(zr) || !isfinite(zi))
                continue;
            *total += sqrt(zr * zr + zi * zi);
            S[i] += (zr * ph_re[i] - zi * ph_im[i]) + I * (zi * ph_re[i] + zr * ph_im[i]);
        }
    }
    free(ph_re);
    return PE_OK;
}

/* The offset whose rotation best aligns the derotated sums S: estimated
 * from the lowest frequency with a signal (|o| < pi/w there), then the
 * most coherent of a fixed handful around the estimate, and 0. */
static void pick_offset(const double complex *S, const double *wr, size_t half, double total,
                        int64_t *offset, double *coherence)
{
    double est = 0.0;
    for (size_t i = half; i-- > 0;) {
        if (cabs(S[i]) > 1e-9 * total && wr[i] != 0.0) {
            est = carg(S[i]) / wr[i];
            break;
        }
    }
    if (!isfinite(est) || fabs(est) > 1e15)
        est = 0.0;
    int64_t centre = (int64_t)llround(est);
    int64_t best = 0;
    double best_c = -INFINITY;
    int64_t cands[6] = {0, centre - 2, centre - 1, centre, centre + 1, centre + 2};
    for (int c = 0; c < 6; c++) {
        double sum = 0.0;
        for (size_t i = 0; i < half; i++)
            sum += creal(S[i] * cexp(-I * wr[i] * (double)cands[c]));
        if (sum > best_c + 1e-12 * total) {
            best_c = sum;
            best = cands[c];
        }
    }
    *coherence = best_c / total;
    *offset = best;
}

pe_status pe_dx_fit_offset(const dx_phasors *ph, const int64_t *positions, const double *w,
                           double sign, pe_dx_precision precision, int64_t *offset,
                           double *coherence)
{
    size_t half = ph->half;
    double total = 0.0;
    pe_status st = PE_ENOMEM;

    *offset = 0;
    *coherence = 0.0;
    if (half == 0)
        return PE_OK;
    double complex *S = calloc(half, sizeof *S); /* owned */
    double *wr = malloc(half * sizeof *wr);      /* owned: w as the client had it */
    if (!S || !wr)
        goto out;
    for (size_t i = 0; i < half; i++)
        wr[i] = sign * pe_dx_round(precision, w[i]);
    st = derotate(ph, positions, wr, S, &total);
    if (st != PE_OK)
        goto out;
    if (total > 0.0 && isfinite(total))
        pick_offset(S, wr, half, total, offset, coherence);
out:
    free(S);
    free(wr);
    return st;
}

double pe_dx_fit_base(const double *m, size_t half, size_t dim, double *scale_out)
{
    size_t top = half / 4 > 2 ? half / 4 : 2;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    size_t n = 0;

    *scale_out = 1.0;
    if (top > half)
        top = half;
    for (size_t i = 0; i < top; i++) {
        double a = fabs(m[i]);
        if (!(a > 0.0) || !isfinite(a))
            continue;
        double x = (double)i, y = log(a);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        n++;
    }
    double den = (double)n * sxx - sx * sx;
    if (n < 2 || !(den > 0.0))
        return 0.0;
    double slope = ((double)n * sxy - sx * sy) / den; /* -2 ln(base)/dim */
    double icpt = (sy - slope * sx) / (double)n;
    double base = exp(-slope * (double)dim / 2.0);
    *scale_out = exp(icpt);
    return isfinite(base) && base > 1.0 ? base : 0.0;
}

double pe_dx_round_sig(double v, int digits)
{
    if (v == 0.0 || !isfinite(v))
        return v;
    double mag = pow(10.0, floor(log10(fabs(v))) - (digits - 1));
    return round(v / mag) * mag;
}

double pe_dx_profile_score(const double *m, const double *w, size_t half, pe_dx_precision precision,
                           double span)
{
    double worst = 0.0;
    for (size_t i = 0; i < half; i++) {
        double e = fabs(fabs(m[i]) - pe_dx_round(precision, w[i])) * span;
        if (!(e <= worst))
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

/* Frequency indices by |w| ascending (qsort's comparator reads pairs). */
typedef struct freq_rank {
    double aw;
    size_t i;
} freq_rank;

static int by_frequency(const void *a, const void *b)
{
    double x = ((const freq_rank *)a)->aw, y = ((const freq_rank *)b)->aw;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Row coherence at integer position p. */
static double row_coherence(const double complex *S, const double *w, size_t half, double total,
                            int64_t p)
{
    double sum = 0.0;
    for (size_t i = 0; i < half; i++)
        sum += creal(S[i] * cexp(-I * w[i] * (double)p));
    return sum / total;
}

/* One row's position from its sums S (see pe_dx_phase_positions). */
static int64_t row_position(const double complex *S, const double *w, const freq_rank *order,
                            size_t half, double *coherence)
{
    double total = 0.0, p = 0.0;
    bool started = false;
    for (size_t i = 0; i < half; i++)
        total += cabs(S[i]);
    *coherence = 0.0;
    if (!(total > 0.0) || !isfinite(total))
        return 0;
    for (size_t k = 0; k < half; k++) {
        size_t i = order[k].i;
        if (!(cabs(S[i]) > 1e-6 * total) || !(order[k].aw > 1e-300))
            continue;
        double a = carg(S[i]);
        if (!started) { /* the lowest frequency: within one period */
            double period = 2 * DX_PI / order[k].aw;
            p = a / w[i];
            p -= period * floor((p + 0.05 * period) / period);
            started = true;
            continue;
        }
        p += pe_dx_wrap(a - w[i] * p) / w[i];
    }
    if (!started || !isfinite(p) || fabs(p) > 1e15)
        return 0;
    int64_t r = llround(p), best = r;
    double best_c = -INFINITY;
    for (int64_t d = -1; d <= 1; d++) {
        double c = row_coherence(S, w, half, total, r + d);
        if (c > best_c) {
            best_c = c;
            best = r + d;
        }
    }
    *coherence = best_c;
    return best;
}

pe_status pe_dx_phase_positions(const dx_phasors *ph, const double *w, int64_t *out, bool *coherent)
{
    size_t half = ph->half;
    *coherent = false;
    if (half == 0)
        return PE_OK;
    double complex *S = malloc(half * sizeof *S);    /* owned: one row's sums */
    freq_rank *order = malloc(half * sizeof *order); /* owned */
    if (!S || !order) {
        free(S);
        free(order);
        return PE_ENOMEM;
    }
    for (size_t i = 0; i < half; i++)
        order[i] = (freq_rank){fabs(w[i]), i};
    qsort(order, half, sizeof *order, by_frequency);
    bool all = true;
    for (size_t t = 0; t < ph->rows && all; t++) { /* one incoherent row decides */
        for (size_t i = 0; i < half; i++)
            S[i] = 0;
        for (size_t k = 0, i = 0; k < ph->pairs; k++, i = i + 1 == half ? 0 : i + 1) {
            const double *z = ph->z + 2 * (t * ph->pairs + k);
            if (isfinite(z[0]) && isfinite(z[1]))
                S[i] += z[0] + I * z[1];
        }
        double signal = 0, c;
        for (size_t i = 0; i < half; i++)
            signal += cabs(S[i]);
        if (signal == 0) { /* any position fits it */
            out[t] = DX_NO_POSITION;
            continue;
        }
        out[t] = row_position(S, w, order, half, &c);
        all = all && c >= 0.8;
    }
    *coherent = all;
    free(S);
    free(order);
    return PE_OK;
}

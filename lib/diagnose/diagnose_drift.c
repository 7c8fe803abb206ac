/*
 * diagnose_drift.c - whether the frequencies of a RoPE subject may have
 * been computed at a coarse precision.
 *
 * Angles of bfloat16/float16 frequencies drift from the exact ones, each
 * pair's phase error a line in the position; a product or values rounded
 * to that precision scatter about the line (by some u |w p|, u the unit
 * roundoff). Where the phases keep to their lines (the angles computed in
 * float32 or better), each pair's
 * frequency, the variant's plus the drift, must be a number of that
 * precision: a frequency between two of them is another profile
 * (LongRoPE's factors read as a base), which no precision explains.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "diagnose_common.h"

/* One pair's phase errors against the position (weights |z|): their
 * least-squares line through 0, four standard errors of its slope, and
 * the scatter about it against the rms angle |w p|. */
typedef struct drift {
    double slope, allow, scatter, angle;
} drift;

static drift pair_drift(const pe_dx_subject *s, const pe_dx_variant *v, const dx_phasors *ph,
                        const double *w, size_t i)
{
    double sa = 0, spp = 0, spf = 0, sff = 0, s2 = 0;
    for (size_t t = 0; t < ph->rows; t++) {
        double p = (double)pe_dx_position(s, v, t);
        for (size_t k = i; k < ph->pairs; k += ph->half) {
            const double *z = ph->z + 2 * (t * ph->pairs + k);
            double complex r = (z[0] + I * z[1]) * cexp(-I * w[i] * p);
            double a = cabs(r), f = carg(r);
            if (!(a > 0))
                continue;
            sa += a;
            spp += a * p * p;
            spf += a * p * f;
            sff += a * f * f;
            s2 += a * a * p * p;
        }
    }
    drift d = {0, INFINITY, 0, 0};
    if (!(spp > 0))
        return d;
    d.slope = spf / spp;
    double var = fmax(sff - d.slope * spf, 0) / sa; /* about the line */
    d.allow = 4 * sqrt(var * s2) / spp;
    d.scatter = sqrt(var);
    d.angle = fabs(w[i]) * sqrt(spp / sa);
    return d;
}

pe_status pe_dx_drift_within(const pe_dx_subject *s, const pe_dx_variant *v, bool *ok)
{
    size_t half = v->rope.rotary_dim / 2;
    double *w = malloc((half ? half : 1) * sizeof *w); /* owned */
    double u = v->precision == PE_DX_BFLOAT16 ? 0x1p-8 : 0x1p-11;
    dx_phasors ph = {0};

    *ok = true;
    if (!w)
        return PE_ENOMEM;
    /* a scaled frequency is the coarse one divided after: not checked */
    pe_status st = v->rope.scaling.type == PE_ROPE_SCALING_NONE ? pe_dx_rope_phasors(s, v, &ph, w)
                                                                : PE_OK;
    for (size_t i = 0; st == PE_OK && ph.z && i < half && *ok; i++) {
        drift d = pair_drift(s, v, &ph, w, i);
        if (d.scatter > 0.05 * u * d.angle)
            continue; /* angles or values rounded too: the line is blurred */
        double m = w[i] + d.slope;
        *ok = fabs(m - pe_dx_round(v->precision, m)) <= d.allow + 1e-9 * fabs(m);
    }
    free(ph.z);
    free(w);
    return st;
}

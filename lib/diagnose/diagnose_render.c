/*
 * diagnose_render.c - the subject a variant predicts, for every subject
 * kind, with the client's angle precision emulated (bfloat16, float16) and
 * the per-element slack that precision explains.
 *
 * The emulation rounds what a low-precision implementation rounds: the
 * inverse frequency, the position, their product, then cos and sin (and the
 * attention factor's product). float32 is not emulated but bounded: its
 * angle error is at most ~|p|*2^-22 (one rounding of p*inv_freq), so the
 * exact prediction gets that slack, whatever order the client's float32
 * arithmetic took.
 */
#include <math.h>
#include <stdlib.h>

#include "diagnose_common.h"

/* The slack a precision explains on a value of amplitude amp at p, for
 * frequency w of index i. float32: the angle's own roundings (~|p|*2^-22),
 * and what a frequency built by repeated float32 multiplication (llama.cpp's
 * theta *= theta_scale, or powf per index) accumulates: ~(i+1) ulps of w*p. */
static float precision_slack(pe_dx_precision prec, double amp, double p, double w, size_t i)
{
    switch (prec) {
    case PE_DX_EXACT:
        return 0.0f;
    case PE_DX_FLOAT32:
        return (float)(amp * (4e-7 + 2.4e-7 * fabs(p) + 1.2e-7 * (double)(i + 1) * fabs(w * p)));
    case PE_DX_BFLOAT16:
        return (float)(amp * 0.0078125 + 1e-6);
    case PE_DX_FLOAT16:
        return (float)(amp * 0.0009765625 + 1e-6);
    }
    return 0.0f;
}

/* The envelope of coarse angles computed in any order: the frequency (and
 * position, and their product) each carry a relative error of at most a
 * few units of the precision's rounding u, so the angle's error grows as
 * ~3u|w p|, and the values carry u of their own. */
static float any_order_slack(pe_dx_precision prec, double amp, double w, double p)
{
    double u = prec == PE_DX_BFLOAT16 ? 0x1p-8 : 0x1p-11;
    return (float)(amp * (2 * u + 3 * u * fabs(w * p)) + 1e-6);
}

/* The angle the client computes for frequency w at position p. */
static double client_angle(pe_dx_precision prec, double w, double p)
{
    if (prec != PE_DX_BFLOAT16 && prec != PE_DX_FLOAT16)
        return w * p;
    return pe_dx_round(prec, pe_dx_round(prec, w) * pe_dx_round(prec, p));
}

/* cos and sin as the client holds them, and the slack each carries. */
typedef struct client_cs {
    double c, s;
    float c_slack, s_slack;
} client_cs;

/* x rounded to a value-stage precision, and how far the roundings of the
 * interval x +- sl (the float32 angle's reach) lie from it: a value near a
 * rounding boundary may have been rounded to either side. */
static double round_value(pe_dx_precision prec, double x, double sl, float *slack)
{
    double r = pe_dx_round(prec, x);
    double lo = pe_dx_round(prec, x - sl), hi = pe_dx_round(prec, x + sl);
    *slack = (float)(fmax(fabs(lo - r), fabs(hi - r)) + 1e-7);
    return r;
}

/* Frequency w (index i) at position p, times factor. Angles stage: angle
 * and values in the precision, with its slack. Values stage: the angle as
 * float32 or better, the values (times factor) rounded once to the
 * precision - a half-precision cos/sin cache. */
static client_cs client_cos_sin(const pe_dx_variant *v, double w, size_t i, double p, double factor)
{
    pe_dx_precision prec = v->precision;
    client_cs o;
    bool coarse = prec == PE_DX_BFLOAT16 || prec == PE_DX_FLOAT16;
    if (coarse && v->stage == PE_DX_STAGE_VALUES) {
        double sl = precision_slack(PE_DX_FLOAT32, factor, p, w, i);
        o.c = round_value(prec, cos(w * p) * factor, sl, &o.c_slack);
        o.s = round_value(prec, sin(w * p) * factor, sl, &o.s_slack);
        return o;
    }
    if (coarse && v->any_order) { /* exact values, the envelope as slack */
        o.c = cos(w * p) * factor;
        o.s = sin(w * p) * factor;
        o.c_slack = o.s_slack = any_order_slack(prec, factor, w, p);
        return o;
    }
    double a = client_angle(prec, w, p);
    o.c = cos(a);
    o.s = sin(a);
    if (coarse) {
        o.c = pe_dx_round(prec, pe_dx_round(prec, o.c) * factor);
        o.s = pe_dx_round(prec, pe_dx_round(prec, o.s) * factor);
    } else {
        o.c *= factor;
        o.s *= factor;
    }
    o.c_slack = o.s_slack = precision_slack(prec, factor, p, w, i);
    return o;
}

/* TABLE (either orientation) and ABS_ENCODED. */
static pe_status render_absolute(const pe_dx_subject *s, const pe_dx_variant *v, float *out,
                                 float *slack)
{
    bool tr = s->kind == PE_DX_SUBJ_TABLE && v->transposed;
    size_t tokens = tr ? s->cols : s->rows, d = tr ? s->rows : s->cols;
    size_t nf = (d + 1) / 2;
    double *w = malloc((nf ? nf : 1) * sizeof *w); /* owned */

    if (!w)
        return PE_ENOMEM;
    for (size_t i = 0; i < nf; i++)
        w[i] = pe_inv_freq(v->base, i, d);
    for (size_t t = 0; t < tokens; t++) {
        /* a transposed table's tokens run on from the first position */
        double p = tr ? (double)(pe_dx_position(s, v, 0)) + (double)t
                      : (double)pe_dx_position(s, v, t);
        for (size_t i = 0; i < nf; i++) {
            client_cs cs = client_cos_sin(v, w[i], i, p, 1.0);
            size_t sin_col = v->sin_layout == PE_SIN_SPLIT ? i : 2 * i;
            size_t cos_col = v->sin_layout == PE_SIN_SPLIT ? nf + i : 2 * i + 1;
            bool sw = v->sin_cos_swapped;
            size_t cols[2] = {sin_col, cos_col};
            double vals[2] = {sw ? cs.c : cs.s, sw ? cs.s : cs.c};
            float slacks[2] = {sw ? cs.c_slack : cs.s_slack, sw ? cs.s_slack : cs.c_slack};
            for (int k = 0; k < 2; k++) {
                if (cols[k] >= d)
                    continue;
                size_t e = tr ? cols[k] * tokens + t : t * d + cols[k];
                double val = vals[k];
                if (s->kind == PE_DX_SUBJ_ABS_ENCODED && s->x)
                    val += v->embed_scale * (double)s->x[e];
                out[e] = (float)val;
                if (slack)
                    slack[e] = slacks[k];
            }
        }
    }
    free(w);
    return PE_OK;
}

/* Column of the cos/sin cache that frequency i fills (and its duplicate). */
static void cache_columns(const pe_dx_variant *v, size_t cols, size_t i, size_t *c0, size_t *c1)
{
    size_t half = v->rope.rotary_dim / 2;
    if (cols == half) {
        *c0 = *c1 = i;
    } else if (v->rope.layout == PE_ROPE_HALF) {
        *c0 = i;
        *c1 = i + half;
    } else {
        *c0 = 2 * i;
        *c1 = 2 * i + 1;
    }
}

/* Row t of a rope cache at positions p[i] per frequency (frequencies w,
 * the rotation's sign): cos into out, sin into out + n, each in its
 * column(s). */
static void render_cache_row(const pe_dx_subject *s, const pe_dx_variant *v, const double *w,
                             size_t t, const double *p, double sign, float *out, float *slack)
{
    size_t half = v->rope.rotary_dim / 2, n = s->rows * s->cols;
    double f = v->attention_factor;
    for (size_t i = 0; i < half; i++) {
        client_cs cs = client_cos_sin(v, w[i], i, p[i], f);
        cs.s *= sign;
        bool sw = v->sin_cos_swapped;
        size_t c0, c1;
        cache_columns(v, s->cols, i, &c0, &c1);
        size_t cols[2] = {c0, c1};
        for (int k = 0; k < 2; k++) {
            size_t e = t * s->cols + cols[k];
            out[e] = (float)(sw ? cs.s : cs.c);
            out[n + e] = (float)(sw ? cs.c : cs.s);
            if (slack) {
                slack[e] = sw ? cs.s_slack : cs.c_slack;
                slack[n + e] = sw ? cs.c_slack : cs.s_slack;
            }
        }
    }
}

/* Half a unit in the last place of x in a half precision (float16:
 * 10 fraction bits, bfloat16: 7; float16's subnormal step below 2^-14). */
static double half_ulp(pe_dx_precision prec, double x)
{
    int e;
    frexp(fabs(x), &e);
    double h = ldexp(1.0, e - (prec == PE_DX_FLOAT16 ? 12 : 9));
    return prec == PE_DX_FLOAT16 ? fmax(h, ldexp(1.0, -25)) : h;
}

bool pe_dx_output_in_precision(const pe_dx_subject *s, const pe_dx_variant *v)
{
    bool coarse = v->precision == PE_DX_BFLOAT16 || v->precision == PE_DX_FLOAT16;
    if (!coarse || v->stage != PE_DX_STAGE_VALUES || s->kind != PE_DX_SUBJ_ROPE_ENCODED)
        return false;
    for (size_t e = 0; e < s->rows * s->cols; e++)
        if (pe_dx_round(v->precision, s->a[e]) != (double)s->a[e])
            return false;
    return true;
}

/* The rotation of (xa, xb) by exact (c, sn) rounded to a half precision
 * pr into *ya, *yb, and (sa, sb not NULL) the slack of the other orders
 * of rounding: cos/sin rounded first, each product rounded (float16
 * arithmetic), the sum rounded. */
static void rounded_rotation(pe_dx_precision pr, double xa, double xb, double c, double sn,
                             float *ya, float *yb, float *sa, float *sb)
{
    double ra = xa * c - xb * sn, rb = xb * c + xa * sn;
    *ya = (float)pe_dx_round(pr, ra);
    *yb = (float)pe_dx_round(pr, rb);
    if (!sa)
        return;
    double hc = half_ulp(pr, c), hs = half_ulp(pr, sn);
    *sa = (float)(fabs(xa) * hc + fabs(xb) * hs + half_ulp(pr, xa * c) + half_ulp(pr, xb * sn) +
                  half_ulp(pr, ra));
    *sb = (float)(fabs(xb) * hc + fabs(xa) * hs + half_ulp(pr, xb * c) + half_ulp(pr, xa * sn) +
                  half_ulp(pr, rb));
}

/* Row t of x rotated at positions p[i] per frequency, head by head
 * (pass-through channels copied). rounded: the rotation may have been rounded to v's precision
 * with or without its cos/sin (pe_dx_output_in_precision): the slack covers
 * both roundings. */
static void render_encoded_row(const pe_dx_subject *s, const pe_dx_variant *v, const double *w,
                               size_t t, const double *p, double sign, bool rounded, float *out,
                               float *slack)
{
    size_t rd = v->rope.rotary_dim, hd = v->rope.head_dim, half = rd / 2;
    double f = v->attention_factor;
    const float *x = s->x + t * s->cols;
    float *y = out + t * s->cols;
    for (size_t h0 = 0; h0 + hd <= s->cols; h0 += hd) {
        for (size_t c = rd; c < hd; c++) {
            y[h0 + c] = x[h0 + c];
            if (slack)
                slack[t * s->cols + h0 + c] = 0.0f;
        }
        for (size_t i = 0; i < half; i++) {
            size_t a = v->rope.layout == PE_ROPE_HALF ? i : 2 * i;
            size_t b = v->rope.layout == PE_ROPE_HALF ? i + half : 2 * i + 1;
            double xa = x[h0 + a], xb = x[h0 + b];
            size_t ea = t * s->cols + h0 + a, eb = t * s->cols + h0 + b;
            if (rounded) {
                rounded_rotation(v->precision, xa, xb, cos(w[i] * p[i]) * f,
                                 sign * sin(w[i] * p[i]) * f, y + h0 + a, y + h0 + b,
                                 slack ? slack + ea : NULL, slack ? slack + eb : NULL);
                continue;
            }
            client_cs cs = client_cos_sin(v, w[i], i, p[i], f);
            double c = cs.c, sn = sign * cs.s;
            y[h0 + a] = (float)(xa * c - xb * sn);
            y[h0 + b] = (float)(xb * c + xa * sn);
            if (slack) {
                /* angles: the rotation's error bound; values: each factor's */
                bool values = v->stage == PE_DX_STAGE_VALUES;
                double na = fabs(xa) * cs.c_slack + fabs(xb) * cs.s_slack;
                double nb = fabs(xb) * cs.c_slack + fabs(xa) * cs.s_slack;
                double amp = f * sqrt(xa * xa + xb * xb);
                double sl = v->any_order ? any_order_slack(v->precision, amp, w[i], p[i])
                                         : precision_slack(v->precision, amp, p[i], w[i], i);
                slack[ea] = (float)(values ? na : sl);
                slack[eb] = (float)(values ? nb : sl);
            }
        }
    }
}

/* The position each frequency of row t turns by: the row's position, or
 * with a multimodal rope the component its slot is assigned. */
static void slot_positions(const pe_dx_subject *s, const pe_dx_variant *v, size_t t, size_t half,
                           double *p)
{
    bool nd = v->mrope.style != PE_MROPE_NONE && v->positions3;
    double p1 = nd ? 0.0 : (double)pe_dx_position(s, v, t);

    for (size_t i = 0; i < half; i++)
        p[i] = nd ? (double)(v->positions3[3 * t + pe_mrope_axis(&v->mrope, i)] + v->offset) : p1;
}

static pe_status render_rope(const pe_dx_subject *s, const pe_dx_variant *v, float *out,
                             float *slack)
{
    size_t half = v->rope.rotary_dim / 2;
    double implied;
    double *w = malloc((half ? 2 * half : 1) * sizeof *w); /* owned: w, then p */

    if (!w)
        return PE_ENOMEM;
    double *p = w + half;
    pe_status st = pe_dx_rope_freqs(s, v, w, &implied);
    if (st != PE_OK)
        goto out;
    double sign = v->reversed ? -1.0 : 1.0;
    bool rounded = pe_dx_output_in_precision(s, v);
    for (size_t t = 0; t < s->rows; t++) {
        slot_positions(s, v, t, half, p);
        if (s->kind == PE_DX_SUBJ_ROPE_CACHE)
            render_cache_row(s, v, w, t, p, sign, out, slack);
        else
            render_encoded_row(s, v, w, t, p, sign, rounded, out, slack);
    }
out:
    free(w);
    return st;
}

/* A vision 2-D rope of x (exact angles, no slack). */
static pe_status render_rope2d(const pe_dx_subject *s, const pe_dx_variant *v, float *out,
                               float *slack)
{
    if (s->kind != PE_DX_SUBJ_ROPE_ENCODED || !s->x || !v->coords)
        return PE_EINVAL;
    for (size_t e = 0, n = s->rows * s->cols; slack && e < n; e++)
        slack[e] = 0.0f;
    return pe_rope2d_apply(&v->rope2d, v->coords, s->rows, s->cols, s->x, out);
}

static pe_status render_alibi(const pe_dx_subject *s, const pe_dx_variant *v, float *out)
{
    double *paper = malloc(s->heads * sizeof *paper); /* owned */
    if (!paper)
        return PE_ENOMEM;
    pe_alibi_slopes(s->heads, paper);
    const double *sl = v->slopes ? v->slopes : paper;
    if (s->kind == PE_DX_SUBJ_ALIBI_SLOPES) {
        for (size_t h = 0; h < s->heads; h++)
            out[h] = (float)sl[h];
        free(paper);
        return PE_OK;
    }
    size_t t = s->rows;
    for (size_t h = 0; h < s->heads; h++)
        for (size_t i = 0; i < t; i++)
            for (size_t j = 0; j < t; j++) {
                double pi = (double)pe_dx_position(s, v, i);
                double pj = (double)pe_dx_position(s, v, j);
                double plast = (double)pe_dx_position(s, v, t - 1);
                double b = v->alibi_form == PE_ALIBI_BLOOM ? sl[h] * pj
                           : v->alibi_form == PE_ALIBI_MPT ? sl[h] * (pj - plast)
                                                           : 0.0 - sl[h] * fabs(pi - pj);
                out[(h * t + i) * t + j] = (float)(v->alibi_sign * b);
            }
    free(paper);
    return PE_OK;
}

static pe_status render_t5(const pe_dx_subject *s, const pe_dx_variant *v, float *out)
{
    const pe_t5 *t5 = &v->t5;
    size_t t = s->rows;
    if (!t5->table || t5->heads != s->heads)
        return PE_EINVAL;
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < t; j++) {
            int64_t rel = pe_dx_position(s, v, j) - pe_dx_position(s, v, i);
            if (v->t5_reversed)
                rel = -rel;
            size_t bucket = pe_t5_bucket(rel, t5->bidirectional, t5->num_buckets, t5->max_distance);
            for (size_t h = 0; h < s->heads; h++)
                out[(h * t + i) * t + j] = t5->table[bucket * t5->heads + h];
        }
    return PE_OK;
}

/* pe_dx_render with the slack of the variant's precision (may be NULL). */
pe_status pe_dx_render_slack(const pe_dx_subject *s, const pe_dx_variant *v, float *out,
                             float *slack)
{
    switch (s->kind) {
    case PE_DX_SUBJ_TABLE:
    case PE_DX_SUBJ_ABS_ENCODED:
        return render_absolute(s, v, out, slack);
    case PE_DX_SUBJ_ROPE_CACHE:
    case PE_DX_SUBJ_ROPE_ENCODED:
        return v->rope2d.head_dim ? render_rope2d(s, v, out, slack) : render_rope(s, v, out, slack);
    case PE_DX_SUBJ_ALIBI_BIAS:
    case PE_DX_SUBJ_ALIBI_SLOPES:
        if (slack)
            for (size_t e = 0, n = pe_dx_subject_size(s); e < n; e++)
                slack[e] = 0.0f;
        return render_alibi(s, v, out);
    case PE_DX_SUBJ_T5_BIAS:
        if (slack)
            for (size_t e = 0, n = pe_dx_subject_size(s); e < n; e++)
                slack[e] = 0.0f;
        return render_t5(s, v, out);
    }
    return PE_EINVAL;
}

pe_status pe_dx_render(const pe_dx_subject *s, const pe_dx_variant *v, float *out)
{
    pe_status st = pe_dx_validate(s, v); /* a shape it cannot read: nothing written */
    return st == PE_OK ? pe_dx_render_slack(s, v, out, NULL) : st;
}

pe_status pe_dx_evaluate(const pe_dx_subject *s, const pe_dx_variant *v, pe_dx_tolerance tol,
                         pe_dx_errors *out)
{
    size_t n = pe_dx_subject_size(s);
    float *pred = malloc((n ? n : 1) * sizeof *pred);   /* owned */
    float *slack = malloc((n ? n : 1) * sizeof *slack); /* owned */
    pe_status st = PE_ENOMEM;

    if (!pred || !slack)
        goto out;
    st = pe_dx_render_slack(s, v, pred, slack);
    if (st != PE_OK)
        goto out;
    /* the subject: a (then b for a cache), as one flat sequence */
    if (s->kind == PE_DX_SUBJ_ROPE_CACHE) {
        size_t half_n = n / 2;
        pe_dx_errors ea, eb;
        pe_dx_compare(s->a, pred, half_n, tol, slack, &ea);
        pe_dx_compare(s->b, pred + half_n, half_n, tol, slack + half_n, &eb);
        *out = ea;
        if (eb.max_abs > ea.max_abs) {
            out->max_abs = eb.max_abs;
            out->worst = half_n + eb.worst;
            out->got = eb.got;
            out->want = eb.want;
        }
        if (eb.max_rel > out->max_rel)
            out->max_rel = eb.max_rel;
        out->mismatched = (ea.mismatched + eb.mismatched) / 2;
        out->rms = sqrt((ea.rms * ea.rms + eb.rms * eb.rms) / 2);
    } else {
        pe_dx_compare(s->a, pred, n, tol, slack, out);
    }
out:
    free(pred);
    free(slack);
    return st;
}

/* Rows read by a probe: enough positions for every frequency to turn
 * (the lags reach 64) and few enough to be cheap. */
#define DX_PROBE_ROWS 64

pe_status pe_dx_evaluate_fast(const pe_dx_subject *s, const pe_dx_variant *v, pe_dx_tolerance tol,
                              pe_dx_errors *out, bool *full)
{
    /* A probe on the first rows can only refute: a mismatch there is a
     * mismatch of the whole. Rows are independent except for a transposed
     * table (rows are dimensions), biases (rows are tokens of [t][t]) and
     * the scalings that depend on the sequence length. */
    bool probe = s->rows > 2 * DX_PROBE_ROWS && !v->transposed &&
                 s->kind != PE_DX_SUBJ_ALIBI_BIAS && s->kind != PE_DX_SUBJ_T5_BIAS &&
                 s->kind != PE_DX_SUBJ_ALIBI_SLOPES &&
                 v->rope.scaling.type != PE_ROPE_SCALING_DYNAMIC &&
                 v->rope.scaling.type != PE_ROPE_SCALING_LONGROPE;
    *full = true;
    if (probe) {
        pe_dx_subject head = *s;
        head.rows = DX_PROBE_ROWS;
        pe_status st = pe_dx_evaluate(&head, v, tol, out);
        if (st != PE_OK || !dx_within(out)) {
            *full = false;
            return st;
        }
    }
    return pe_dx_evaluate(s, v, tol, out);
}

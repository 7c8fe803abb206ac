/*
 * diagnose_absolute.c - the search for sinusoidal subjects: a bare table,
 * or embeddings with embed_scale*x + PE.
 *
 * Each sin/cos column pair is a unit phasor cos + i sin whose angle grows
 * with position at the pair's frequency. Readings: the table as sent or
 * transposed, interleaved or split columns, sin and cos in place or
 * swapped; the norm score (|phasor| = 1) ranks them and the best few are
 * followed: frequencies by phase progression, a base from a fixed list
 * (claimed, its formula transforms, the fitted one and its roundings), the
 * offset from the remaining phase; when that base does not reproduce the
 * subject, every other base of the list in turn. For embeddings the scale comes first
 * from least squares of the encoded output against x (the encoding is
 * nearly orthogonal to x), then exactly once the encoding is known.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

#define MAX_FINALISTS 4
/* passes over an encoding, each with the scale the one before refitted */
#define DX_SCALE_PASSES 4
/* the claim's base under each formula, the fitted one and 4 roundings */
#define DX_ABS_BASES (PE_DX_FORMULA_COUNT + 5)

typedef struct abs_reading {
    bool transposed, swapped;
    pe_sin_layout layout;
    double norm_score;
} abs_reading;

/* The table to read: [tokens][d] doubles (the subject, its transpose, or
 * the encoded output less the scaled embeddings), with its positions. */
typedef struct abs_view {
    size_t tokens, d;
    double *pe;         /* owned */
    int64_t *positions; /* owned */
} abs_view;

static void view_free(abs_view *v)
{
    free(v->pe);
    free(v->positions);
    v->pe = NULL;
    v->positions = NULL;
}

/* scale*x removed; transposed reads a [d][tokens] table. */
static pe_status make_view(const pe_dx_subject *s, bool transposed, double scale, abs_view *v)
{
    size_t n = s->rows * s->cols;
    v->tokens = transposed ? s->cols : s->rows;
    v->d = transposed ? s->rows : s->cols;
    v->pe = malloc(n * sizeof *v->pe);
    v->positions = malloc(v->tokens * sizeof *v->positions);
    if (!v->pe || !v->positions) {
        view_free(v);
        return PE_ENOMEM;
    }
    for (size_t t = 0; t < v->tokens; t++)
        v->positions[t] = transposed ? s->positions[0] + (int64_t)t : s->positions[t];
    for (size_t r = 0; r < s->rows; r++)
        for (size_t c = 0; c < s->cols; c++) {
            size_t e = r * s->cols + c;
            double val = s->a[e];
            if (s->kind == PE_DX_SUBJ_ABS_ENCODED && s->x)
                val -= scale * (double)s->x[e];
            v->pe[transposed ? c * s->rows + r : e] = val;
        }
    return PE_OK;
}

static pe_status build(const abs_view *v, const abs_reading *r, dx_phasors *ph, double *score)
{
    size_t nf = (v->d + 1) / 2, full = v->d / 2;
    size_t cells = v->tokens * full;

    ph->rows = v->tokens;
    ph->pairs = ph->half = full;
    ph->z = malloc((cells ? cells : 1) * 2 * sizeof *ph->z);
    if (!ph->z)
        return PE_ENOMEM;
    double dev = 0;
    for (size_t t = 0; t < v->tokens; t++)
        for (size_t i = 0; i < full; i++) {
            size_t sc = r->layout == PE_SIN_SPLIT ? i : 2 * i;
            size_t cc = r->layout == PE_SIN_SPLIT ? nf + i : 2 * i + 1;
            double sv = v->pe[t * v->d + sc], cv = v->pe[t * v->d + cc];
            double *z = ph->z + 2 * (t * full + i);
            z[0] = r->swapped ? sv : cv;
            z[1] = r->swapped ? cv : sv;
            dev += fabs(sqrt(cv * cv + sv * sv) - 1.0);
        }
    *score = cells && isfinite(dev) ? dev / (double)cells : INFINITY;
    return PE_OK;
}

typedef struct base_choice {
    double base;
    pe_dx_formula formula;
} base_choice;

/* The bases worth trying for d dimensions (at most DX_ABS_BASES): the claim's cb,
 * its equivalents under the other formulas, and the base fitted to the
 * measured frequencies m (full of them). */
static size_t absolute_bases(double cb, const double *m, size_t full, size_t d, base_choice *bases)
{
    double fit_scale;
    double fitted = pe_dx_fit_base(m, full, d, &fit_scale);
    size_t nb = 0;
    for (int f = 0; f < PE_DX_FORMULA_COUNT; f++) {
        double b = pe_dx_formula_base((pe_dx_formula)f, cb, d);
        if (b > 1.0)
            bases[nb++] = (base_choice){b, (pe_dx_formula)f};
    }
    if (fitted > 1.0) {
        for (int dg = 1; dg <= 4; dg++)
            bases[nb++] = (base_choice){pe_dx_round_sig(fitted, dg), PE_DX_FORMULA_STANDARD};
        bases[nb++] = (base_choice){fitted, PE_DX_FORMULA_STANDARD};
    }
    return nb;
}

/* The earliest of the nb bases whose frequency profile scores as well as
 * the best against m (w: scratch of full). */
static size_t pick_base(const abs_view *view, const base_choice *bases, size_t nb, const double *m,
                        double *w)
{
    size_t full = view->d / 2, d = view->d;
    double span = 1.0;
    for (size_t t = 0; t < view->tokens; t++)
        span = fmax(span, (double)view->positions[t] + 1.0);
    double scores[DX_ABS_BASES], best_score = INFINITY;
    for (size_t k = 0; k < nb; k++) {
        for (size_t i = 0; i < full; i++)
            w[i] = pe_inv_freq(bases[k].base, i, d);
        scores[k] = bases[k].base > 1.0 && isfinite(bases[k].base)
                        ? pe_dx_profile_score(m, w, full, PE_DX_EXACT, span)
                        : INFINITY;
        best_score = fmin(best_score, scores[k]);
    }
    for (size_t k = 0; k < nb; k++)
        if (scores[k] <= best_score + 2e-6 + 0.05 * best_score)
            return k;
    return 0;
}

#define DX_PICKED_BASE ((size_t)-1)
/* A reading whose phasors' mean deviation from unit length is at most this
 * holds sin/cos pairs (noise scores about 0.3): only such a reading is
 * followed with every candidate base. */
#define DX_UNIT_PHASORS 0.1

/* The scale of the closest variant followed with any base: the scale a
 * second pass removes (the variants themselves may mislead later stages). */
typedef struct scale_hint {
    double scale;
    pe_dx_errors err;
} scale_hint;

/* Follow one reading to a variant (base, offset, layout, flags): with the
 * base pick_base prefers (which = DX_PICKED_BASE) or with candidate
 * `which` of absolute_bases' list (*n_bases: the list's length). */
static pe_status follow(const pe_dx_variant *claim, const abs_view *view, const abs_reading *r,
                        size_t which, pe_dx_variant *out, size_t *n_bases)
{
    dx_phasors ph = {0};
    size_t full = view->d / 2, d = view->d;
    double score;
    double *m = malloc((full ? full : 1) * sizeof *m); /* owned */
    double *w = malloc((full ? full : 1) * sizeof *w); /* owned */
    pe_status st = PE_ENOMEM;

    *out = *claim;
    out->transposed = r->transposed;
    out->sin_layout = r->layout;
    out->sin_cos_swapped = r->swapped;
    out->offset = 0;
    if (!m || !w)
        goto out;
    st = build(view, r, &ph, &score);
    if (st != PE_OK || full == 0)
        goto out;
    st = pe_dx_measure_freqs(&ph, view->positions, m);
    if (st != PE_OK)
        goto out;

    base_choice bases[DX_ABS_BASES];
    size_t nb = absolute_bases(claim->base, m, full, d, bases);
    *n_bases = nb;
    size_t pick = which != DX_PICKED_BASE ? which : pick_base(view, bases, nb, m, w);
    out->base = bases[pick].base;
    out->formula = bases[pick].formula;
    for (size_t i = 0; i < full; i++)
        w[i] = pe_inv_freq(out->base, i, d);
    double coherence;
    st = pe_dx_fit_offset(&ph, view->positions, w, 1.0, PE_DX_EXACT, &out->offset, &coherence);
out:
    free(ph.z);
    free(m);
    free(w);
    return st;
}

/* The least-squares embed_scale of y = s*x + PE for a known variant:
 * snapped to the claim's, 1, sqrt(d) or a short decimal when that close. */
static pe_status refit_scale(const pe_dx_subject *s, pe_dx_variant *v)
{
    size_t n = s->rows * s->cols;
    float *pe = malloc(n * sizeof *pe); /* owned */
    if (!pe)
        return PE_ENOMEM;
    pe_dx_subject bare = *s;
    bare.kind = PE_DX_SUBJ_TABLE;
    pe_dx_variant t = *v;
    t.transposed = false;
    pe_status st = pe_dx_render(&bare, &t, pe);
    if (st == PE_OK) {
        double num = 0, den = 0;
        for (size_t e = 0; e < n; e++) {
            num += ((double)s->a[e] - pe[e]) * s->x[e];
            den += (double)s->x[e] * s->x[e];
        }
        double sc = den > 0 ? num / den : v->embed_scale;
        double snaps[3] = {v->embed_scale, 1.0, sqrt((double)s->cols)};
        bool done = false;
        for (int k = 0; k < 3 && !done; k++)
            if (fabs(sc - snaps[k]) <= 1e-6 * fabs(snaps[k])) {
                sc = snaps[k];
                done = true;
            }
        for (int dg = 1; dg <= 6 && !done; dg++) {
            double r = pe_dx_round_sig(sc, dg);
            if (fabs(sc - r) <= 1e-6 * fabs(r)) {
                sc = r;
                done = true;
            }
        }
        if (isfinite(sc))
            v->embed_scale = sc;
    }
    free(pe);
    return st;
}

static bool better(const pe_dx_errors *a, const pe_dx_errors *b)
{
    if (a->mismatched != b->mismatched)
        return a->mismatched < b->mismatched;
    return a->max_abs < b->max_abs;
}

/* One reading followed with the base pick_base prefers, then (when that
 * does not reproduce the subject: the profile of frequencies measured
 * through a first guess of the scale is noisy) and the reading holds unit
 * phasors, with every other candidate base in turn, each with its own offset and scale: updates *best /
 * *best_err with the picked one or one that reproduces the subject, *hint
 * with the closest of all; *done when one reproduces the subject. */
static pe_status follow_bases(const pe_dx_subject *s, const pe_dx_variant *claim,
                              pe_dx_tolerance tol, double scale, const abs_view *view,
                              const abs_reading *r, pe_dx_variant *best, pe_dx_errors *best_err,
                              scale_hint *hint, bool *done)
{
    size_t nb = 0;
    double picked = NAN;
    /* DX_PICKED_BASE first; the index wraps to 0 after it */
    for (size_t which = DX_PICKED_BASE; which == DX_PICKED_BASE || which < nb; which++) {
        pe_dx_variant v;
        if (which != DX_PICKED_BASE &&
            (pe_dx_out_of_time(s) || !(r->norm_score <= DX_UNIT_PHASORS)))
            break;
        pe_status st = follow(claim, view, r, which, &v, &nb);
        if (st != PE_OK)
            return st;
        if (v.base == picked)
            continue; /* followed already */
        if (which == DX_PICKED_BASE)
            picked = v.base;
        if (s->kind == PE_DX_SUBJ_ABS_ENCODED && s->x) {
            v.embed_scale = scale;
            st = refit_scale(s, &v);
            if (st != PE_OK)
                return st;
        }
        pe_dx_errors e;
        bool full;
        st = pe_dx_evaluate_fast(s, &v, tol, &e, &full);
        if (st != PE_OK)
            return st;
        bool reproduces = full && dx_within(&e);
        if (better(&e, &hint->err)) {
            hint->err = e;
            hint->scale = v.embed_scale;
        }
        /* another base replaces the picked one only when it reproduces the
         * subject (the picked one's structure is what later stages read) */
        if ((which == DX_PICKED_BASE || reproduces) && better(&e, best_err)) {
            *best_err = e;
            *best = v;
        }
        if (reproduces) {
            *done = true; /* no finalist can do better */
            return PE_OK;
        }
    }
    return PE_OK;
}

/* One pass over the readings with the embeddings scaled by `scale`:
 * updates *best / *best_err; *done when a finalist reproduces the subject. */
static pe_status read_pass(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_tolerance tol,
                           double scale, abs_reading *list, size_t n, abs_view *views,
                           pe_dx_variant *best, pe_dx_errors *best_err, scale_hint *hint,
                           bool *done)
{
    pe_status st;

    for (int tr = 0; tr < (s->kind == PE_DX_SUBJ_TABLE ? 2 : 1); tr++) {
        if (views[tr].pe)
            continue;
        st = make_view(s, tr, scale, &views[tr]);
        if (st != PE_OK)
            return st;
    }
    double min_score = INFINITY;
    for (size_t k = 0; k < n; k++) {
        dx_phasors ph = {0};
        st = build(&views[list[k].transposed], &list[k], &ph, &list[k].norm_score);
        free(ph.z);
        if (st != PE_OK)
            return st;
        min_score = fmin(min_score, list[k].norm_score);
    }
    size_t taken = 0;
    for (size_t k = 0; k < n && taken < MAX_FINALISTS && !pe_dx_out_of_time(s); k++) {
        if (!(list[k].norm_score <= 4 * min_score + 1e-6))
            continue;
        taken++;
        st = follow_bases(s, claim, tol, scale, &views[list[k].transposed], &list[k], best,
                          best_err, hint, done);
        if (st != PE_OK || *done)
            return st;
    }
    return PE_OK;
}

pe_status pe_dx_search_absolute(const pe_dx_subject *s, const pe_dx_variant *claim,
                                pe_dx_tolerance tol, pe_dx_variant *best)
{
    bool encoded = s->kind == PE_DX_SUBJ_ABS_ENCODED && s->x;
    abs_reading list[8];
    size_t n = 0;
    pe_status st = PE_OK;
    double scale = claim->embed_scale;

    *best = *claim;
    if (encoded) { /* first guess: the encoding is nearly orthogonal to x */
        double num = 0, den = 0;
        for (size_t e = 0; e < s->rows * s->cols; e++) {
            num += (double)s->a[e] * s->x[e];
            den += (double)s->x[e] * s->x[e];
        }
        if (den > 0 && isfinite(num / den))
            scale = num / den;
    }
    for (int tr = 0; tr < (s->kind == PE_DX_SUBJ_TABLE ? 2 : 1); tr++)
        for (int lay = 0; lay < 2; lay++)
            for (int sw = 0; sw < 2; sw++)
                list[n++] = (abs_reading){tr, sw,
                                          lay ? (claim->sin_layout == PE_SIN_SPLIT
                                                     ? PE_SIN_INTERLEAVED
                                                     : PE_SIN_SPLIT)
                                              : claim->sin_layout,
                                          0};
    abs_view views[2] = {{0}, {0}};
    pe_dx_errors best_err = {.mismatched = 2.0, .max_abs = INFINITY};
    scale_hint hint = {scale, best_err};
    /* embeddings: each further pass reads the encoding with the scale the
     * pass before refitted (the first guess leaves a little of x in it,
     * more the fewer the values), while that scale still moves */
    for (int pass = 0; pass < (encoded ? DX_SCALE_PASSES : 1); pass++) {
        if (pass >= 1) {
            if (dx_within(&best_err) || hint.scale == scale)
                break;
            scale = hint.scale;
            view_free(&views[0]);
        }
        bool done = false;
        st = read_pass(s, claim, tol, scale, list, n, views, best, &best_err, &hint, &done);
        if (st != PE_OK || done)
            break;
    }
    view_free(&views[0]);
    view_free(&views[1]);
    return st;
}

pe_status pe_dx_absolute_phasors(const pe_dx_subject *s, const pe_dx_variant *v, dx_phasors *ph,
                                 double *w)
{
    abs_view view = {0};
    abs_reading r = {false, v->sin_cos_swapped, v->sin_layout, 0};
    double score;

    ph->z = NULL;
    pe_status st = make_view(s, false, v->embed_scale, &view);
    if (st == PE_OK)
        st = build(&view, &r, ph, &score);
    for (size_t i = 0; st == PE_OK && i < s->cols / 2; i++)
        w[i] = pe_inv_freq(v->base, i, s->cols);
    view_free(&view);
    return st;
}

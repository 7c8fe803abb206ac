/*
 * diagnose_significance.c - which variants count as explanations (contract
 * 1.2 "/diagnose, version 2", Significance).
 *
 * A variant explains the subject when it reproduces it within tolerance;
 * at bfloat16/float16 (angles or values, judged with the slack those
 * explain) it must also be the emulation that brings it there: the subject
 * must lie clearly closer to the emulated rounding than to the exact
 * values, or any noise (or float32's larger angle errors far out) below
 * the slack would pass as "low precision". A
 * variant that does not explain is a partial explanation only when it cuts
 * the claim's maximum error at least tenfold.
 *
 * Every difference between the claim and a variant is then tried without
 * (reverted to the claim's): a difference the variant does not need - one
 * whose removal keeps the subject explained, or keeps a partial
 * explanation within twice its error - is dropped, so that no finding
 * rides along on another's improvement.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

/* The subject must be at least this much closer (rms) to the emulated
 * low-precision values than to the exact ones. */
#define DX_EMULATION_GAIN 0.7

static bool coarse(pe_dx_precision p)
{
    return p == PE_DX_BFLOAT16 || p == PE_DX_FLOAT16;
}

/* Coarse angles in any order: the error against the exact values must
 * grow with |position| - the rows past the middle of the positions' span
 * at least DX_GROWTH times the rms error of those before it - or noise
 * below the envelope would pass as low precision. */
#define DX_GROWTH 2.0

static pe_status grows_with_position(const pe_dx_subject *s, const pe_dx_variant *v, bool *grows)
{
    size_t n = pe_dx_subject_size(s), per = s->rows * s->cols;
    float *want = malloc((n ? n : 1) * sizeof *want); /* owned */
    pe_dx_variant exact = *v;

    *grows = false;
    if (!want)
        return PE_ENOMEM;
    exact.precision = PE_DX_EXACT;
    exact.any_order = false;
    pe_status st = pe_dx_render(s, &exact, want);
    if (st != PE_OK || v->transposed || s->cols == 0 || per == 0) {
        free(want);
        return st;
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t t = 0; t < s->rows; t++) {
        int64_t p = llabs(pe_dx_position(s, v, t));
        lo = p < lo ? p : lo;
        hi = p > hi ? p : hi;
    }
    double sq[2] = {0, 0}, count[2] = {0, 0};
    for (size_t e = 0; e < n; e++) {
        size_t row = (e % per) / s->cols;
        const float *got = e < per ? s->a : s->b;
        double d = (double)got[e % per] - want[e];
        int upper = 2 * llabs(pe_dx_position(s, v, row)) > lo + hi;
        sq[upper] += d * d;
        count[upper] += 1;
    }
    free(want);
    double before = count[0] ? sqrt(sq[0] / count[0]) : 0,
           after = count[1] ? sqrt(sq[1] / count[1]) : 0;
    *grows = count[0] > 0 && count[1] > 0 && after >= DX_GROWTH * before && after > 0;
    return PE_OK;
}

pe_status pe_dx_judge(const pe_dx_subject *s, const pe_dx_variant *v, pe_dx_tolerance tol,
                      pe_dx_errors *e, bool *explains)
{
    *explains = false;
    pe_status st = pe_dx_evaluate(s, v, tol, e);
    if (st != PE_OK || !dx_within(e))
        return st;
    if (coarse(v->precision) && v->any_order) {
        st = grows_with_position(s, v, explains);
        bool rope = s->kind == PE_DX_SUBJ_ROPE_CACHE || s->kind == PE_DX_SUBJ_ROPE_ENCODED;
        if (st == PE_OK && *explains && rope) /* and frequencies of that precision */
            st = pe_dx_drift_within(s, v, explains);
        return st;
    }
    if (coarse(v->precision)) {
        pe_dx_variant exact = *v;
        pe_dx_errors ee;
        exact.precision = PE_DX_EXACT;
        st = pe_dx_evaluate(s, &exact, tol, &ee);
        if (st != PE_OK)
            return st;
        if (!(e->rms <= DX_EMULATION_GAIN * ee.rms))
            return PE_OK;
    }
    *explains = true;
    return PE_OK;
}

bool pe_dx_significant(const pe_dx_errors *claimed, const pe_dx_errors *e)
{
    return dx_within(e) || (isfinite(e->max_abs) && 10.0 * e->max_abs <= claimed->max_abs);
}

/* The scalings differ other than in their explicit attention factor. */
static bool scaling_differs(const pe_rope_scaling *a, const pe_rope_scaling *b)
{
    return a->type != b->type || a->factor != b->factor || a->has_factor != b->has_factor ||
           a->original_max_position_embeddings != b->original_max_position_embeddings ||
           a->beta_fast != b->beta_fast || a->beta_slow != b->beta_slow ||
           a->has_beta_fast != b->has_beta_fast || a->has_beta_slow != b->has_beta_slow ||
           a->mscale != b->mscale || a->mscale_all_dim != b->mscale_all_dim ||
           a->has_mscale != b->has_mscale || a->has_mscale_all_dim != b->has_mscale_all_dim ||
           a->truncate != b->truncate || a->low_freq_factor != b->low_freq_factor ||
           a->high_freq_factor != b->high_freq_factor || a->short_factor != b->short_factor ||
           a->long_factor != b->long_factor;
}

/* Revert difference k of v to the claim's; false when v has none there
 * (k past the last: false too). */
static bool revert(int k, const pe_dx_variant *c, pe_dx_variant *v)
{
#define DX_REVERT(cond, stmt)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return false;                                                                          \
        stmt;                                                                                      \
        return true;                                                                               \
    } while (0)
    switch (k) {
    case 0:
        DX_REVERT(v->transposed != c->transposed, v->transposed = c->transposed);
    case 1:
        DX_REVERT(v->sin_layout != c->sin_layout, v->sin_layout = c->sin_layout);
    case 2:
        DX_REVERT(v->sin_cos_swapped != c->sin_cos_swapped,
                  v->sin_cos_swapped = c->sin_cos_swapped);
    case 3:
        DX_REVERT(v->offset != c->offset, v->offset = c->offset);
    case 4:
        DX_REVERT(v->positions != c->positions, v->positions = c->positions);
    case 5:
        DX_REVERT(v->base != c->base || v->rope.base != c->rope.base, {
            v->base = c->base;
            v->rope.base = c->rope.base;
            v->formula = c->formula;
            v->frequency_dim = v->rope.rotary_dim; /* evidence of the base */
        });
    case 6:
        DX_REVERT(v->embed_scale != c->embed_scale, v->embed_scale = c->embed_scale);
    case 7:
        DX_REVERT(v->rope.layout != c->rope.layout, v->rope.layout = c->rope.layout);
    case 8:
        DX_REVERT(v->reversed != c->reversed, v->reversed = c->reversed);
    case 9: /* the frequencies' scaling; the explicit attention factor is 10's */
        DX_REVERT(scaling_differs(&v->rope.scaling, &c->rope.scaling), {
            pe_rope_scaling own = v->rope.scaling;
            v->rope.scaling = c->rope.scaling;
            v->rope.scaling.has_attention_factor = own.has_attention_factor;
            v->rope.scaling.attention_factor = own.attention_factor;
        });
    case 10:
        DX_REVERT(v->attention_factor != c->attention_factor, {
            v->attention_factor = c->attention_factor;
            v->rope.scaling.has_attention_factor = c->rope.scaling.has_attention_factor;
            v->rope.scaling.attention_factor = c->rope.scaling.attention_factor;
        });
    case 11:
        DX_REVERT(v->alibi_form != c->alibi_form || v->alibi_sign != c->alibi_sign, {
            v->alibi_form = c->alibi_form;
            v->alibi_sign = c->alibi_sign;
        });
    case 12:
        DX_REVERT(v->slopes != c->slopes, v->slopes = c->slopes);
    case 13:
        DX_REVERT(v->t5_reversed != c->t5_reversed, v->t5_reversed = c->t5_reversed);
    case 14:
        DX_REVERT(v->t5.num_buckets != c->t5.num_buckets ||
                      v->t5.max_distance != c->t5.max_distance ||
                      v->t5.bidirectional != c->t5.bidirectional,
                  {
                      v->t5.num_buckets = c->t5.num_buckets;
                      v->t5.max_distance = c->t5.max_distance;
                      v->t5.bidirectional = c->t5.bidirectional;
                  });
    case 15:
        DX_REVERT(v->precision != c->precision || v->stage != c->stage, {
            v->precision = c->precision;
            v->stage = c->stage;
            v->any_order = c->any_order;
        });
    default:
        return false;
    }
#undef DX_REVERT
}

#define DX_COMPONENTS 16
#define DX_PRECISION_COMPONENT 15

/* Revert component k of v to the claim's (k = -1: the head and rotary
 * widths, which go together, reverted as one and only where the claim's
 * can be read - validate() checked the claim's); false when v has none
 * there. */
static bool revert_component(int k, const pe_dx_variant *c, pe_dx_variant *t)
{
    if (k >= 0)
        return revert(k, c, t);
    if (t->rope.head_dim == c->rope.head_dim && t->rope.rotary_dim == c->rope.rotary_dim)
        return false;
    if (t->frequency_dim == t->rope.rotary_dim) /* else: the base's evidence */
        t->frequency_dim = c->rope.rotary_dim;
    t->rope.head_dim = c->rope.head_dim;
    t->rope.rotary_dim = c->rope.rotary_dim;
    return true;
}

/* An explanation at bfloat16/float16 whose envelope covers another
 * difference's small error (a base off by a few parts in a thousand): the
 * coarse precision reverted together with each other difference in turn;
 * the first pair whose removal still explains is dropped, so that neither
 * finding stands where the claim's values reproduce the subject. */
static pe_status drop_compensating_pair(const pe_dx_subject *s, const pe_dx_variant *c,
                                        pe_dx_tolerance tol, pe_dx_variant *v, pe_dx_errors *e)
{
    if (!coarse(v->precision))
        return PE_OK;
    for (int k = -1; k < DX_PRECISION_COMPONENT && !pe_dx_out_of_time(s); k++) {
        pe_dx_variant t = *v;
        if (!revert(DX_PRECISION_COMPONENT, c, &t) || !revert_component(k, c, &t))
            continue;
        pe_dx_errors te;
        bool ok = false, full;
        pe_status st = pe_dx_evaluate_fast(s, &t, tol, &te, &full);
        if (st == PE_EINVAL || (st == PE_OK && !(full && dx_within(&te))))
            continue; /* a probe of the first rows refutes most cheaply */
        if (st == PE_OK)
            st = pe_dx_judge(s, &t, tol, &te, &ok);
        if (st != PE_OK)
            return st;
        if (ok) {
            *v = t;
            *e = te;
            return PE_OK;
        }
    }
    return PE_OK;
}

pe_status pe_dx_simplify(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                         bool explains, pe_dx_variant *v, pe_dx_errors *e)
{
    double partial = e->max_abs; /* a partial explanation's own error */
    for (int k = -1; k < DX_COMPONENTS && !pe_dx_out_of_time(s); k++) {
        pe_dx_variant t = *v;
        if (!revert_component(k, c, &t))
            continue;
        pe_dx_errors te;
        bool ok = false, full;
        /* a probe of the first rows refutes most reverts cheaply */
        pe_status st = pe_dx_evaluate_fast(s, &t, tol, &te, &full);
        if (st == PE_OK && !full && explains)
            continue;
        if (st == PE_OK && !full && !(te.max_abs <= 2.0 * partial))
            continue;
        if (st == PE_OK && !full) /* the probe passed: the whole, as judged */
            st = pe_dx_judge(s, &t, tol, &te, &ok);
        else if (st == PE_OK && coarse(t.precision))
            st = pe_dx_judge(s, &t, tol, &te, &ok);
        else
            ok = dx_within(&te);
        if (st == PE_EINVAL)
            continue; /* the claim's width under the variant's other settings */
        if (st != PE_OK)
            return st;
        if (explains ? ok : (te.max_abs <= 2.0 * partial && isfinite(te.max_abs))) {
            *v = t;
            *e = te;
        }
    }
    return explains ? drop_compensating_pair(s, c, tol, v, e) : PE_OK;
}

/*
 * diagnose_verdict.c - pe_diagnose: the verdict. Compares the subject with the
 * claim; on a difference runs the search of the subject's kind, then
 * decides whether the variant found reproduces the subject exactly, or
 * within what a lower angle precision explains, and names the findings.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

static bool angle_kind(pe_dx_kind kind)
{
    return kind == PE_DX_SUBJ_TABLE || kind == PE_DX_SUBJ_ABS_ENCODED ||
           kind == PE_DX_SUBJ_ROPE_CACHE || kind == PE_DX_SUBJ_ROPE_ENCODED;
}

static bool rope_kind(pe_dx_kind kind)
{
    return kind == PE_DX_SUBJ_ROPE_CACHE || kind == PE_DX_SUBJ_ROPE_ENCODED;
}

static bool better(const pe_dx_errors *a, const pe_dx_errors *b)
{
    if (a->mismatched != b->mismatched)
        return a->mismatched < b->mismatched;
    return a->max_abs < b->max_abs;
}

/* The claim as evaluated: exact angles, and for rope its frequencies'
 * attention factor and frequency width filled in. */
static pe_status exact_claim(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_variant *c)
{
    *c = *claim;
    c->precision = PE_DX_EXACT;
    c->any_order = false;
    if (!rope_kind(s->kind))
        return PE_OK;
    size_t half = c->rope.rotary_dim / 2;
    double *w = malloc(half * sizeof *w); /* owned */
    if (!w)
        return PE_ENOMEM;
    pe_status st = pe_dx_rope_freqs(s, c, w, &c->attention_factor);
    free(w);
    if (st != PE_OK)
        return st;
    c->frequency_dim = c->rope.rotary_dim;
    return PE_OK;
}

static pe_status values_stage(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                              pe_dx_variant *v, pe_dx_errors *e, bool *explains);
static pe_status conclude(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                          pe_dx_variant v, pe_dx_errors e, bool explains, pe_dx_result *out);

/* The claim itself: exact (MATCH), with its values in half precision
 * (EXPLAINED, low_precision stage values), at float32 angles (MATCH with
 * low_precision); sets *decided when one reproduces the subject. */
static pe_status judge_claim(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                             pe_dx_result *out, bool *decided)
{
    *decided = false;
    pe_status st = pe_dx_evaluate(s, c, tol, &out->claimed);
    if (st != PE_OK)
        return st;
    out->best = *c;
    out->best_errors = out->explained = out->claimed;
    if (dx_within(&out->claimed)) {
        out->verdict = PE_DX_MATCH;
        *decided = true;
        return PE_OK;
    }
    if (!angle_kind(s->kind))
        return PE_OK;
    /* values stored in half precision first: an exact emulation, where
     * float32's bound is only a bound (it would cover a float16 cache at
     * positions past ~1000) */
    pe_dx_variant f32 = *c;
    pe_dx_errors e;
    bool half;
    st = values_stage(s, c, tol, &f32, &e, &half);
    if (st != PE_OK || half) {
        *decided = st == PE_OK;
        return st == PE_OK ? conclude(s, c, tol, f32, e, true, out) : st;
    }
    f32 = *c;
    f32.precision = PE_DX_FLOAT32;
    st = pe_dx_evaluate(s, &f32, tol, &e);
    if (st != PE_OK)
        return st;
    if (dx_within(&e)) {
        out->verdict = PE_DX_MATCH;
        out->best = f32;
        out->explained = e;
        pe_dx_findings(s, c, out, out->findings, &out->n_findings);
        *decided = true;
    }
    return PE_OK;
}

/* The search of the subject's kind; *found and *alt start as the claim. */
static pe_status search_kind(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                             pe_dx_variant *found, pe_dx_variant *alt, pe_dx_result *out)
{
    switch (s->kind) {
    case PE_DX_SUBJ_TABLE:
    case PE_DX_SUBJ_ABS_ENCODED:
        return pe_dx_search_absolute(s, c, tol, found);
    case PE_DX_SUBJ_ROPE_CACHE:
    case PE_DX_SUBJ_ROPE_ENCODED:
        return pe_dx_search_rope(s, c, tol, found, alt);
    case PE_DX_SUBJ_ALIBI_BIAS:
    case PE_DX_SUBJ_ALIBI_SLOPES:
        return pe_dx_search_alibi(s, c, found, &out->slopes);
    case PE_DX_SUBJ_T5_BIAS:
        return pe_dx_search_t5(s, c, found);
    }
    return PE_OK;
}

/* alibi_slopes evidence: which heads' found slopes differ from the paper's
 * (out->slopes_differ, owned by out). */
static pe_status mark_differing_slopes(const pe_dx_subject *s, const pe_dx_variant *found,
                                       pe_dx_result *out)
{
    double *paper = malloc(s->heads * sizeof *paper); /* owned */
    out->slopes_differ = calloc(s->heads, sizeof *out->slopes_differ);
    if (!paper || !out->slopes_differ) {
        free(paper);
        return PE_ENOMEM;
    }
    pe_alibi_slopes(s->heads, paper);
    for (size_t h = 0; h < s->heads; h++)
        out->slopes_differ[h] = !pe_dx_float32_equal(found->slopes[h], paper[h]);
    free(paper);
    return PE_OK;
}

/* The structure found (and the rope search's second finalist), at exact
 * angles, then at each lower precision (the simplest precision that
 * explains wins); the claim's own structure at the lower precisions too
 * (a search misled by coarse angles). The first that explains is *v
 * (*explains); otherwise the closest at exact angles. *e: *v as judged. */
static pe_status choose(const pe_dx_subject *s, const pe_dx_variant *c, const pe_dx_variant *found,
                        const pe_dx_variant *alt, pe_dx_tolerance tol, const pe_dx_errors *claimed,
                        pe_dx_variant *v, pe_dx_errors *e, bool *explains)
{
    /* exact, float32 angles, float16/bfloat16 values (exact emulation:
     * simpler than coarse angles), bfloat16/float16 angles, then float16/
     * bfloat16 angles in any order (by the envelope of their errors) */
    static const pe_dx_precision precs[] = {PE_DX_EXACT,    PE_DX_FLOAT32,  PE_DX_FLOAT16,
                                            PE_DX_BFLOAT16, PE_DX_BFLOAT16, PE_DX_FLOAT16,
                                            PE_DX_FLOAT16,  PE_DX_BFLOAT16};
    static const pe_dx_stage stages[] = {PE_DX_STAGE_ANGLES, PE_DX_STAGE_ANGLES, PE_DX_STAGE_VALUES,
                                         PE_DX_STAGE_VALUES, PE_DX_STAGE_ANGLES, PE_DX_STAGE_ANGLES,
                                         PE_DX_STAGE_ANGLES, PE_DX_STAGE_ANGLES};
    size_t nprec = angle_kind(s->kind) ? 8 : 1;
    /* at exact and float32 angles the variant found comes first; at
     * bfloat16/float16 the claim's own structure does (the simplest
     * explanation: coarse angles blur the profile the search read) */
    const pe_dx_variant *found_first[3] = {found, alt, c};
    const pe_dx_variant *claim_first[3] = {c, alt, found};
    *explains = false;
    *e = *claimed;
    *v = *c;
    for (size_t k = 0; k < nprec && !pe_dx_out_of_time(s); k++)
        for (int b = 0; b < 3; b++) {
            const pe_dx_variant *base = k < 2 ? found_first[b] : claim_first[b];
            if ((base == c && k < 2) || (base == alt && !rope_kind(s->kind)))
                continue; /* the claim exact and at float32: done above */
            pe_dx_variant t = *base;
            t.precision = precs[k];
            t.stage = stages[k];
            t.any_order = k >= 6;
            pe_dx_errors te;
            bool full;
            pe_status st = pe_dx_evaluate_fast(s, &t, tol, &te, &full);
            if (st == PE_EINVAL)
                continue;
            if (st != PE_OK)
                return st;
            if (k == 0 && better(&te, e)) {
                *e = te;
                *v = t;
            }
            if (!full || !dx_within(&te))
                continue;
            bool ok = true; /* within in full; coarse precisions must also help */
            if (t.precision == PE_DX_BFLOAT16 || t.precision == PE_DX_FLOAT16)
                st = pe_dx_judge(s, &t, tol, &te, &ok);
            if (st != PE_OK)
                return st;
            if (ok) {
                *v = t;
                *e = te;
                *explains = true;
                return PE_OK;
            }
        }
    if (!*explains) /* the closest in full (a probe's are a bound) */
        return pe_dx_evaluate(s, v, tol, e);
    return PE_OK;
}

/* The claim with its values stored in float16, then bfloat16 (a
 * half-precision cos/sin cache or table): *explains when one reproduces
 * the subject (v, e: that one). */
static pe_status values_stage(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                              pe_dx_variant *v, pe_dx_errors *e, bool *explains)
{
    static const pe_dx_precision precs[] = {PE_DX_FLOAT16, PE_DX_BFLOAT16};
    *explains = false;
    if (!angle_kind(s->kind))
        return PE_OK;
    for (int k = 0; k < 2 && !*explains; k++) {
        *v = *c;
        v->precision = precs[k];
        v->stage = PE_DX_STAGE_VALUES;
        bool full;
        pe_status st = pe_dx_evaluate_fast(s, v, tol, e, &full); /* a probe refutes cheaply */
        if (st == PE_OK && full && dx_within(e))
            st = pe_dx_judge(s, v, tol, e, explains);
        if (st != PE_OK)
            return st;
    }
    return PE_OK;
}

/* The structure found at the positions its phases show: as found, and
 * without the sin/cos swap and reversed rotation that descending
 * positions mimic. Only an explanation replaces *v, *e. */
static pe_status positions_after_search(const pe_dx_subject *s, const pe_dx_variant *c,
                                        const pe_dx_variant *found, pe_dx_tolerance tol,
                                        pe_dx_result *out, pe_dx_variant *v, pe_dx_errors *e,
                                        bool *explains)
{
    if (!angle_kind(s->kind))
        return PE_OK;
    pe_dx_variant bases[2] = {*found, *found};
    bases[1].sin_cos_swapped = c->sin_cos_swapped;
    bases[1].reversed = c->reversed;
    for (int k = 0; k < 2 && !*explains; k++) {
        pe_dx_variant t;
        pe_dx_errors te;
        bases[k].precision = PE_DX_EXACT;
        bases[k].stage = PE_DX_STAGE_ANGLES;
        bases[k].any_order = false;
        pe_status st = pe_dx_try_positions(s, &bases[k], tol, out, &t, &te, explains);
        if (st != PE_OK)
            return st;
        if (*explains) {
            *v = t;
            *e = te;
        }
    }
    return PE_OK;
}

/* A base found that is exactly a formula's transform of the claimed one
 * is that formula (frequency_formula), however the search reached it. */
static void name_formula(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_variant *v)
{
    if (v->formula != PE_DX_FORMULA_STANDARD || !angle_kind(s->kind))
        return;
    if (rope_kind(s->kind)) {
        if (v->frequency_dim == v->rope.rotary_dim)
            v->formula = pe_dx_formula_of(c->rope.base, v->rope.base, v->rope.rotary_dim);
        return;
    }
    v->formula = pe_dx_formula_of(c->base, v->base, v->transposed ? s->rows : s->cols);
}

/* Frequencies over fewer dimensions than the channels paired (base^(-2i/
 * frequency_dim) for every pair of rotary_dim) whose leftover is the tail
 * of tiny frequencies where the subject has none: the inverse frequencies
 * of frequency_dim zero-padded to the width, then one rotation over it.
 * That reading at exact angles, when it reproduces the subject, replaces
 * a lower precision (whose slack would cover the tail) or no explanation. */
static pe_status try_zero_tail(const pe_dx_subject *s, pe_dx_tolerance tol, pe_dx_variant *v,
                               pe_dx_errors *e, bool *explains)
{
    if (!rope_kind(s->kind) || v->frequency_dim < 2 || v->frequency_dim >= v->rope.rotary_dim ||
        (*explains && v->precision == PE_DX_EXACT) || v->rope.scaling.type != PE_ROPE_SCALING_NONE)
        return PE_OK;
    pe_dx_variant t = *v;
    pe_dx_errors te;
    t.precision = PE_DX_EXACT;
    t.stage = PE_DX_STAGE_ANGLES;
    t.any_order = false;
    t.zero_from = v->frequency_dim / 2;
    pe_status st = pe_dx_evaluate(s, &t, tol, &te);
    if (st == PE_OK && dx_within(&te)) {
        *v = t;
        *e = te;
        *explains = true;
    }
    return st;
}

/* The verdict from the variant chosen: explained, a partial explanation
 * (a tenfold cut: unexplained with findings), or nothing (unexplained, best
 * is the claim, no finding); differences the variant does not need are
 * dropped first. */
static pe_status conclude(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                          pe_dx_variant v, pe_dx_errors e, bool explains, pe_dx_result *out)
{
    out->verdict = explains ? PE_DX_EXPLAINED : PE_DX_UNEXPLAINED;
    if (!explains && !pe_dx_significant(&out->claimed, &e)) {
        out->best = *c;
        out->best_errors = out->explained = out->claimed;
        return PE_OK;
    }
    pe_status st = pe_dx_simplify(s, c, tol, explains, &v, &e);
    if (st != PE_OK)
        return st;
    name_formula(s, c, &v);
    st = try_zero_tail(s, tol, &v, &e, &explains);
    if (st != PE_OK)
        return st;
    out->verdict = explains ? PE_DX_EXPLAINED : PE_DX_UNEXPLAINED;
    out->best = v;
    out->explained = e;
    pe_dx_variant exact = v;
    exact.precision = PE_DX_EXACT;
    exact.stage = PE_DX_STAGE_ANGLES;
    exact.any_order = false;
    exact.zero_from = 0;  /* best as /encode renders it */
    out->best_errors = e; /* at exact angles already, but for zero pairs */
    if (v.precision != PE_DX_EXACT || v.zero_from > 0)
        st = pe_dx_evaluate(s, &exact, tol, &out->best_errors);
    if (st == PE_OK && explains)
        st = pe_dx_dynamic_alternative(s, c, &v, tol, &out->dynamic_alternative);
    if (st != PE_OK)
        return st;
    pe_dx_findings(s, c, out, out->findings, &out->n_findings);
    return PE_OK;
}

/* The search past the claim's own readings: the claim's structure at the
 * positions its phases show, the search of the kind, the choice among what
 * it found (and those at their phases' positions), the verdict. */
static pe_status search_and_conclude(const pe_dx_subject *s, const pe_dx_variant *c,
                                     pe_dx_tolerance tol, pe_dx_result *out)
{
    pe_dx_variant v;
    pe_dx_errors e;
    bool explains;
    pe_status st = pe_dx_try_positions(s, c, tol, out, &v, &e, &explains);
    if (st != PE_OK || explains)
        return st == PE_OK ? conclude(s, c, tol, v, e, explains, out) : st;

    pe_dx_variant found = *c, alt = *c;
    if (!pe_dx_out_of_time(s))
        st = search_kind(s, c, tol, &found, &alt, out);
    if (st == PE_OK && found.slopes)
        st = mark_differing_slopes(s, &found, out);
    if (st == PE_OK)
        st = choose(s, c, &found, &alt, tol, &out->claimed, &v, &e, &explains);
    if (st == PE_OK && !explains && !pe_dx_out_of_time(s))
        st = positions_after_search(s, c, &found, tol, out, &v, &e, &explains);
    if (st == PE_OK)
        st = conclude(s, c, tol, v, e, explains, out);
    return st;
}

pe_status pe_diagnose(const pe_dx_subject *subject, const pe_dx_variant *claim, pe_dx_tolerance tol,
                      pe_dx_result *out)
{
    memset(out, 0, sizeof *out);
    pe_status st = pe_dx_validate(subject, claim);
    if (st != PE_OK)
        return st;
    /* the budget runs from here; every stage after the claim's own checks
     * stops at it */
    pe_dx_subject sub = *subject;
    double budget = subject->budget_s > 0 ? subject->budget_s : PE_DX_DEFAULT_BUDGET_S;
    sub.deadline_ = pe_dx_cpu_seconds() + budget;
    const pe_dx_subject *s = &sub;

    pe_dx_variant c;
    st = exact_claim(s, claim, &c);
    if (st != PE_OK)
        return st;
    bool decided;
    st = judge_claim(s, &c, tol, out, &decided);
    if (st == PE_OK && !decided) {
        st = search_and_conclude(s, &c, tol, out);
        out->truncated = pe_dx_out_of_time(s);
    }
    if (st != PE_OK) {
        pe_dx_result_free(out);
        memset(out, 0, sizeof *out);
    }
    return st;
}

/*
 * diagnose_nd.c - /diagnose of claims in more than one dimension
 * (pe_diagnose_nd, pe_diagnose.h): multimodal rope (a [t, h, w] triple per
 * token, each frequency slot turned by the component its style assigns)
 * and the 2-D rope of vision encoders. The 1-D search reads a frequency
 * and a position off each pair's phase; here the ways ports go wrong are
 * few and discrete (another style or section, the other mm_rule's
 * positions, every token turned as text, another rope2d variant), so each
 * is rendered whole and compared. Only multimodal claims come here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

static const char *const style_names[] = {"text", "chunked", "interleaved", "ernie"};
static const char *const variant_names[] = {"qwen_vit", "pixtral", "llama4_vision",
                                            "gemma4_vision"};

/* The sections of the released checkpoints (research notes, G2): Qwen2/2.5-VL,
 * Qwen3-VL, Qwen3.5, GLM-4.xV, ERNIE-4.5-VL (and ERNIE's config order
 * [h, w, t] read as [t, h, w]). */
static const size_t known_sections[][3] = {{16, 24, 24}, {24, 20, 20}, {11, 11, 10},
                                           {8, 12, 12},  {20, 22, 22}, {22, 22, 20}};

/* The next finding of r, with its code, or NULL when r is full; the caller
 * writes its message. */
static pe_dx_finding *next_finding(pe_dx_result *r, pe_dx_code code)
{
    if (r->n_findings >= PE_DX_MAX_FINDINGS)
        return NULL;
    pe_dx_finding *f = &r->findings[r->n_findings++];
    f->code = code;
    return f;
}

/* The subject against v; explains when every value is within tolerance,
 * at exact angles or (close to it) with float32 angle arithmetic, which
 * then becomes v's precision. */
static pe_status judge(const pe_dx_subject *s, pe_dx_variant *v, pe_dx_tolerance tol,
                       pe_dx_errors *e, bool *explains)
{
    bool full;
    pe_status st = pe_dx_evaluate_fast(s, v, tol, e, &full);

    *explains = st == PE_OK && full && dx_within(e);
    if (st != PE_OK || *explains || v->precision != PE_DX_EXACT || !(e->max_abs < 0.05))
        return st;
    pe_dx_variant f32 = *v;
    pe_dx_errors e32;
    f32.precision = PE_DX_FLOAT32;
    st = pe_dx_evaluate_fast(s, &f32, tol, &e32, &full);
    if (st == PE_OK && full && dx_within(&e32)) {
        *v = f32;
        *e = e32;
        *explains = true;
    }
    return st;
}

/* The search's state: the closest variant so far, and whether it explains. */
typedef struct nd_search {
    const pe_dx_subject *s;
    pe_dx_tolerance tol;
    pe_dx_variant best;
    pe_dx_errors best_e;
    bool have, explains;
} nd_search;

/* Try v: kept when it explains or is the closest yet. Returns whether the
 * search is done (v explains, or the budget ran out). */
static pe_status try_variant(nd_search *k, pe_dx_variant v, bool *done)
{
    pe_dx_errors e;
    bool explains;
    pe_status st = judge(k->s, &v, k->tol, &e, &explains);

    *done = false;
    if (st != PE_OK)
        return st;
    if (explains || !k->have || e.max_abs < k->best_e.max_abs) {
        k->best = v;
        k->best_e = e;
        k->have = true;
        k->explains = explains;
    }
    *done = explains || pe_dx_out_of_time(k->s);
    return PE_OK;
}

/* Whether two multimodal settings turn every slot by the same component. */
static bool same_assignment(const pe_mrope *a, const pe_mrope *b, size_t half)
{
    for (size_t j = 0; j < half; j++)
        if (pe_mrope_axis(a, j) != pe_mrope_axis(b, j))
            return false;
    return true;
}

/* The sections tried: the claim's in each order, then the known ones. */
static size_t candidate_sections(const size_t claim[3], size_t out[12][3])
{
    static const unsigned perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                         {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    size_t n = 0;

    for (size_t p = 0; p < 6; p++, n++)
        for (size_t c = 0; c < 3; c++)
            out[n][c] = claim[perms[p][c]];
    for (size_t k = 0; k < sizeof known_sections / sizeof *known_sections; k++, n++)
        memcpy(out[n], known_sections[k], sizeof out[n]);
    return n;
}

/* Another style or section (mrope_mismatch): the same section in another
 * style first, then each other section in every style. */
static pe_status search_assignment(nd_search *k, const pe_dx_variant *claim, bool *done)
{
    size_t half = claim->rope.rotary_dim / 2, sections[12][3];
    size_t n = candidate_sections(claim->mrope.section, sections);
    pe_mrope tried[3 * 12];
    size_t n_tried = 0;

    for (size_t i = 0; i < n && !*done; i++)
        for (int style = PE_MROPE_CHUNKED; style <= PE_MROPE_ERNIE && !*done; style++) {
            pe_mrope m = {.style = (pe_mrope_style)style};
            memcpy(m.section, sections[i], sizeof m.section);
            bool seen = pe_mrope_check(&m, half) != PE_OK ||
                        same_assignment(&m, &claim->mrope, half);
            for (size_t t = 0; t < n_tried && !seen; t++)
                seen = same_assignment(&m, &tried[t], half);
            if (seen)
                continue;
            tried[n_tried++] = m;
            pe_dx_variant v = *claim;
            v.mrope = m;
            pe_status st = try_variant(k, v, done);
            if (st != PE_OK)
                return st;
        }
    return PE_OK;
}

/* Every token turned as text: 1-D rope at positions the 1-D search reads
 * off the phases (the claim's t components first). On success *r1 holds
 * that search's answer (the caller frees it). */
static pe_status search_text(nd_search *k, const pe_dx_variant *claim, pe_dx_result *r1, bool *done)
{
    pe_dx_variant flat = *claim;
    flat.mrope.style = PE_MROPE_NONE;
    flat.positions3 = NULL;
    pe_status st = try_variant(k, flat, done);
    if (st != PE_OK || *done)
        return st;
    st = pe_diagnose(k->s, &flat, k->tol, r1);
    if (st != PE_OK || r1->verdict == PE_DX_UNEXPLAINED)
        return st;
    k->best = r1->best;
    k->best_e = r1->best_errors;
    k->explains = k->have = *done = true;
    return PE_OK;
}

/* The positions of component c read off the phases of the slots the
 * claim assigns to it (ph, w: the subject read under the claim) into
 * found[rows][3] at c; *coherent as pe_dx_phase_positions says. A
 * component without slots keeps the claim's. */
static pe_status read_component(const pe_dx_subject *s, const pe_dx_variant *claim,
                                const dx_phasors *ph, const double *w, unsigned c, int64_t *found,
                                int64_t *col, bool *coherent)
{
    size_t half = ph->half, heads = ph->pairs / half, n = 0;
    size_t *slot = malloc(half * sizeof *slot); /* owned: the slots of c */
    double *wc = malloc(half * sizeof *wc);     /* owned: their frequencies */
    dx_phasors sub = {.rows = ph->rows};
    pe_status st = PE_ENOMEM;

    *coherent = true;
    if (!slot || !wc)
        goto out;
    for (size_t j = 0; j < half; j++)
        if (pe_mrope_axis(&claim->mrope, j) == c) {
            wc[n] = w[j];
            slot[n++] = j;
        }
    st = PE_OK;
    if (n == 0) {
        for (size_t t = 0; t < s->rows; t++)
            found[3 * t + c] = claim->positions3[3 * t + c];
        goto out;
    }
    sub.half = n;
    sub.pairs = heads * n;
    sub.z = malloc(ph->rows * sub.pairs * 2 * sizeof *sub.z); /* owned */
    if (!sub.z) {
        st = PE_ENOMEM;
        goto out;
    }
    for (size_t t = 0; t < ph->rows; t++)
        for (size_t h = 0; h < heads; h++)
            for (size_t m = 0; m < n; m++)
                memcpy(sub.z + 2 * ((t * heads + h) * n + m),
                       ph->z + 2 * ((t * heads + h) * half + slot[m]), 2 * sizeof *sub.z);
    st = pe_dx_phase_positions(&sub, wc, col, coherent);
    for (size_t t = 0; st == PE_OK && t < s->rows; t++)
        found[3 * t + c] = col[t] < 0 ? 0 : col[t];
out:
    free(sub.z);
    free(slot);
    free(wc);
    return st;
}

/* Triples of another derivation (positions_mismatch): each component read
 * off its own slots' phases; out->positions holds them ([rows][3]). */
static pe_status search_triples(nd_search *k, const pe_dx_variant *claim, pe_dx_result *out,
                                bool *done)
{
    dx_phasors ph = {0};
    size_t rows = k->s->rows;
    double *w = malloc(claim->rope.rotary_dim / 2 * sizeof *w); /* owned */
    int64_t *col = malloc(rows * sizeof *col);                  /* owned: one component */
    int64_t *found = malloc(3 * rows * sizeof *found);          /* owned until out's */
    bool coherent = true;
    pe_status st = PE_ENOMEM;

    if (!w || !col || !found)
        goto out;
    st = pe_dx_rope_phasors(k->s, claim, &ph, w);
    for (unsigned c = 0; st == PE_OK && coherent && c < 3; c++)
        st = read_component(k->s, claim, &ph, w, c, found, col, &coherent);
    if (st != PE_OK || !coherent || memcmp(found, claim->positions3, 3 * rows * sizeof *found) == 0)
        goto out;
    pe_dx_variant v = *claim;
    v.positions3 = found;
    st = try_variant(k, v, done);
    if (st == PE_OK && k->best.positions3 == found) { /* kept: out owns the triples */
        free(out->positions);
        out->positions = found;
        found = NULL;
    }
out:
    free(ph.z);
    free(w);
    free(col);
    free(found);
    return st;
}

/* best.positions as a list of its own (out->positions) with the offset in. */
static pe_status own_positions(const pe_dx_subject *s, pe_dx_result *out)
{
    int64_t *p = malloc(s->rows * sizeof *p); /* owned by out */
    if (!p)
        return PE_ENOMEM;
    for (size_t t = 0; t < s->rows; t++)
        p[t] = pe_dx_position(s, &out->best, t);
    free(out->positions);
    out->positions = p;
    out->n_positions = s->rows;
    out->best.positions = p;
    out->best.offset = 0;
    return PE_OK;
}

/* The first token whose triples differ between a and b (rows if none). */
static size_t first_differing(const int64_t *a, const int64_t *b, size_t rows)
{
    size_t t = 0;
    while (t < rows && memcmp(a + 3 * t, b + 3 * t, 3 * sizeof *a) == 0)
        t++;
    return t;
}

/* The first token with a vision triple (t, h, w not all equal). */
static size_t first_vision(const int64_t *p3, size_t rows)
{
    size_t t = 0;
    while (t < rows && p3[3 * t] == p3[3 * t + 1] && p3[3 * t] == p3[3 * t + 2])
        t++;
    return t;
}

static void mrope_findings(const pe_dx_subject *s, const pe_dx_variant *c, const pe_dx_result *r1,
                           pe_dx_result *out)
{
    const pe_dx_variant *b = &out->best;
    const size_t *cs = c->mrope.section, *bs = b->mrope.section;
    pe_dx_finding *f;

    if (out->other_rule || out->triples_found) {
        size_t t = first_differing(c->positions3, b->positions3, s->rows);
        const int64_t *cp = c->positions3 + 3 * (t < s->rows ? t : 0);
        const int64_t *bp = b->positions3 + 3 * (t < s->rows ? t : 0);
        size_t differ = 0;
        for (size_t i = 0; i < s->rows; i++)
            differ += memcmp(c->positions3 + 3 * i, b->positions3 + 3 * i, 3 * sizeof *cp) != 0;
        if ((f = next_finding(out, PE_DX_POSITIONS_MISMATCH)))
            snprintf(f->message, sizeof f->message,
                     "%s: token %zu is at [%lld, %lld, %lld], not the claimed [%lld, %lld, %lld] "
                     "(%zu of %zu tokens differ); %s",
                     out->other_rule ? "the positions follow the layout's other mm_rule"
                                     : "the positions read off each component's frequencies "
                                       "differ from the claimed ones",
                     t, (long long)bp[0], (long long)bp[1], (long long)bp[2], (long long)cp[0],
                     (long long)cp[1], (long long)cp[2], differ, s->rows,
                     out->other_rule ? "send the other mm_rule, or the triples in evidence"
                                     : "send the triples in evidence, or fix how the port "
                                       "derives them");
    } else if (b->mrope.style == PE_MROPE_NONE) {
        size_t t = first_vision(c->positions3, s->rows);
        const int64_t *cp = c->positions3 + 3 * (t < s->rows ? t : 0);
        if ((f = next_finding(out, PE_DX_MROPE_MISMATCH)))
            snprintf(f->message, sizeof f->message,
                     "every token is turned as text, by one position: token %zu, claimed at "
                     "[%lld, %lld, %lld], is turned at %lld in every frequency; give image and "
                     "video tokens their [t, h, w] and turn each slot by its component",
                     t, (long long)cp[0], (long long)cp[1], (long long)cp[2],
                     (long long)pe_dx_position(s, b, t < s->rows ? t : 0));
        for (size_t i = 0; r1 && i < r1->n_findings; i++)
            if (r1->findings[i].code != PE_DX_POSITION_OFFSET &&
                r1->findings[i].code != PE_DX_POSITIONS_MISMATCH &&
                out->n_findings < PE_DX_MAX_FINDINGS)
                out->findings[out->n_findings++] = r1->findings[i];
    } else {
        if ((f = next_finding(out, PE_DX_MROPE_MISMATCH)))
            snprintf(f->message, sizeof f->message,
                     "the frequencies are turned by the %s assignment of section [%zu, %zu, %zu], "
                     "not the claimed %s [%zu, %zu, %zu]: set params.mrope to that style and "
                     "section, or fix the port's split of the slots",
                     style_names[b->mrope.style], bs[0], bs[1], bs[2], style_names[c->mrope.style],
                     cs[0], cs[1], cs[2]);
    }
}

static pe_status search_mrope(nd_search *k, const pe_dx_variant *claim, const int64_t *other3,
                              pe_dx_result *out)
{
    pe_dx_result r1 = {0};
    bool done = false;
    pe_status st = PE_OK;

    if (other3 && first_differing(other3, claim->positions3, k->s->rows) < k->s->rows) {
        pe_dx_variant v = *claim;
        v.positions3 = other3;
        st = try_variant(k, v, &done);
        out->other_rule = done && k->explains;
    }
    if (st == PE_OK && !done)
        st = search_assignment(k, claim, &done);
    if (st == PE_OK && !done)
        st = search_text(k, claim, &r1, &done);
    if (st == PE_OK && !done && k->s->kind == PE_DX_SUBJ_ROPE_ENCODED)
        st = search_triples(k, claim, out, &done);
    if (st == PE_OK) {
        out->best = k->best;
        out->other_rule = out->other_rule && k->best.positions3 == other3;
        out->triples_found = out->positions && k->best.positions3 == out->positions;
        if (k->best.mrope.style == PE_MROPE_NONE)
            st = own_positions(k->s, out);
    }
    if (st == PE_OK)
        mrope_findings(k->s, claim, k->explains && r1.verdict != PE_DX_UNEXPLAINED ? &r1 : NULL,
                       out);
    pe_dx_result_free(&r1);
    return st;
}

/* Another rope2d variant, base or both: rope2d_variant, base_mismatch. */
static pe_status search_rope2d(nd_search *k, const pe_dx_variant *claim, pe_dx_result *out)
{
    const pe_rope2d *c = &claim->rope2d;
    double bases[3] = {c->base, 10000.0, 100.0};
    bool done = false;

    /* pass 0: another variant; 1: another base; 2: both */
    for (int pass = 0; pass < 3 && !done; pass++)
        for (int var = PE_ROPE2D_QWEN_VIT; var <= PE_ROPE2D_GEMMA4 && !done; var++)
            for (size_t i = 0; i < 3 && !done; i++) {
                bool other_var = var != (int)c->variant, other_base = bases[i] != c->base;
                bool repeated = (i >= 1 && bases[i] == bases[0]) ||
                                (i == 2 && bases[2] == bases[1]);
                if (other_var + 2 * other_base != pass + 1 || repeated)
                    continue;
                pe_dx_variant v = *claim;
                v.rope2d.variant = (pe_rope2d_variant)var;
                v.rope2d.base = bases[i];
                pe_status st = try_variant(k, v, &done);
                if (st != PE_OK)
                    return st;
            }
    out->best = k->best;
    const pe_rope2d *b = &out->best.rope2d;
    pe_dx_finding *f;
    if (b->variant != c->variant)
        if ((f = next_finding(out, PE_DX_ROPE2D_VARIANT)))
            snprintf(f->message, sizeof f->message,
                     "the subject is 2-D rope's %s variant, not the claimed %s: set params.variant "
                     "to \"%s\"",
                     variant_names[b->variant], variant_names[c->variant],
                     variant_names[b->variant]);
    if (b->base != c->base)
        if ((f = next_finding(out, PE_DX_BASE_MISMATCH)))
            snprintf(f->message, sizeof f->message,
                     "base %g, not the claimed %g: set params.base to %g", b->base, c->base,
                     b->base);
    return PE_OK;
}

/* The verdict once the search is done: explained, or a partial
 * explanation kept only when it cuts the claim's error tenfold. */
static void conclude(const nd_search *k, const pe_dx_variant *claim, pe_dx_result *out)
{
    pe_dx_finding *f;
    out->best_errors = k->best_e;
    out->explained = k->best_e;
    if (k->explains) {
        out->verdict = PE_DX_EXPLAINED;
    } else {
        out->verdict = PE_DX_UNEXPLAINED;
        if (!pe_dx_significant(&out->claimed, &k->best_e)) {
            out->n_findings = 0;
            out->other_rule = out->triples_found = false;
            out->best = *claim;
            out->best_errors = out->explained = out->claimed;
            free(out->positions);
            out->positions = NULL;
        }
    }
    bool said = false; /* the 1-D search's findings may hold it already */
    for (size_t i = 0; i < out->n_findings; i++)
        said = said || out->findings[i].code == PE_DX_LOW_PRECISION;
    if (out->best.precision == PE_DX_FLOAT32 && !said)
        if ((f = next_finding(out, PE_DX_LOW_PRECISION)))
            snprintf(f->message, sizeof f->message,
                     "the angles differ as float32 arithmetic makes them (information)");
}

pe_status pe_diagnose_nd(const pe_dx_subject *subject, const pe_dx_variant *claim,
                         const int64_t *other_rule3, pe_dx_tolerance tol, pe_dx_result *out)
{
    pe_dx_subject s = *subject;
    bool rope2d = claim->rope2d.head_dim != 0;
    pe_dx_finding *f;

    memset(out, 0, sizeof *out);
    out->best = *claim;
    if (rope2d ? !claim->coords : claim->mrope.style == PE_MROPE_NONE || !claim->positions3)
        return PE_EINVAL;
    s.deadline_ = pe_dx_cpu_seconds() + (s.budget_s > 0 ? s.budget_s : PE_DX_DEFAULT_BUDGET_S);
    nd_search k = {.s = &s, .tol = tol};
    pe_dx_variant c = *claim;
    bool explains;
    pe_status st = judge(&s, &c, tol, &out->claimed, &explains);
    if (st != PE_OK)
        return st;
    if (explains) { /* exact, or float32 arithmetic: match */
        out->verdict = PE_DX_MATCH;
        out->best = c;
        out->best_errors = out->explained = out->claimed;
        if (c.precision == PE_DX_FLOAT32)
            if ((f = next_finding(out, PE_DX_LOW_PRECISION)))
                snprintf(f->message, sizeof f->message,
                         "the angles differ as float32 arithmetic makes them (information)");
        return PE_OK;
    }
    st = pe_dx_evaluate(&s, claim, tol, &out->claimed); /* the whole, not a probe */
    if (st != PE_OK)
        return st;
    st = rope2d ? search_rope2d(&k, claim, out) : search_mrope(&k, claim, other_rule3, out);
    if (st != PE_OK)
        return st;
    out->truncated = pe_dx_out_of_time(&s);
    conclude(&k, claim, out);
    return PE_OK;
}

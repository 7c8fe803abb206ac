/*
 * diagnose_dynamic.c - dynamic NTK scaling as the other reading of a base
 * found where none was claimed.
 *
 * Past its original context M, dynamic NTK scaling (factor f) computes at
 * sequence length L with base * (f L / M - (f - 1))^(d/(d-2)): one subject
 * of one length cannot tell that from a plain larger base. When the base
 * found is not a round number and a round factor and original context turn
 * the claimed base into it at the subject's length, and that scaling
 * reproduces the subject, both readings are named.
 */
#include <math.h>
#include <string.h>

#include "diagnose_common.h"

/* Whether v lies within rel of a number of `digits` significant digits. */
static bool round_to(double v, int digits, double rel)
{
    return fabs(v - pe_dx_round_sig(v, digits)) <= rel * fabs(v);
}

/* A round (factor, original context) under which dynamic scaling at
 * length seq multiplies the base's d/(d-2) root by g; false when none. */
static bool round_pair(double g, double seq, double *factor, double *orig)
{
    /* f (L/M - 1) = g - 1: original contexts of powers of two under L */
    for (double m = 16; m < seq; m *= 2) {
        double f = (g - 1.0) / (seq / m - 1.0);
        if (f > 1.0 && round_to(f, 2, 1e-3)) {
            *factor = pe_dx_round_sig(f, 2);
            *orig = m;
            return true;
        }
    }
    /* whole factors, and the whole original context they need */
    for (double f = 2; f <= 16; f++) {
        double m = f * seq / (g - 1.0 + f);
        if (m >= 1 && m < seq && fabs(m - round(m)) <= 1e-3 * m) {
            *factor = f;
            *orig = round(m);
            return true;
        }
    }
    return false;
}

pe_status pe_dx_dynamic_alternative(const pe_dx_subject *s, const pe_dx_variant *c,
                                    const pe_dx_variant *b, pe_dx_tolerance tol,
                                    pe_rope_scaling *out)
{
    memset(out, 0, sizeof *out);
    size_t rd = b->rope.rotary_dim;
    double cb = c->rope.base, found = b->rope.base;
    bool base_only = (s->kind == PE_DX_SUBJ_ROPE_ENCODED || s->kind == PE_DX_SUBJ_ROPE_CACHE) &&
                     c->rope.scaling.type == PE_ROPE_SCALING_NONE &&
                     b->rope.scaling.type == PE_ROPE_SCALING_NONE &&
                     b->formula == PE_DX_FORMULA_STANDARD && b->frequency_dim == rd && rd > 2 &&
                     found > cb * (1 + 1e-6);
    if (!base_only || round_to(found, 3, 1e-4))
        return PE_OK;
    double seq = pe_dx_seq_len(s, b->positions, b->offset), factor, orig;
    double g = pow(found / cb, (double)(rd - 2) / (double)rd);
    if (!round_pair(g, seq, &factor, &orig))
        return PE_OK;

    pe_dx_variant v = *b;
    v.rope.base = cb;
    v.rope.scaling.type = PE_ROPE_SCALING_DYNAMIC;
    v.rope.scaling.factor = factor;
    v.rope.scaling.original_max_position_embeddings = orig;
    pe_dx_errors e;
    pe_status st = pe_dx_evaluate(s, &v, tol, &e);
    if (st == PE_OK && dx_within(&e))
        *out = v.rope.scaling;
    return st == PE_EINVAL ? PE_OK : st;
}

/*
 * diagnose_positions.c - positions_mismatch (contract 1.2 "/diagnose,
 * version 2", Positions, not only offsets): each token's position read
 * from its phase, and the pattern of the positions found.
 *
 * Under a structure that is right but for the positions (the claim's, or
 * the one the search found), every row is a rotation by w_i * p_t: the
 * lowest frequency places p_t within one of its periods, each higher one
 * refines it (diagnose_angles.c). Positions found that differ from the
 * claimed ones by a constant are an offset; any other difference is
 * positions_mismatch. Either must reproduce the subject to count: the
 * phases of a random subject read as some positions too.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

const char *pe_dx_pattern_name(pe_dx_pattern pattern)
{
    switch (pattern) {
    case PE_DX_PATTERN_OTHER:
        return "other";
    case PE_DX_PATTERN_REVERSED:
        return "reversed";
    case PE_DX_PATTERN_CONSTANT:
        return "constant";
    case PE_DX_PATTERN_RESTART:
        return "restart";
    case PE_DX_PATTERN_FROM_MASK:
        return "from_mask";
    case PE_DX_PATTERN_OFFSET:
        return "offset";
    }
    return "?";
}

/* Real tokens (those at the count of real tokens before them) at 0, 1, 2,
 * ...; every other token (a pad) at one value, 0 or 1 (Hugging Face fills
 * 1); at least one of each. */
static bool from_mask(const int64_t *p, size_t n)
{
    int64_t real = 0, pad_value = -1;
    size_t pads = 0;
    for (size_t t = 0; t < n; t++) {
        if (p[t] == real) {
            real++;
            continue;
        }
        if ((p[t] != 0 && p[t] != 1) || (pads > 0 && p[t] != pad_value))
            return false;
        pad_value = p[t];
        pads++;
    }
    return pads > 0 && real > 0;
}

pe_dx_pattern pe_dx_positions_pattern(const int64_t *p, size_t n)
{
    bool constant = n > 1, reversed = n > 1, restart = true;
    size_t drops = 0;
    for (size_t t = 1; t < n; t++) {
        constant = constant && p[t] == p[0];
        reversed = reversed && p[t] == p[t - 1] - 1;
        if (p[t] != p[t - 1] + 1) {
            restart = restart && p[t] < p[t - 1] + 1;
            drops++;
        }
    }
    if (constant)
        return PE_DX_PATTERN_CONSTANT;
    if (reversed)
        return PE_DX_PATTERN_REVERSED;
    if (from_mask(p, n))
        return PE_DX_PATTERN_FROM_MASK;
    if (restart && drops > 0)
        return PE_DX_PATTERN_RESTART;
    return PE_DX_PATTERN_OTHER;
}

pe_dx_pattern pe_dx_row_pattern(const int64_t *p, const int64_t *claimed, size_t n)
{
    bool shifted = n > 0 && p[0] != claimed[0];
    for (size_t t = 1; t < n && shifted; t++)
        shifted = p[t] - claimed[t] == p[0] - claimed[0];
    return shifted ? PE_DX_PATTERN_OFFSET : pe_dx_positions_pattern(p, n);
}

/* The pattern of the positions found q (against the claimed p) over the
 * subject's batch rows that differ: shared, or *by_row with OTHER. */
static pe_dx_pattern batch_pattern(const pe_dx_subject *s, const int64_t *q, bool *by_row)
{
    size_t batch = s->batch > 1 && s->rows % s->batch == 0 ? s->batch : 1;
    size_t n = s->rows / batch;
    bool seen = false;
    pe_dx_pattern shared = PE_DX_PATTERN_OTHER;

    *by_row = false;
    if (batch == 1)
        return pe_dx_positions_pattern(q, n);
    for (size_t b = 0; b < batch; b++) {
        const int64_t *qb = q + b * n, *pb = s->positions + b * n;
        if (memcmp(qb, pb, n * sizeof *qb) == 0)
            continue; /* this row is as claimed */
        pe_dx_pattern at = pe_dx_row_pattern(qb, pb, n);
        *by_row = *by_row || (seen && at != shared);
        shared = at;
        seen = true;
    }
    return *by_row ? PE_DX_PATTERN_OTHER : shared;
}

/* The phasors and signed frequencies of s read as v. */
static pe_status read_phases(const pe_dx_subject *s, const pe_dx_variant *v, dx_phasors *ph,
                             double *w)
{
    if (s->kind == PE_DX_SUBJ_TABLE || s->kind == PE_DX_SUBJ_ABS_ENCODED)
        return pe_dx_absolute_phasors(s, v, ph, w);
    return pe_dx_rope_phasors(s, v, ph, w);
}

/* Positions found q against the claimed (the subject's) p: *shift and
 * true when q = p + shift for every row. */
static bool constant_shift(const int64_t *q, const int64_t *p, size_t n, int64_t *shift)
{
    *shift = q[0] - p[0];
    for (size_t t = 1; t < n; t++)
        if (q[t] - p[t] != *shift)
            return false;
    return true;
}

/* q = a*p + b with an integer a other than 0, 1 and -1: every frequency
 * scaled alike - a linear RoPE scaling (or a base), not positions. */
static bool scaled_positions(const int64_t *q, const int64_t *p, size_t n)
{
    size_t t1 = 1;
    while (t1 < n && p[t1] == p[0])
        t1++;
    if (t1 >= n || (q[t1] - q[0]) % (p[t1] - p[0]) != 0)
        return false;
    int64_t a = (q[t1] - q[0]) / (p[t1] - p[0]);
    if (a == 0 || a == 1 || a == -1)
        return false;
    for (size_t t = 0; t < n; t++)
        if (q[t] - q[0] != a * (p[t] - p[0]))
            return false;
    return true;
}

pe_status pe_dx_try_positions(const pe_dx_subject *s, const pe_dx_variant *base,
                              pe_dx_tolerance tol, pe_dx_result *out, pe_dx_variant *v,
                              pe_dx_errors *e, bool *explains)
{
    bool rope = s->kind == PE_DX_SUBJ_ROPE_CACHE || s->kind == PE_DX_SUBJ_ROPE_ENCODED;
    size_t half = rope ? base->rope.rotary_dim / 2 : s->cols / 2;
    dx_phasors ph = {0};
    pe_status st = PE_ENOMEM;

    *explains = false;
    if ((!rope && s->kind != PE_DX_SUBJ_TABLE && s->kind != PE_DX_SUBJ_ABS_ENCODED) ||
        base->transposed || half == 0)
        return PE_OK;
    double *w = malloc(half * sizeof *w); /* owned */
    if (!out->positions)
        out->positions = malloc(s->rows * sizeof *out->positions); /* out owns it */
    if (!w || !out->positions)
        goto done;
    pe_dx_variant t = *base;
    t.positions = NULL;
    t.offset = 0;
    st = read_phases(s, &t, &ph, w);
    bool coherent = false;
    if (st == PE_OK)
        st = pe_dx_phase_positions(&ph, w, out->positions, &coherent);
    if (st != PE_OK || !coherent)
        goto done;
    for (size_t r = 0; r < s->rows; r++) {
        if (out->positions[r] == DX_NO_POSITION) /* a zero row: the claim's */
            out->positions[r] = s->positions[r] + base->offset;
        if (out->positions[r] < 0 || out->positions[r] > ((int64_t)1 << 40))
            goto done; /* no negative position in best */
    }
    if (scaled_positions(out->positions, s->positions, s->rows))
        goto done;
    int64_t shift;
    if (constant_shift(out->positions, s->positions, s->rows, &shift)) {
        if (shift == base->offset)
            goto done; /* the positions read are base's own */
        t.offset = shift;
    } else {
        t.positions = out->positions;
    }
    st = pe_dx_judge(s, &t, tol, e, explains);
    if (st == PE_OK && *explains) {
        *v = t;
        out->n_positions = s->rows;
        out->positions_pattern = batch_pattern(s, out->positions, &out->patterns_by_row);
    }
done:
    free(ph.z);
    free(w);
    return st;
}

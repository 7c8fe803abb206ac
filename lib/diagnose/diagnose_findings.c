/*
 * diagnose_findings.c - the findings: every difference between the claim
 * and the best variant, as a contract code with a message that says what
 * differs, in numbers, and what to change.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

typedef struct sink {
    pe_dx_finding *out;
    size_t n;
} sink;

__attribute__((format(printf, 3, 4))) static void add(sink *k, pe_dx_code code, const char *fmt,
                                                      ...)
{
    if (k->n >= PE_DX_MAX_FINDINGS)
        return;
    pe_dx_finding *f = &k->out[k->n++];
    f->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
}

static bool differs(double a, double b)
{
    return fabs(a - b) > 1e-12 * fmax(fabs(a), fabs(b));
}

static const char *scaling_name(pe_rope_scaling_type t)
{
    switch (t) {
    case PE_ROPE_SCALING_NONE:
        return "none";
    case PE_ROPE_SCALING_LINEAR:
        return "linear";
    case PE_ROPE_SCALING_DYNAMIC:
        return "dynamic";
    case PE_ROPE_SCALING_YARN:
        return "yarn";
    case PE_ROPE_SCALING_LLAMA3:
        return "llama3";
    case PE_ROPE_SCALING_LONGROPE:
        return "longrope";
    }
    return "?";
}

/* The scalings differ in type or in a parameter the type reads. */
static bool scaling_differs(const pe_rope_scaling *a, const pe_rope_scaling *b)
{
    if (a->type != b->type)
        return true;
    switch (a->type) {
    case PE_ROPE_SCALING_NONE:
        return false;
    case PE_ROPE_SCALING_LINEAR:
        return differs(a->factor, b->factor);
    case PE_ROPE_SCALING_LLAMA3:
        if (differs(a->low_freq_factor, b->low_freq_factor) ||
            differs(a->high_freq_factor, b->high_freq_factor))
            return true;
        /* fall through */
    case PE_ROPE_SCALING_DYNAMIC:
    case PE_ROPE_SCALING_LONGROPE:
        if (a->short_factor != b->short_factor || a->long_factor != b->long_factor)
            return true; /* the claim's lists, picked the other way */
        /* fall through */
    case PE_ROPE_SCALING_YARN:
        if (a->type == PE_ROPE_SCALING_YARN && a->truncate != b->truncate)
            return true;
        return differs(a->factor, b->factor) ||
               differs(a->original_max_position_embeddings, b->original_max_position_embeddings);
    }
    return false;
}

static void describe_scaling(const pe_rope_scaling *sc, char *buf, size_t n)
{
    if (sc->type == PE_ROPE_SCALING_NONE || sc->type == PE_ROPE_SCALING_LINEAR)
        snprintf(buf, n, "%s%s%.6g", scaling_name(sc->type),
                 sc->type == PE_ROPE_SCALING_LINEAR ? " factor " : "",
                 sc->type == PE_ROPE_SCALING_LINEAR ? sc->factor : 0.0);
    else if (sc->type == PE_ROPE_SCALING_LLAMA3)
        snprintf(buf, n,
                 "llama3 factor %.6g low_freq_factor %.6g high_freq_factor %.6g"
                 " original_max_position_embeddings %.6g",
                 sc->factor, sc->low_freq_factor, sc->high_freq_factor,
                 sc->original_max_position_embeddings);
    else
        snprintf(buf, n, "%s factor %.6g original_max_position_embeddings %.6g",
                 scaling_name(sc->type), sc->factor, sc->original_max_position_embeddings);
    if (sc->type == PE_ROPE_SCALING_NONE)
        snprintf(buf, n, "none");
}

/* How the rotation is laid out: head size, pairing, sin/cos order,
 * direction, position offset. */
static void rope_layout_findings(const pe_dx_subject *s, const pe_dx_variant *c,
                                 const pe_dx_variant *b, const pe_dx_result *r, const char *with,
                                 sink *k)
{
    double from = r->claimed.max_abs, to = pe_dx_error_after(r);
    size_t rd = b->rope.rotary_dim;

    if (s->kind == PE_DX_SUBJ_ROPE_ENCODED && b->rope.head_dim != c->rope.head_dim &&
        c->head_dim_free)
        add(k, PE_DX_HEAD_DIM_MISMATCH,
            "the rotation runs over heads of %zu channels (%zu heads); no head_dim was given,"
            " so the claim rotated the whole vector of %zu: send head_dim %zu%s (the maximum"
            " error drops from %.3g to %.3g)",
            b->rope.head_dim, s->cols / b->rope.head_dim, s->cols, b->rope.head_dim, with, from,
            to);
    else if (s->kind == PE_DX_SUBJ_ROPE_ENCODED && b->rope.head_dim != c->rope.head_dim)
        add(k, PE_DX_HEAD_DIM_MISMATCH,
            "the rotation runs over heads of %zu channels, not the claimed %zu;"
            " with head_dim %zu%s the maximum error drops from %.3g to %.3g",
            b->rope.head_dim, c->rope.head_dim, b->rope.head_dim, with, from, to);
    if (b->rope.layout != c->rope.layout) {
        bool half = b->rope.layout == PE_ROPE_HALF;
        add(k, PE_DX_LAYOUT_SWAPPED,
            "dimensions 0-%zu are paired as %s - the %s layout - but the claim"
            " is %s; with layout %s%s the maximum error drops from %.3g to %.3g",
            rd - 1, half ? "(i, i+rotary_dim/2)" : "(2i, 2i+1)", half ? "half" : "interleaved",
            half ? "interleaved" : "half", half ? "half" : "interleaved", with, from, to);
    }
    if (b->sin_cos_swapped)
        add(k, PE_DX_SIN_COS_SWAPPED,
            "the cos array holds sines and the sin array cosines; swap them");
    if (b->reversed)
        add(k, PE_DX_ROTATION_REVERSED,
            "pairs rotate by -theta (the sign of sin is flipped): measured"
            " frequencies are negative");
    if (b->offset != c->offset)
        add(k, PE_DX_POSITION_OFFSET,
            "positions are shifted by %+lld (position p was computed at p%+lld);"
            " with offset %+lld%s the maximum error drops from %.3g to %.3g",
            (long long)(b->offset - c->offset), (long long)(b->offset - c->offset),
            (long long)b->offset, with, from, to);
}

/* The claim's yarn with its correction range rounded the other way:
 * Hugging Face's default floors and ceils the range's bounds (truncate
 * true), gpt-oss's configs keep them as computed (truncate false). */
static bool yarn_truncate_finding(const pe_rope_scaling *bs, const pe_rope_scaling *cs,
                                  const char *with, double from, double to, sink *k)
{
    if (bs->type != PE_ROPE_SCALING_YARN || cs->type != PE_ROPE_SCALING_YARN ||
        bs->truncate == cs->truncate || differs(bs->factor, cs->factor) ||
        differs(bs->original_max_position_embeddings, cs->original_max_position_embeddings))
        return false;
    static const char *rounded = "rounded to whole dimensions (truncate true, Hugging Face's"
                                 " default)",
                      *unrounded = "unrounded (truncate false, as gpt-oss's configs have it)";
    add(k, PE_DX_SCALING_MISMATCH,
        "YaRN's correction range is %s, where the claim has it %s; with truncate %s%s the"
        " maximum error drops from %.3g to %.3g",
        bs->truncate ? rounded : unrounded, cs->truncate ? rounded : unrounded,
        bs->truncate ? "true" : "false", with, from, to);
    return true;
}

/* rotary_dim_mismatch: how many channels rotate, and over how many
 * dimensions the exponent runs (frequency_dim) when that differs. */
static void rotary_dim_finding(const pe_dx_variant *c, const pe_dx_variant *b,
                               const pe_dx_result *r, sink *k)
{
    size_t rd = b->rope.rotary_dim, fd = b->frequency_dim;

    if (b->zero_from > 0)
        add(k, PE_DX_ROTARY_DIM_MISMATCH,
            "pairs span %zu channels per head (claimed %zu) and the exponent runs over %zu"
            " dimensions, but only the first %zu pairs turn: %zu inverse frequencies"
            " zero-padded to %zu, rotated as one block (best, base %.9g over %zu with no zero"
            " pairs, leaves %.3g)",
            rd, c->rope.rotary_dim, fd, b->zero_from, b->zero_from, rd / 2, b->rope.base, rd,
            r->best_errors.max_abs);
    else if (fd != rd && fd == c->rope.head_dim)
        add(k, PE_DX_ROTARY_DIM_MISMATCH,
            "%zu channels per head rotate (claimed %zu) with frequencies over %zu dimensions:"
            " the exponent uses head_dim, not rotary_dim (the same as"
            " base^(rotary_dim/head_dim))",
            rd, c->rope.rotary_dim, fd);
    else if (fd != rd)
        add(k, PE_DX_ROTARY_DIM_MISMATCH,
            "%zu channels per head rotate (claimed %zu) with frequencies over %zu dimensions:"
            " the exponent's denominator is %zu, not the %zu channels rotated (the same as"
            " base^(%zu/%zu))",
            rd, c->rope.rotary_dim, fd, fd, rd, rd, fd);
    else
        add(k, PE_DX_ROTARY_DIM_MISMATCH,
            "%zu channels per head rotate (claimed %zu) with frequencies over %zu dimensions", rd,
            c->rope.rotary_dim, fd);
}

/* Which frequencies: rotary width and exponent, base or formula, scaling. */
static void rope_frequency_findings(const pe_dx_variant *c, const pe_dx_variant *b,
                                    const pe_dx_result *r, const char *with, sink *k)
{
    double from = r->claimed.max_abs, to = pe_dx_error_after(r);
    size_t rd = b->rope.rotary_dim;

    /* a full-rotary claim over another head size rotates that head whole:
     * the head size is the finding, not the rotary width */
    bool full_follows = c->rope.rotary_dim == c->rope.head_dim && rd == b->rope.head_dim;
    if ((b->rope.rotary_dim != c->rope.rotary_dim && !full_follows) || b->frequency_dim != rd)
        rotary_dim_finding(c, b, r, k);
    if (differs(b->rope.base, c->rope.base) && b->frequency_dim == rd) {
        if (b->formula != PE_DX_FORMULA_STANDARD)
            add(k, PE_DX_FREQUENCY_FORMULA,
                "the exponent is built with %s: exactly base %.9g instead of"
                " %.9g",
                pe_dx_formula_words(b->formula), b->rope.base, c->rope.base);
        else
            add(k, PE_DX_BASE_MISMATCH,
                "frequencies follow base %.9g, not the claimed %.9g; with base"
                " %.9g%s the maximum error drops from %.3g to %.3g",
                b->rope.base, c->rope.base, b->rope.base, with, from, to);
    }
    const pe_rope_scaling *dyn = &r->dynamic_alternative;
    if (dyn->type == PE_ROPE_SCALING_DYNAMIC)
        add(k, PE_DX_SCALING_MISMATCH,
            "or dynamic NTK scaling: factor %.6g past original_max_position_embeddings %.6g"
            " gives base %.9g from the claimed %.9g at this sequence length and reproduces the"
            " subject as well (one length cannot tell the two apart; a longer subject can)",
            dyn->factor, dyn->original_max_position_embeddings, b->rope.base, c->rope.base);
    const pe_rope_scaling *bs = &b->rope.scaling, *cs = &c->rope.scaling;
    if (bs->type == PE_ROPE_SCALING_LONGROPE && cs->type == PE_ROPE_SCALING_LONGROPE &&
        bs->short_factor == cs->long_factor && bs->long_factor == cs->short_factor) {
        add(k, PE_DX_SCALING_MISMATCH,
            "LongRoPE's factor lists are picked the other way round: the subject uses"
            " long_factor where the sequence fits original_max_position_embeddings %.6g and"
            " short_factor beyond it (Phi-3 picks long_factor only when the sequence length"
            " exceeds it)",
            cs->original_max_position_embeddings);
        return;
    }
    if (yarn_truncate_finding(bs, cs, with, from, to, k))
        return;
    if (scaling_differs(&b->rope.scaling, &c->rope.scaling)) {
        char got[200], want[200];
        describe_scaling(&b->rope.scaling, got, sizeof got);
        describe_scaling(&c->rope.scaling, want, sizeof want);
        add(k, PE_DX_SCALING_MISMATCH,
            "the frequency profile is RoPE scaling %s, not the claimed %s", got, want);
    }
}

/* An attention factor other than the one the found scaling implies. */
static void attention_factor_finding(const pe_dx_subject *s, const pe_dx_variant *b, sink *k)
{
    size_t rd = b->rope.rotary_dim;
    /* the factor the found scaling implies by itself */
    double implied = 1.0;
    pe_dx_variant t = *b;
    t.rope.scaling.has_attention_factor = false;
    double *buf = malloc((rd / 2 ? rd / 2 : 1) * sizeof *buf); /* owned */
    if (!buf || pe_dx_rope_freqs(s, &t, buf, &implied) != PE_OK)
        implied = 1.0;
    free(buf);
    if (differs(b->attention_factor, implied))
        add(k, PE_DX_ATTENTION_FACTOR,
            "every rotated pair is scaled by %.6g, where the scaling implies"
            " %.6g",
            b->attention_factor, implied);
}

static void rope_findings(const pe_dx_subject *s, const pe_dx_variant *c, const pe_dx_variant *b,
                          const pe_dx_result *r, const char *with, sink *k)
{
    rope_layout_findings(s, c, b, r, with, k);
    rope_frequency_findings(c, b, r, with, k);
    attention_factor_finding(s, b, k);
}

static void absolute_findings(const pe_dx_subject *s, const pe_dx_variant *c,
                              const pe_dx_variant *b, const pe_dx_result *r, const char *with,
                              sink *k)
{
    double from = r->claimed.max_abs, to = pe_dx_error_after(r);
    if (b->transposed)
        add(k, PE_DX_TRANSPOSED, "the table is [d][tokens]: transpose it");
    if (b->sin_layout != c->sin_layout) {
        bool split = b->sin_layout == PE_SIN_SPLIT;
        add(k, PE_DX_LAYOUT_SWAPPED,
            "columns hold %s - the %s layout - but the claim is %s; with"
            " layout %s%s the maximum error drops from %.3g to %.3g",
            split ? "all sines, then all cosines" : "sin, cos interleaved",
            split ? "split" : "interleaved", split ? "interleaved" : "split",
            split ? "split" : "interleaved", with, from, to);
    }
    if (b->sin_cos_swapped)
        add(k, PE_DX_SIN_COS_SWAPPED,
            "cosines stand where the sines belong; swap each sin/cos column pair");
    if (b->offset != c->offset)
        add(k, PE_DX_POSITION_OFFSET,
            "positions are shifted by %+lld; with offset %+lld%s the maximum"
            " error drops from %.3g to %.3g",
            (long long)(b->offset - c->offset), (long long)b->offset, with, from, to);
    if (differs(b->base, c->base)) {
        if (b->formula != PE_DX_FORMULA_STANDARD)
            add(k, PE_DX_FREQUENCY_FORMULA,
                "the exponent is built with %s: exactly base %.9g instead of"
                " %.9g",
                pe_dx_formula_words(b->formula), b->base, c->base);
        else
            add(k, PE_DX_BASE_MISMATCH, "frequencies follow base %.9g, not the claimed %.9g",
                b->base, c->base);
    }
    if (s->kind == PE_DX_SUBJ_ABS_ENCODED && s->x && differs(b->embed_scale, c->embed_scale))
        add(k, PE_DX_EMBED_SCALE,
            "the embeddings were multiplied by %.9g, not %.9g, before the"
            " encoding was added",
            b->embed_scale, c->embed_scale);
}

/* The first few positions found from `from` on (at most 6) into list. */
static size_t list_positions(char *list, size_t n, const int64_t *p, size_t rows, size_t from)
{
    size_t used = 0;
    for (size_t t = from; t < rows && t < from + 6 && used < n; t++)
        used += (size_t)snprintf(list + used, n - used, "%s%lld", t > from ? ", " : "",
                                 (long long)p[t]);
    if (rows > from + 6 && used < n)
        used += (size_t)snprintf(list + used, n - used, ", ...");
    return used < n ? used : n;
}

/* positions_mismatch: best's own positions, their pattern, the first few;
 * from the first that differs from the claim's when the first few agree. */
static void positions_finding(const pe_dx_subject *s, const pe_dx_variant *c,
                              const pe_dx_variant *b, const pe_dx_result *r, const char *with,
                              sink *k)
{
    if (!b->positions)
        return;
    const int64_t *claimed = c->positions ? c->positions : s->positions;
    size_t first = 0;
    while (first < s->rows && b->positions[first] == claimed[first])
        first++;
    char list[224];
    if (first == 0 || first >= s->rows) {
        list_positions(list, sizeof list, b->positions, s->rows, 0);
    } else {
        size_t used = (size_t)snprintf(list, sizeof list,
                                       "the first %zu as claimed, then from"
                                       " index %zu: ",
                                       first, first);
        used += list_positions(list + used, sizeof list - used, b->positions, s->rows, first);
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, " where the claim has ");
        if (used < sizeof list)
            list_positions(list + used, sizeof list - used, claimed, s->rows, first);
    }
    static const char *const what[] =
        {[PE_DX_PATTERN_OTHER] = "other than the claimed ones",
         [PE_DX_PATTERN_REVERSED] = "descending (reversed)",
         [PE_DX_PATTERN_CONSTANT] = "all equal (position ids all the same - if all zero, "
                                    "perhaps no positions were applied)",
         [PE_DX_PATTERN_RESTART] = "restarting per segment",
         [PE_DX_PATTERN_FROM_MASK] = "derived from a padding mask the claim did not send",
         [PE_DX_PATTERN_OFFSET] = "each batch row's claimed ones shifted by its own constant"};
    add(k, PE_DX_POSITIONS_MISMATCH,
        "the positions read from the phases are %s: %s; with these positions%s the maximum"
        " error drops from %.3g to %.3g",
        r->patterns_by_row ? "other than the claimed ones, in another way in each batch row"
                           : what[r->positions_pattern],
        list, with, r->claimed.max_abs, pe_dx_error_after(r));
}

/* low_precision: the values rounded (the rotation itself, or a cache or
 * table), or angles in a lower precision. */
static void precision_finding(const pe_dx_subject *s, const pe_dx_variant *b, const pe_dx_result *r,
                              sink *k)
{
    if (b->precision != PE_DX_EXACT && pe_dx_output_in_precision(s, b))
        add(k, PE_DX_LOW_PRECISION,
            "the angles are right; the rotated values are %s numbers, rounded as a rotation "
            "computed or stored in %s is (max error %.3g against exact values, %.3g against"
            " them rounded): rotate in float32 when the values must be exact",
            pe_dx_precision_name(b->precision), pe_dx_precision_name(b->precision),
            r->best_errors.max_abs, r->explained.max_abs);
    else if (b->precision != PE_DX_EXACT && b->stage == PE_DX_STAGE_VALUES)
        add(k, PE_DX_LOW_PRECISION,
            "the angles are right but the values were stored in %s (max error %.3g against"
            " exact values, %.3g against them rounded to %s): keep the cos/sin cache or table"
            " in float32",
            pe_dx_precision_name(b->precision), r->best_errors.max_abs, r->explained.max_abs,
            pe_dx_precision_name(b->precision));
    else if (b->precision != PE_DX_EXACT && b->any_order)
        add(k, PE_DX_LOW_PRECISION,
            "errors grow with position as angles computed in %s do, in another order than"
            " rounding the frequency, position and angle once each (max error %.3g at exact"
            " angles, within that precision's envelope): compute the frequencies, "
            "position*frequency and cos/sin in float32 or better",
            pe_dx_precision_name(b->precision), r->best_errors.max_abs);
    else if (b->precision != PE_DX_EXACT)
        add(k, PE_DX_LOW_PRECISION,
            "errors grow with position as angles computed in %s do (max error"
            " %.3g at exact angles)%s",
            pe_dx_precision_name(b->precision), r->best_errors.max_abs,
            b->precision == PE_DX_FLOAT32 ? "; compute angles in double to remove it"
                                          : "; compute position*frequency and cos/sin in float32 or"
                                            " better");
}

/* One pass; `with` qualifies the error drops when findings combine. */
static void findings_pass(const pe_dx_subject *s, const pe_dx_variant *c, const pe_dx_result *r,
                          const char *with, sink *k)
{
    const pe_dx_variant *b = &r->best;
    switch (s->kind) {
    case PE_DX_SUBJ_TABLE:
    case PE_DX_SUBJ_ABS_ENCODED:
        absolute_findings(s, c, b, r, with, k);
        break;
    case PE_DX_SUBJ_ROPE_CACHE:
    case PE_DX_SUBJ_ROPE_ENCODED:
        rope_findings(s, c, b, r, with, k);
        break;
    case PE_DX_SUBJ_ALIBI_BIAS:
    case PE_DX_SUBJ_ALIBI_SLOPES: {
        if (b->slopes && r->slopes_differ) {
            size_t nd = 0, first = 0;
            for (size_t h = 0; h < s->heads; h++)
                if (r->slopes_differ[h] && nd++ == 0)
                    first = h;
            if (nd)
                add(k, PE_DX_ALIBI_SLOPES,
                    "%zu of %zu heads have other slopes than the paper's for %zu"
                    " heads (first: head %zu, %.9g)",
                    nd, s->heads, s->heads, first, b->slopes[first]);
        }
        if (b->alibi_form != c->alibi_form || b->alibi_sign != c->alibi_sign)
            add(k, PE_DX_ALIBI_FORM, "the bias has the %s form (%s)%s (claimed %s)",
                pe_dx_alibi_form_name(b->alibi_form),
                b->alibi_form == PE_ALIBI_BLOOM ? "slope*p_j"
                : b->alibi_form == PE_ALIBI_MPT ? "slope*(p_j - p_last)"
                                                : "-slope*|p_i-p_j|",
                b->alibi_sign < 0 ? " with its sign flipped" : "",
                pe_dx_alibi_form_name(c->alibi_form));
        break;
    }
    case PE_DX_SUBJ_T5_BIAS:
        if (b->t5_reversed)
            add(k, PE_DX_T5_DIRECTION, "the relative position is query - key, not key - query");
        if (b->t5.num_buckets != c->t5.num_buckets || b->t5.max_distance != c->t5.max_distance ||
            b->t5.bidirectional != c->t5.bidirectional)
            add(k, PE_DX_T5_BUCKETS,
                "buckets follow num_buckets %zu, max_distance %lld, %s (claimed"
                " %zu, %lld, %s)",
                b->t5.num_buckets, (long long)b->t5.max_distance,
                b->t5.bidirectional ? "bidirectional" : "unidirectional", c->t5.num_buckets,
                (long long)c->t5.max_distance,
                c->t5.bidirectional ? "bidirectional" : "unidirectional");
        break;
    }
    if (s->kind != PE_DX_SUBJ_ALIBI_BIAS && s->kind != PE_DX_SUBJ_ALIBI_SLOPES &&
        s->kind != PE_DX_SUBJ_T5_BIAS)
        positions_finding(s, c, b, r, with, k);
    precision_finding(s, b, r, k);
}

void pe_dx_findings(const pe_dx_subject *s, const pe_dx_variant *c, const pe_dx_result *r,
                    pe_dx_finding *out, size_t *n)
{
    sink k = {out, 0};
    findings_pass(s, c, r, "", &k);
    /* the dynamic reading beside base_mismatch is another reading of the
     * same change, not a further one */
    size_t alternatives = r->dynamic_alternative.type == PE_ROPE_SCALING_DYNAMIC;
    if (k.n > 1 + alternatives) { /* the drop is that of every finding together */
        k.n = 0;
        findings_pass(s, c, r, " and the other findings", &k);
    }
    *n = k.n;
}

/*
 * diagnose_common.c - names of the diagnose enums, precision rounding,
 * comparison of a subject with a prediction, and the result's lifetime.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diagnose_common.h"

const char *pe_dx_code_name(pe_dx_code code)
{
    static const char *const names[] = {
#define PE_DX_NAME(e, s) s,
        PE_DX_CODES(PE_DX_NAME)
#undef PE_DX_NAME
    };
    return (size_t)code < PE_DX_CODE_COUNT ? names[code] : "?";
}

const char *pe_dx_verdict_name(pe_dx_verdict verdict)
{
    switch (verdict) {
    case PE_DX_MATCH:
        return "match";
    case PE_DX_EXPLAINED:
        return "explained";
    case PE_DX_UNEXPLAINED:
        return "unexplained";
    }
    return "?";
}

const char *pe_dx_precision_name(pe_dx_precision precision)
{
    switch (precision) {
    case PE_DX_EXACT:
        return "exact";
    case PE_DX_FLOAT32:
        return "float32";
    case PE_DX_BFLOAT16:
        return "bfloat16";
    case PE_DX_FLOAT16:
        return "float16";
    }
    return "?";
}

const char *pe_dx_alibi_form_name(pe_alibi_form form)
{
    return form == PE_ALIBI_BLOOM ? "bloom" : form == PE_ALIBI_MPT ? "mpt" : "symmetric";
}

const char *pe_dx_stage_name(pe_dx_stage stage)
{
    return stage == PE_DX_STAGE_VALUES ? "values" : "angles";
}

const char *pe_dx_formula_words(pe_dx_formula formula)
{
    switch (formula) {
    case PE_DX_FORMULA_STANDARD:
        return "2i/d";
    case PE_DX_FORMULA_PAIR_INDEX:
        return "pair index i/d instead of 2i/d";
    case PE_DX_FORMULA_D_MINUS_1:
        return "d-1 instead of d in the denominator";
    case PE_DX_FORMULA_D_PLUS_1:
        return "d+1 instead of d in the denominator";
    case PE_DX_FORMULA_HALF_MINUS_1:
        return "i/(d/2-1) instead of 2i/d (the half-1 denominator of fairseq and tensor2tensor)";
    }
    return "?";
}

double pe_dx_formula_base(pe_dx_formula formula, double base, size_t d)
{
    double dd = (double)d;
    switch (formula) {
    case PE_DX_FORMULA_STANDARD:
        return base;
    case PE_DX_FORMULA_PAIR_INDEX:
        return sqrt(base);
    case PE_DX_FORMULA_D_MINUS_1:
        return d > 1 ? pow(base, dd / (dd - 1)) : 0.0;
    case PE_DX_FORMULA_D_PLUS_1:
        return pow(base, dd / (dd + 1));
    case PE_DX_FORMULA_HALF_MINUS_1:
        return d > 2 ? pow(base, dd / (dd - 2)) : 0.0;
    }
    return 0.0;
}

bool pe_dx_float32_equal(double found, double want)
{
    return fabs(found - want) <= 0x1p-21 * fabs(want);
}

pe_dx_formula pe_dx_formula_of(double claimed, double found, size_t d)
{
    for (int f = 1; f < PE_DX_FORMULA_COUNT; f++) {
        double b = pe_dx_formula_base((pe_dx_formula)f, claimed, d);
        if (b > 0 && pe_dx_float32_equal(found, b))
            return (pe_dx_formula)f;
    }
    return PE_DX_FORMULA_STANDARD;
}

double pe_dx_round(pe_dx_precision precision, double x)
{
    switch (precision) {
    case PE_DX_EXACT:
        return x;
    case PE_DX_FLOAT32:
        return (double)(float)x;
    case PE_DX_BFLOAT16:
        return pe_round_bfloat16(x);
    case PE_DX_FLOAT16:
        return pe_round_float16(x);
    }
    return x;
}

double pe_dx_wrap(double a)
{
    if (!isfinite(a))
        return 0.0;
    double w = remainder(a, 2 * DX_PI); /* [-pi, pi] */
    return w == -DX_PI ? DX_PI : w;
}

void pe_dx_compare(const float *got, const float *want, size_t n, pe_dx_tolerance tol,
                   const float *slack, pe_dx_errors *out)
{
    size_t bad = 0;
    double sq = 0.0;

    memset(out, 0, sizeof *out);
    for (size_t e = 0; e < n; e++) {
        double g = got[e], w = want[e];
        double err = fabs(g - w);
        if (isnan(err))
            err = INFINITY; /* inf - inf, or a NaN subject: never "close" */
        double allowed = tol.atol + tol.rtol * fabs(w) + (slack ? slack[e] : 0);
        if (!(err <= allowed))
            bad++;
        sq += err * err;
        if (err > out->max_abs) {
            out->max_abs = err;
            out->worst = e;
            out->got = g;
            out->want = w;
        }
        /* relative to max(|want|, atol): finite where want is 0 (v2) */
        double rel = err / fmax(fabs(w), tol.atol > 0 ? tol.atol : 1e-30);
        if (rel > out->max_rel)
            out->max_rel = rel < FLT_MAX ? rel : FLT_MAX;
    }
    if (n > 0 && out->max_abs == 0.0) {
        out->got = got[0];
        out->want = want[0];
    }
    out->mismatched = n ? (double)bad / (double)n : 0.0;
    out->rms = n ? sqrt(sq / (double)n) : 0.0;
}

double pe_dx_cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool pe_dx_out_of_time(const pe_dx_subject *s)
{
    return s->deadline_ > 0.0 && pe_dx_cpu_seconds() > s->deadline_;
}

double pe_dx_seq_len(const pe_dx_subject *s, const int64_t *positions, int64_t offset)
{
    double top = 0.0;
    const int64_t *pos = positions ? positions : s->positions;
    for (size_t t = 0; t < s->rows; t++) {
        double p = (double)pos[t] + (double)offset;
        if (p > top)
            top = p;
    }
    return top + 1.0;
}

int64_t pe_dx_position(const pe_dx_subject *s, const pe_dx_variant *v, size_t t)
{
    return (v->positions ? v->positions[t] : s->positions[t]) + v->offset;
}

pe_status pe_dx_rope_freqs(const pe_dx_subject *s, const pe_dx_variant *v, double *w,
                           double *implied_factor)
{
    pe_rope rope = v->rope;
    rope.cache = NULL;
    pe_status st = pe_rope_frequencies(&rope, pe_dx_seq_len(s, v->positions, v->offset), w,
                                       implied_factor);
    for (size_t i = v->zero_from; st == PE_OK && v->zero_from > 0 && i < rope.rotary_dim / 2; i++)
        w[i] = 0.0;
    return st;
}

void pe_dx_variant_init(pe_dx_variant *v)
{
    memset(v, 0, sizeof *v);
    v->base = 10000.0;
    v->embed_scale = 1.0;
    v->rope.base = 10000.0;
    v->attention_factor = 1.0;
    v->alibi_sign = 1.0;
}

double pe_dx_error_after(const pe_dx_result *r)
{
    return fmin(r->explained.max_abs, r->best_errors.max_abs);
}

void pe_dx_result_free(pe_dx_result *r)
{
    if (!r)
        return;
    free(r->slopes);
    free(r->slopes_differ);
    free(r->positions);
    r->slopes = NULL;
    r->slopes_differ = NULL;
    r->positions = NULL;
}

size_t pe_dx_subject_size(const pe_dx_subject *s)
{
    size_t n = 0, n2 = 0;
    switch (s->kind) {
    case PE_DX_SUBJ_TABLE:
    case PE_DX_SUBJ_ABS_ENCODED:
    case PE_DX_SUBJ_ROPE_ENCODED:
        return __builtin_mul_overflow(s->rows, s->cols, &n) ? 0 : n;
    case PE_DX_SUBJ_ROPE_CACHE:
        return __builtin_mul_overflow(s->rows, s->cols, &n) || __builtin_mul_overflow(n, 2, &n2)
                   ? 0
                   : n2;
    case PE_DX_SUBJ_ALIBI_BIAS:
    case PE_DX_SUBJ_T5_BIAS:
        return __builtin_mul_overflow(s->rows, s->rows, &n) ||
                       __builtin_mul_overflow(n, s->heads, &n2)
                   ? 0
                   : n2;
    case PE_DX_SUBJ_ALIBI_SLOPES:
        return s->heads;
    }
    return 0;
}

/* Shapes the claim can have; sizes that fit. */
pe_status pe_dx_validate(const pe_dx_subject *s, const pe_dx_variant *c)
{
    if (!s || !c || !s->a || !s->positions || s->rows == 0 || pe_dx_subject_size(s) == 0)
        return PE_EINVAL;
    size_t n = pe_dx_subject_size(s);
    if (n > SIZE_MAX / (4 * sizeof(double)))
        return PE_EINVAL;
    for (size_t t = 0; t < s->rows; t++)
        if (s->positions[t] < 0 || s->positions[t] > ((int64_t)1 << 40))
            return PE_EINVAL;
    switch (s->kind) {
    case PE_DX_SUBJ_TABLE:
    case PE_DX_SUBJ_ABS_ENCODED:
        return c->base > 1.0 && isfinite(c->base) ? PE_OK : PE_EINVAL;
    case PE_DX_SUBJ_ROPE_ENCODED:
        if (c->rope2d.head_dim) /* vision 2-D rope: pe_rope2d_apply's shapes */
            return s->x && c->coords && c->rope2d.head_dim % 4 == 0 &&
                           s->cols % c->rope2d.head_dim == 0
                       ? PE_OK
                       : PE_EINVAL;
        if (!s->x || c->rope.head_dim == 0 || s->cols % c->rope.head_dim)
            return PE_EINVAL;
        /* fall through */
    case PE_DX_SUBJ_ROPE_CACHE: {
        size_t rd = c->rope.rotary_dim;
        if (rd < 2 || rd % 2 || rd > c->rope.head_dim || c->rope.cache)
            return PE_EINVAL;
        if (s->kind == PE_DX_SUBJ_ROPE_CACHE && (!s->b || (s->cols != rd && s->cols != rd / 2)))
            return PE_EINVAL;
        return PE_OK; /* base and scaling: pe_rope_frequencies decides */
    }
    case PE_DX_SUBJ_ALIBI_BIAS:
    case PE_DX_SUBJ_ALIBI_SLOPES:
        return s->heads > 0 ? PE_OK : PE_EINVAL;
    case PE_DX_SUBJ_T5_BIAS:
        return s->heads > 0 && c->t5.table && c->t5.heads == s->heads && c->t5.num_buckets >= 2
                   ? PE_OK
                   : PE_EINVAL;
    }
    return PE_EINVAL;
}

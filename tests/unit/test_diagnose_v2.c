/*
 * test_diagnose_v2.c - pe_diagnose, contract 1.2 "/diagnose, version 2":
 * the i/(d/2 - 1) exponent, value-stage half precision, MPT's ALiBi form,
 * positions recovered from the phase, the head size searched, the time
 * bound.
 *
 * Each subject is built here the way a real implementation builds it,
 * restated from its formulas in double (never with posenc's kernels):
 *   fairseq SinusoidalPositionalEmbedding: half = d/2, step ln(10000)/(half-1),
 *     row p = [sin(p e^{-j step}) for j < half] ++ [cos(...)], positions from
 *     padding_idx + 1 = 2;
 *   tensor2tensor get_timing_signal_1d: num_timescales = d/2, log increment
 *     ln(max/min)/(num - 1), signal = concat(sin, cos), positions from 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "diagnose/pe_diagnose.h"

static const pe_dx_tolerance tol = {1e-4, 1e-4};

static bool has(const pe_dx_result *r, pe_dx_code c)
{
    for (size_t k = 0; k < r->n_findings; k++)
        if (r->findings[k].code == c)
            return true;
    return false;
}

static void show(const char *what, const pe_dx_result *r)
{
    fprintf(stderr, "  %s: %s (claimed %.3g, best %.3g):", what, pe_dx_verdict_name(r->verdict),
            r->claimed.max_abs, r->best_errors.max_abs);
    for (size_t k = 0; k < r->n_findings; k++)
        fprintf(stderr, " %s [%s]", pe_dx_code_name(r->findings[k].code), r->findings[k].message);
    fprintf(stderr, "\n");
}

/* Split-layout sinusoid with inverse frequencies inv[half] at positions
 * first, first + 1, ... */
static void split_table(const double *inv, size_t T, size_t d, int64_t first, float *out)
{
    size_t half = d / 2;
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < half; j++) {
            double a = (double)(first + (int64_t)t) * inv[j];
            out[t * d + j] = (float)sin(a);
            out[t * d + half + j] = (float)cos(a);
        }
}

/* ---- 3. the half-1 denominator ---------------------------------------- */

static void half_minus_one(void)
{
    enum { T = 40, D = 64 };
    static float tab[T * D];
    double inv[D / 2];
    int64_t pos[T];
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.sin_layout = PE_SIN_SPLIT;
    pe_dx_subject s = {.kind = PE_DX_SUBJ_TABLE, .rows = T, .cols = D, .a = tab, .positions = pos};
    pe_dx_result r;

    /* tensor2tensor: min 1, max 1e4, from position 0 */
    double inc = log(1e4 / 1.0) / (double)(D / 2 - 1);
    for (size_t j = 0; j < D / 2; j++)
        inv[j] = 1.0 * exp(-(double)j * inc);
    split_table(inv, T, D, 0, tab);
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "t2t: diagnoses");
    CHECK(r.verdict == PE_DX_EXPLAINED && has(&r, PE_DX_FREQUENCY_FORMULA) && r.n_findings == 1,
          "tensor2tensor timing signal under a split claim: frequency_formula alone");
    CHECK(r.best.formula == PE_DX_FORMULA_HALF_MINUS_1, "t2t: formula i/(d/2-1) (got %d)",
          (int)r.best.formula);
    CHECK(fabs(r.best.base - pow(1e4, (double)D / (D - 2))) < 1e-6 * r.best.base,
          "t2t: base 10000^(d/(d-2)) = %.9g (got %.9g)", pow(1e4, (double)D / (D - 2)),
          r.best.base);
    if (r.verdict != PE_DX_EXPLAINED)
        show("t2t", &r);
    pe_dx_result_free(&r);

    /* fairseq: the same exponent, positions from padding_idx + 1 = 2, under
     * Vaswani's interleaved claim */
    double step = log(10000.0) / (double)(D / 2 - 1);
    for (size_t j = 0; j < D / 2; j++)
        inv[j] = exp(-(double)j * step);
    split_table(inv, T, D, 2, tab);
    c.sin_layout = PE_SIN_INTERLEAVED;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "fairseq: diagnoses");
    CHECK(r.verdict == PE_DX_EXPLAINED && has(&r, PE_DX_FREQUENCY_FORMULA) &&
              has(&r, PE_DX_LAYOUT_SWAPPED) && has(&r, PE_DX_POSITION_OFFSET) && r.n_findings == 3,
          "fairseq under an interleaved claim: frequency_formula + layout_swapped + offset");
    CHECK(r.best.offset == 2, "fairseq: offset +2 (got %lld)", (long long)r.best.offset);
    if (r.n_findings != 3)
        show("fairseq", &r);
    pe_dx_result_free(&r);

    /* the transform found by any route is named: a base of exactly
     * 10000^(d/(d-2)) under rope */
    CHECK(pe_dx_formula_base(PE_DX_FORMULA_HALF_MINUS_1, 10000.0, 512) > 10367.7 &&
              pe_dx_formula_base(PE_DX_FORMULA_HALF_MINUS_1, 10000.0, 512) < 10367.9,
          "the issue's 'base 10367.79' is 10000^(512/510)");
}

/* RoPE whose exponent is i/(rd/2 - 1): a cos/sin cache, half layout. */
static void rope_half_minus_one(void)
{
    enum { T = 64, RD = 64 };
    static float cv[T * RD], sv[T * RD];
    int64_t pos[T];
    for (size_t t = 0; t < T; t++) {
        pos[t] = (int64_t)t;
        for (size_t col = 0; col < RD; col++) {
            size_t i = col % (RD / 2);
            double a = (double)t * pow(10000.0, -(double)i / (double)(RD / 2 - 1));
            cv[t * RD + col] = (float)cos(a);
            sv[t * RD + col] = (float)sin(a);
        }
    }
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = c.frequency_dim = RD;
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_CACHE, .rows = T, .cols = RD, .a = cv, .b = sv, .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "rope i/(d/2-1): diagnoses");
    CHECK(r.verdict == PE_DX_EXPLAINED && has(&r, PE_DX_FREQUENCY_FORMULA) &&
              r.best.formula == PE_DX_FORMULA_HALF_MINUS_1,
          "rope cache with exponent i/(rd/2-1): frequency_formula i/(d/2-1)");
    if (r.verdict != PE_DX_EXPLAINED)
        show("rope half-1", &r);
    pe_dx_result_free(&r);
}

/* ---- 4. values stored in half precision -------------------------------- */

static float to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u; /* nearest, ties to even */
    memcpy(&x, &u, 4);
    return x;
}

/* GPT-NeoX's rotary cache in a half-precision model (restated): inv_freq
 * = 1 / base^(arange(0, d, 2) / d) in float32, angles t * inv_freq in
 * float32, emb = cat(freqs, freqs), cos/sin in float32, then cast to the
 * model's dtype (float16 or bfloat16). */
static void neox_half_cache(size_t T, size_t rd, int64_t first, bool bf16, float *cv, float *sv)
{
    for (size_t t = 0; t < T; t++)
        for (size_t col = 0; col < rd; col++) {
            size_t i = col % (rd / 2);
            float inv = 1.0f / powf(10000.0f, (float)(2 * i) / (float)rd);
            float ang = (float)(first + (int64_t)t) * inv;
            float c = cosf(ang), s = sinf(ang);
            cv[t * rd + col] = bf16 ? to_bf16(c) : (float)(_Float16)c;
            sv[t * rd + col] = bf16 ? to_bf16(s) : (float)(_Float16)s;
        }
}

static void values_stage(void)
{
    enum { T = 256, RD = 64 };
    static float cv[T * RD], sv[T * RD], x[T * 2 * RD], y[T * 2 * RD];
    int64_t pos[T];
    for (size_t t = 0; t < T; t++)
        pos[t] = 1000 + (int64_t)t;
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = c.frequency_dim = RD;
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_CACHE, .rows = T, .cols = RD, .a = cv, .b = sv, .positions = pos};
    for (int bf = 0; bf < 2; bf++) {
        neox_half_cache(T, RD, 1000, bf, cv, sv);
        pe_dx_result r;
        CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "neox half cache: diagnoses");
        pe_dx_precision want = bf ? PE_DX_BFLOAT16 : PE_DX_FLOAT16;
        CHECK(r.verdict == PE_DX_EXPLAINED && r.n_findings == 1 && has(&r, PE_DX_LOW_PRECISION) &&
                  r.best.precision == want && r.best.stage == PE_DX_STAGE_VALUES &&
                  r.best.rope.base == 10000.0,
              "GPT-NeoX %s cos/sin cache: low_precision %s, stage values, base kept",
              bf ? "bfloat16" : "float16", bf ? "bfloat16" : "float16");
        if (r.n_findings != 1 || r.best.stage != PE_DX_STAGE_VALUES)
            show("neox half cache", &r);
        pe_dx_result_free(&r);
    }

    /* float32 vectors rotated with the float16 cache (two heads) */
    uint64_t seed = 3;
    neox_half_cache(T, RD, 1000, false, cv, sv);
    for (size_t e = 0; e < T * 2 * RD; e++)
        x[e] = (float)test_uniform(&seed, -1, 1);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < 2; h++)
            for (size_t i = 0; i < RD / 2; i++) {
                size_t a = t * 2 * RD + h * RD + i, b = a + RD / 2;
                double co = cv[t * RD + i], si = sv[t * RD + i];
                y[a] = (float)(x[a] * co - x[b] * si);
                y[b] = (float)(x[b] * co + x[a] * si);
            }
    pe_dx_subject enc = {.kind = PE_DX_SUBJ_ROPE_ENCODED,
                         .rows = T,
                         .cols = 2 * RD,
                         .x = x,
                         .a = y,
                         .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&enc, &c, tol, &r) == PE_OK, "fp16 cache applied: diagnoses");
    CHECK(r.verdict == PE_DX_EXPLAINED && r.n_findings == 1 && has(&r, PE_DX_LOW_PRECISION) &&
              r.best.precision == PE_DX_FLOAT16 && r.best.stage == PE_DX_STAGE_VALUES,
          "float32 vectors rotated by a float16 cache: low_precision float16, stage values");
    if (r.n_findings != 1)
        show("fp16 cache applied", &r);
    pe_dx_result_free(&r);

    /* bfloat16 angles (stage angles) stay angles */
    for (size_t t = 0; t < T; t++)
        for (size_t col = 0; col < RD; col++) {
            size_t i = col % (RD / 2);
            float inv = to_bf16(1.0f / powf(10000.0f, (float)(2 * i) / (float)RD));
            float ang = to_bf16(to_bf16((float)pos[t]) * inv);
            cv[t * RD + col] = to_bf16(cosf(ang));
            sv[t * RD + col] = to_bf16(sinf(ang));
        }
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "bf16 angles: diagnoses");
    CHECK(has(&r, PE_DX_LOW_PRECISION) && r.best.precision == PE_DX_BFLOAT16 &&
              r.best.stage == PE_DX_STAGE_ANGLES,
          "bfloat16 angles: low_precision bfloat16, stage angles (got %s, %s)",
          pe_dx_precision_name(r.best.precision), pe_dx_stage_name(r.best.stage));
    if (!has(&r, PE_DX_LOW_PRECISION))
        show("bf16 angles", &r);
    pe_dx_result_free(&r);
}

/* ---- 5. MPT's ALiBi form ------------------------------------------------ */

/* MPT's build_alibi_bias (restated): the key axis is arange(1 - T, 1), the
 * last key at 0, times the head's slope 2^(-8(h+1)/H) (H a power of two);
 * the same for every query row. Symmetric: -slope*|i - j|. BLOOM:
 * slope*j. */
static void alibi_bias(int form, size_t H, size_t T, float *out)
{
    for (size_t h = 0; h < H; h++) {
        double slope = pow(2.0, -8.0 * (double)(h + 1) / (double)H);
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++) {
                double pj = (double)j, pi = (double)i;
                double b = form == PE_ALIBI_MPT     ? slope * (pj - (double)(T - 1))
                           : form == PE_ALIBI_BLOOM ? slope * pj
                                                    : -slope * fabs(pi - pj);
                out[(h * T + i) * T + j] = (float)b;
            }
    }
}

static void mpt_form(void)
{
    enum { H = 8, T = 12 };
    static float bias[H * T * T];
    int64_t pos[T];
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    pe_dx_subject s = {.kind = PE_DX_SUBJ_ALIBI_BIAS,
                       .rows = T,
                       .heads = H,
                       .a = bias,
                       .positions = pos};
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    pe_dx_result r;
    static const struct {
        int subject, claim;
        pe_dx_verdict verdict;
        const char *what;
    } cases[] = {
        {PE_ALIBI_MPT, PE_ALIBI_MPT, PE_DX_MATCH, "MPT bias under an mpt claim: match"},
        {PE_ALIBI_MPT, PE_ALIBI_SYMMETRIC, PE_DX_EXPLAINED,
         "MPT bias under a symmetric claim: alibi_form mpt"},
        {PE_ALIBI_SYMMETRIC, PE_ALIBI_MPT, PE_DX_EXPLAINED,
         "symmetric bias under an mpt claim: alibi_form symmetric"},
        {PE_ALIBI_BLOOM, PE_ALIBI_MPT, PE_DX_EXPLAINED,
         "BLOOM bias under an mpt claim: alibi_form bloom"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        alibi_bias(cases[k].subject, H, T, bias);
        c.alibi_form = (pe_alibi_form)cases[k].claim;
        CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "%s: diagnoses", cases[k].what);
        bool ok = r.verdict == cases[k].verdict &&
                  (r.verdict == PE_DX_MATCH
                       ? r.n_findings == 0
                       : r.n_findings == 1 && has(&r, PE_DX_ALIBI_FORM) &&
                             r.best.alibi_form == (pe_alibi_form)cases[k].subject &&
                             r.best.alibi_sign == 1.0);
        CHECK(ok, "%s", cases[k].what);
        if (!ok)
            show(cases[k].what, &r);
        pe_dx_result_free(&r);
    }
}

/* ---- 6. positions from the phase ----------------------------------------- */

/* Transformer-XL's PositionalEmbedding (restated): pos_seq runs klen-1
 * down to 0, inv_freq = 1 / 10000^(2i/d), the row is cat(sin, cos) of
 * pos * inv_freq - a split table at descending positions. */
static void transformer_xl(size_t klen, size_t d, float *out)
{
    double inv[256];
    for (size_t i = 0; i < d / 2; i++)
        inv[i] = 1.0 / pow(10000.0, (double)(2 * i) / (double)d);
    for (size_t t = 0; t < klen; t++)
        for (size_t i = 0; i < d / 2; i++) {
            double a = (double)(klen - 1 - t) * inv[i];
            out[t * d + i] = (float)sin(a);
            out[t * d + d / 2 + i] = (float)cos(a);
        }
}

/* x rotated GPT-NeoX style (half layout, heads of hd) at positions q; also
 * test_diagnose_neg.c's reference. */
void dx_test_neox_rotate(const int64_t *q, size_t n, size_t width, size_t hd, const float *x,
                         float *y);
void dx_test_neox_rotate(const int64_t *q, size_t n, size_t width, size_t hd, const float *x,
                         float *y)
{
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < width / hd; h++)
            for (size_t i = 0; i < hd / 2; i++) {
                double a = (double)q[t] * pow(10000.0, -2.0 * (double)i / (double)hd);
                size_t ea = t * width + h * hd + i, eb = ea + hd / 2;
                y[ea] = (float)(x[ea] * cos(a) - x[eb] * sin(a));
                y[eb] = (float)(x[eb] * cos(a) + x[ea] * sin(a));
            }
}

static bool positions_are(const pe_dx_result *r, const int64_t *want, size_t n)
{
    if (!r->best.positions)
        return false;
    for (size_t t = 0; t < n; t++)
        if (r->best.positions[t] + r->best.offset != want[t])
            return false;
    return true;
}

static void descending_table(void)
{
    enum { T = 48, D = 64 };
    static float tab[T * D];
    int64_t pos[T], want[T];
    for (size_t t = 0; t < T; t++) {
        pos[t] = (int64_t)t;
        want[t] = (int64_t)(T - 1 - t);
    }
    transformer_xl(T, D, tab);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_TABLE, .rows = T, .cols = D, .a = tab, .positions = pos};
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    for (int lay = 0; lay < 2; lay++) {
        c.sin_layout = lay ? PE_SIN_INTERLEAVED : PE_SIN_SPLIT;
        pe_dx_result r;
        CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "Transformer-XL: diagnoses");
        bool ok = r.verdict == PE_DX_EXPLAINED && has(&r, PE_DX_POSITIONS_MISMATCH) &&
                  !has(&r, PE_DX_SIN_COS_SWAPPED) && r.n_findings == (size_t)(1 + lay) &&
                  (!lay || has(&r, PE_DX_LAYOUT_SWAPPED)) &&
                  r.positions_pattern == PE_DX_PATTERN_REVERSED && positions_are(&r, want, T);
        CHECK(ok,
              "Transformer-XL table under a%s claim: positions_mismatch reversed%s, never "
              "sin_cos_swapped",
              lay ? "n interleaved" : " split", lay ? " + layout_swapped" : "");
        if (!ok)
            show("Transformer-XL", &r);
        pe_dx_result_free(&r);
    }
}

/* Rotated vectors at positions q under a claim of 0, 1, 2, ...: the
 * positions found, their pattern, no other finding. */
static void rope_positions(const char *what, const int64_t *q, pe_dx_pattern pattern)
{
    enum { T = 32, W = 128, HD = 64 };
    static float x[T * W], y[T * W];
    int64_t pos[T];
    uint64_t seed = 77;
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    for (size_t e = 0; e < T * W; e++)
        x[e] = (float)test_uniform(&seed, -1, 1);
    dx_test_neox_rotate(q, T, W, HD, x, y);
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = c.frequency_dim = HD;
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_ENCODED, .rows = T, .cols = W, .x = x, .a = y, .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "%s: diagnoses", what);
    bool ok = r.verdict == PE_DX_EXPLAINED && r.n_findings == 1 &&
              has(&r, PE_DX_POSITIONS_MISMATCH) && r.positions_pattern == pattern &&
              positions_are(&r, q, T) && r.best.rope.head_dim == HD;
    CHECK(ok, "%s: positions_mismatch %s with the positions found", what,
          pe_dx_pattern_name(pattern));
    if (!ok)
        show(what, &r);
    pe_dx_result_free(&r);
}

static void positions_mismatch(void)
{
    enum { T = 32 };
    int64_t q[T];
    descending_table();
    for (size_t t = 0; t < T; t++)
        q[t] = 0;
    rope_positions("rope, all-zero position ids", q, PE_DX_PATTERN_CONSTANT);
    for (size_t t = 0; t < T; t++)
        q[t] = (int64_t)(t % 16);
    rope_positions("rope, two packed sequences of 16", q, PE_DX_PATTERN_RESTART);
    for (size_t t = 0; t < T; t++) /* left padding by 5: HF fills the pads with 1 */
        q[t] = t < 5 ? 1 : (int64_t)t - 5;
    rope_positions("rope, positions from a left-padding mask", q, PE_DX_PATTERN_FROM_MASK);
    for (size_t t = 0; t < T; t++)
        q[t] = (int64_t)((t * 7) % T);
    rope_positions("rope, permuted positions", q, PE_DX_PATTERN_OTHER);
    for (size_t t = 0; t < T; t++)
        q[t] = (int64_t)(T - 1 - t);
    rope_positions("rope, descending positions", q, PE_DX_PATTERN_REVERSED);
    CHECK(pe_dx_positions_pattern((const int64_t[]){3, 4, 5}, 3) == PE_DX_PATTERN_OTHER,
          "a shifted range is no positions pattern (it is an offset)");
}

/* ---- 7. the head size searched ------------------------------------------- */

/* x rotated in heads of hd (interleaved: GPT-J / Meta Llama's pairs (2i,
 * 2i+1); else GPT-NeoX's half layout) at positions 0, 1, ... */
static void rotate_heads(size_t n, size_t width, size_t hd, bool interleaved, double theta,
                         const float *x, float *y)
{
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < width / hd; h++)
            for (size_t i = 0; i < hd / 2; i++) {
                double a = (double)t * pow(theta, -2.0 * (double)i / (double)hd);
                size_t base = t * width + h * hd;
                size_t ea = base + (interleaved ? 2 * i : i);
                size_t eb = base + (interleaved ? 2 * i + 1 : i + hd / 2);
                y[ea] = (float)(x[ea] * cos(a) - x[eb] * sin(a));
                y[eb] = (float)(x[eb] * cos(a) + x[ea] * sin(a));
            }
}

static void free_head_size(void)
{
    enum { T = 48, W = 256 };
    static float x[T * W], y[T * W];
    int64_t pos[T];
    uint64_t seed = 9;
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    for (size_t e = 0; e < T * W; e++)
        x[e] = (float)test_uniform(&seed, -1, 1);
    static const struct {
        size_t hd;
        bool interleaved;
        pe_rope_layout claim_layout;
        const char *what;
    } cases[] = {
        {32, false, PE_ROPE_HALF, "8 heads of 32, half layout, no head_dim"},
        {64, true, PE_ROPE_INTERLEAVED, "4 heads of 64, interleaved, no head_dim"},
        {128, true, PE_ROPE_HALF, "2 heads of 128, interleaved under a half claim, no head_dim"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rotate_heads(T, W, cases[k].hd, cases[k].interleaved, 10000.0, x, y);
        pe_dx_variant c;
        pe_dx_variant_init(&c);
        c.rope.head_dim = c.rope.rotary_dim = c.frequency_dim = W; /* what the API sends */
        c.rope.layout = cases[k].claim_layout;
        c.head_dim_free = true;
        pe_dx_subject s = {.kind = PE_DX_SUBJ_ROPE_ENCODED,
                           .rows = T,
                           .cols = W,
                           .x = x,
                           .a = y,
                           .positions = pos};
        pe_dx_result r;
        CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "%s: diagnoses", cases[k].what);
        bool swapped = (cases[k].claim_layout == PE_ROPE_INTERLEAVED) != cases[k].interleaved;
        bool ok = r.verdict == PE_DX_EXPLAINED && has(&r, PE_DX_HEAD_DIM_MISMATCH) &&
                  r.best.rope.head_dim == cases[k].hd && r.best.rope.rotary_dim == cases[k].hd &&
                  r.n_findings == (swapped ? 2u : 1u) &&
                  (!swapped || has(&r, PE_DX_LAYOUT_SWAPPED));
        CHECK(ok, "%s: head_dim_mismatch %zu%s", cases[k].what, cases[k].hd,
              swapped ? " + layout_swapped" : "");
        if (!ok)
            show(cases[k].what, &r);
        pe_dx_result_free(&r);
    }
    /* the whole vector as one head: match, no finding */
    rotate_heads(T, W, W, false, 10000.0, x, y);
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = c.frequency_dim = W;
    c.head_dim_free = true;
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_ENCODED, .rows = T, .cols = W, .x = x, .a = y, .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_MATCH && r.n_findings == 0,
          "one head over the whole vector, no head_dim: match");
    pe_dx_result_free(&r);
}

/* ---- 8. the time bound ---------------------------------------------------- */

static void time_bound(void)
{
    enum { T = 512, W = 128, HD = 64 };
    static float x[T * W], y[T * W];
    int64_t pos[T];
    uint64_t seed = 21;
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    for (size_t e = 0; e < T * W; e++)
        x[e] = (float)test_uniform(&seed, -1, 1);
    rotate_heads(T, W, HD, false, 500000.0, x, y); /* 10000 is claimed */
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = c.frequency_dim = HD;
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_ENCODED, .rows = T, .cols = W, .x = x, .a = y, .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_EXPLAINED &&
              has(&r, PE_DX_BASE_MISMATCH) && !r.truncated,
          "base 500000 within the default budget: explained, not truncated");
    pe_dx_result_free(&r);
    s.budget_s = 1e-9; /* spent before the search starts */
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "a spent budget still answers");
    CHECK(r.truncated && r.verdict == PE_DX_UNEXPLAINED && r.n_findings == 0,
          "a spent budget: truncated, unexplained, no finding (got %s, %zu, truncated %d)",
          pe_dx_verdict_name(r.verdict), r.n_findings, (int)r.truncated);
    pe_dx_result_free(&r);
    /* the claim's own checks are not cut: an exact subject still matches */
    rotate_heads(T, W, HD, false, 10000.0, x, y);
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_MATCH && !r.truncated,
          "a spent budget on an exact subject: match, not truncated");
    pe_dx_result_free(&r);
}

/* The pattern of one batch row against its claimed positions: a row
 * shifted by its own constant is `offset`, the others as for a single
 * row (reversed, constant, from_mask), a row as claimed not `offset`. */
static void row_patterns(void)
{
    const int64_t claimed[6] = {0, 1, 2, 3, 4, 5};
    const int64_t shifted[6] = {9, 10, 11, 12, 13, 14};
    const int64_t reversed[6] = {5, 4, 3, 2, 1, 0};
    const int64_t zeros[6] = {0, 0, 0, 0, 0, 0};
    const int64_t masked[6] = {1, 1, 0, 1, 2, 3}; /* two pads, HF fills 1 */
    CHECK(pe_dx_row_pattern(shifted, claimed, 6) == PE_DX_PATTERN_OFFSET, "row +9: offset");
    CHECK(pe_dx_row_pattern(reversed, claimed, 6) == PE_DX_PATTERN_REVERSED, "row reversed");
    CHECK(pe_dx_row_pattern(zeros, claimed, 6) == PE_DX_PATTERN_CONSTANT, "row all zero");
    CHECK(pe_dx_row_pattern(masked, claimed, 6) == PE_DX_PATTERN_FROM_MASK, "row from a mask");
    CHECK(pe_dx_row_pattern(claimed, claimed, 6) != PE_DX_PATTERN_OFFSET, "row as claimed");
    CHECK(strcmp(pe_dx_pattern_name(PE_DX_PATTERN_OFFSET), "offset") == 0, "pattern name");
}

/* A cos/sin cache whose width fits no rotary_dim of the claim: pe_dx_render
 * refuses it (PE_EINVAL) and writes nothing. */
static void render_refuses_shapes(void)
{
    enum { T = 4, W = 5 };
    float cv[T * W] = {0}, sv[T * W] = {0}, out[2 * T * W + 1];
    int64_t pos[T] = {0, 1, 2, 3};
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_CACHE, .rows = T, .cols = W, .a = cv, .b = sv, .positions = pos};
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.base = 10000.0;
    c.rope.head_dim = c.rope.rotary_dim = 8;
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        out[i] = -7.0f;
    CHECK(pe_dx_render(&s, &c, out) == PE_EINVAL, "cache width 5 under rotary_dim 8: refused");
    bool untouched = true;
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        untouched = untouched && out[i] == -7.0f;
    CHECK(untouched, "nothing written for a refused shape");
}

void test_diagnose_v2(void); /* main.c calls it */
void test_diagnose_v2(void)
{
    half_minus_one();
    rope_half_minus_one();
    values_stage();
    mpt_form();
    positions_mismatch();
    free_head_size();
    time_bound();
    row_patterns();
    render_refuses_shapes();
}

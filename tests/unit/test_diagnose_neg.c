/*
 * test_diagnose_neg.c - the negative set of pe_diagnose (contract 1.2
 * "/diagnose, version 2", Significance): subjects with no known
 * structure must not get one. Random, constant, element-shuffled and
 * unrelated subjects, encoded == embeddings under a sinusoidal claim, and
 * the right answer with noise at 1e-7, 1e-5 and 1e-3: no structural
 * finding (low_precision aside), never a negative position in `best`, and
 * a subject within tolerance of the claim is `match` with no finding.
 * Also: a float32-rounding-level difference (llama.cpp's NORMAL-mode
 * frequencies, theta *= theta_scale in float32) is never structural, and
 * max_rel_error stays finite where the wanted value is 0.
 *
 * Subjects are written here from the papers' formulas in double (Vaswani
 * et al. 3.5 for the table; RoFormer / GPT-NeoX's half layout for RoPE).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "diagnose/pe_diagnose.h"

static const pe_dx_tolerance tol = {1e-4, 1e-4};

/* GPT-NeoX rotation (test_diagnose_v2.c): x in half layout, heads of hd, at
 * positions q. */
void dx_test_neox_rotate(const int64_t *q, size_t n, size_t width, size_t hd, const float *x,
                         float *y);

/* Vaswani et al.: PE[p][2i] = sin(p / 10000^(2i/d)), PE[p][2i+1] = cos. */
static void vaswani(const int64_t *pos, size_t n, size_t d, float *out)
{
    for (size_t t = 0; t < n; t++)
        for (size_t k = 0; k < d; k++) {
            double ang = (double)pos[t] / pow(10000.0, (double)(k - k % 2) / (double)d);
            out[t * d + k] = (float)(k % 2 ? cos(ang) : sin(ang));
        }
}

/* GPT-NeoX's cache, half layout, one head of rd: cos/sin of p * theta^-2i/rd,
 * each frequency in columns i and i + rd/2. */
static void neox_cache(const int64_t *pos, size_t n, size_t rd, float *cosv, float *sinv)
{
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < rd; c++) {
            size_t i = c % (rd / 2);
            double ang = (double)pos[t] * pow(10000.0, -2.0 * (double)i / (double)rd);
            cosv[t * rd + c] = (float)cos(ang);
            sinv[t * rd + c] = (float)sin(ang);
        }
}

/* Structure that is not there: every code but low_precision, and
 * positions_mismatch where the positions really are other (all zero). */
static bool structural(pe_dx_code c)
{
    return c != PE_DX_LOW_PRECISION && c != PE_DX_POSITIONS_MISMATCH;
}

/* No structural finding, no negative position in best; prints otherwise. */
static void check_no_structure(const char *what, const pe_dx_subject *s, const pe_dx_result *r)
{
    bool ok = true;
    for (size_t k = 0; k < r->n_findings; k++)
        ok = ok && !structural(r->findings[k].code);
    CHECK(ok, "%s: no structural finding (got %zu: %s %s)", what, r->n_findings,
          r->n_findings ? pe_dx_code_name(r->findings[0].code) : "",
          r->n_findings ? r->findings[0].message : "");
    bool nonneg = true;
    for (size_t t = 0; t < s->rows; t++) {
        int64_t p = (r->best.positions ? r->best.positions[t] : s->positions[t]) + r->best.offset;
        nonneg = nonneg && p >= 0;
    }
    CHECK(nonneg, "%s: no negative position in best (offset %lld)", what,
          (long long)r->best.offset);
    CHECK(isfinite(r->claimed.max_rel) && isfinite(r->best_errors.max_rel),
          "%s: max_rel_error finite (%g, %g)", what, r->claimed.max_rel, r->best_errors.max_rel);
}

static void run(const char *what, const pe_dx_subject *s, const pe_dx_variant *c,
                pe_dx_verdict want, pe_dx_result *keep)
{
    pe_dx_result r;
    CHECK(pe_diagnose(s, c, tol, &r) == PE_OK, "%s: diagnoses", what);
    CHECK(r.verdict == want, "%s: verdict %s, want %s", what, pe_dx_verdict_name(r.verdict),
          pe_dx_verdict_name(want));
    if (want == PE_DX_MATCH)
        CHECK(r.n_findings == 0, "%s: match without findings (got %zu)", what, r.n_findings);
    check_no_structure(what, s, &r);
    for (size_t k = 0; want == PE_DX_UNEXPLAINED && k < r.n_findings; k++)
        CHECK(r.findings[k].code != PE_DX_POSITIONS_MISMATCH, "%s: no positions invented", what);
    if (keep)
        *keep = r;
    else
        pe_dx_result_free(&r);
}

enum { NT = 64, ND = 64 };

/* The junk every kind is tried with; kind 0..3: random, constant,
 * element-shuffled right answer, unrelated waves. */
static void junk(int kind, const float *right, size_t n, uint64_t seed, float *out)
{
    for (size_t e = 0; e < n; e++) {
        switch (kind) {
        case 0:
            out[e] = (float)test_uniform(&seed, -1.0, 1.0);
            break;
        case 1:
            out[e] = 0.5f;
            break;
        case 2:
            out[e] = right[e];
            break;
        default: /* waves at no encoding's frequencies, with random phases */
            out[e] = (float)sin(0.37 * (double)(e / ND) * (double)(e % ND + 1) * 1.618 +
                                test_uniform(&seed, 0, 6.28));
        }
    }
    if (kind == 2) /* Fisher-Yates over every element */
        for (size_t e = n; e-- > 1;) {
            size_t j = (size_t)test_uniform(&seed, 0, (double)(e + 1));
            float t = out[e];
            out[e] = out[j > e ? e : j];
            out[j > e ? e : j] = t;
        }
}

static const char *const junk_names[] = {"random", "constant", "shuffled", "unrelated"};

static void noise(const float *right, size_t n, double amp, uint64_t seed, float *out)
{
    for (size_t e = 0; e < n; e++)
        out[e] = (float)((double)right[e] + test_uniform(&seed, -amp, amp));
}

static void sinusoidal_negatives(void)
{
    int64_t pos[NT];
    float right[NT * ND], sub[NT * ND], x[NT * ND];
    char what[96];
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    for (size_t t = 0; t < NT; t++)
        pos[t] = (int64_t)t;
    vaswani(pos, NT, ND, right);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_TABLE,
                       .rows = NT,
                       .cols = ND,
                       .a = sub,
                       .positions = pos};
    for (int k = 0; k < 4; k++) {
        junk(k, right, NT * ND, 11 + (uint64_t)k, sub);
        snprintf(what, sizeof what, "sinusoidal table, %s", junk_names[k]);
        run(what, &s, &c, PE_DX_UNEXPLAINED, NULL);
    }
    static const double amps[] = {1e-7, 1e-5, 1e-3};
    for (int k = 0; k < 3; k++) {
        noise(right, NT * ND, amps[k], 21 + (uint64_t)k, sub);
        snprintf(what, sizeof what, "sinusoidal table, noise %.0e", amps[k]);
        run(what, &s, &c, k < 2 ? PE_DX_MATCH : PE_DX_UNEXPLAINED, NULL);
    }
    /* encoded == embeddings: the encoding was never added */
    uint64_t seed = 5;
    for (size_t e = 0; e < NT * ND; e++)
        x[e] = sub[e] = (float)test_uniform(&seed, -2.0, 2.0);
    pe_dx_subject enc = {.kind = PE_DX_SUBJ_ABS_ENCODED,
                         .rows = NT,
                         .cols = ND,
                         .x = x,
                         .a = sub,
                         .positions = pos};
    pe_dx_result r;
    run("sinusoidal encoded == embeddings", &enc, &c, PE_DX_UNEXPLAINED, &r);
    CHECK(r.best.embed_scale == c.embed_scale && r.best.offset == 0,
          "encoded == embeddings: best is the claim (embed_scale %g, offset %lld)",
          r.best.embed_scale, (long long)r.best.offset);
    pe_dx_result_free(&r);

    /* all-zero position ids under a claim of 0, 1, 2, ...: every row is
     * row 0; the one structure allowed is the truth, positions all 0 */
    int64_t zero[NT] = {0};
    vaswani(zero, NT, ND, sub);
    run("sinusoidal table at all-zero positions", &s, &c, PE_DX_EXPLAINED, &r);
    CHECK(r.n_findings == 1 && r.findings[0].code == PE_DX_POSITIONS_MISMATCH &&
              r.positions_pattern == PE_DX_PATTERN_CONSTANT && r.best.positions &&
              r.best.positions[NT - 1] == 0,
          "all-zero positions: positions_mismatch constant (0), nothing else");
    pe_dx_result_free(&r);
}

static void rope_cache_negatives(void)
{
    int64_t pos[NT];
    float rc[NT * ND], rs[NT * ND], sc[NT * ND], ss[NT * ND];
    char what[96];
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = ND;
    c.frequency_dim = ND;
    for (size_t t = 0; t < NT; t++)
        pos[t] = (int64_t)t;
    neox_cache(pos, NT, ND, rc, rs);
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_CACHE, .rows = NT, .cols = ND, .a = sc, .b = ss, .positions = pos};
    for (int k = 0; k < 4; k++) {
        junk(k, rc, NT * ND, 31 + (uint64_t)k, sc);
        junk(k, rs, NT * ND, 41 + (uint64_t)k, ss);
        snprintf(what, sizeof what, "rope cache, %s", junk_names[k]);
        run(what, &s, &c, PE_DX_UNEXPLAINED, NULL);
    }
    static const double amps[] = {1e-7, 1e-5, 1e-3};
    for (int k = 0; k < 3; k++) {
        noise(rc, NT * ND, amps[k], 51 + (uint64_t)k, sc);
        noise(rs, NT * ND, amps[k], 61 + (uint64_t)k, ss);
        snprintf(what, sizeof what, "rope cache, noise %.0e", amps[k]);
        run(what, &s, &c, k < 2 ? PE_DX_MATCH : PE_DX_UNEXPLAINED, NULL);
    }
}

static void rope_encoded_negatives(void)
{
    enum { W = 128, HD = 64 };
    int64_t pos[NT];
    static float x[NT * W], right[NT * W], sub[NT * W];
    char what[96];
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = HD;
    c.frequency_dim = HD;
    uint64_t seed = 71;
    for (size_t t = 0; t < NT; t++)
        pos[t] = (int64_t)t;
    for (size_t e = 0; e < NT * W; e++)
        x[e] = (float)test_uniform(&seed, -1.0, 1.0);
    dx_test_neox_rotate(pos, NT, W, HD, x, right);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_ROPE_ENCODED,
                       .rows = NT,
                       .cols = W,
                       .x = x,
                       .a = sub,
                       .positions = pos};
    for (int k = 0; k < 4; k++) {
        if (k == 3)
            continue; /* the waves are [.][ND]-shaped */
        junk(k, right, NT * W, 81 + (uint64_t)k, sub);
        snprintf(what, sizeof what, "rope encoded, %s", junk_names[k]);
        run(what, &s, &c, PE_DX_UNEXPLAINED, NULL);
    }
    static const double amps[] = {1e-7, 1e-5, 1e-3};
    for (int k = 0; k < 3; k++) {
        noise(right, NT * W, amps[k], 91 + (uint64_t)k, sub);
        snprintf(what, sizeof what, "rope encoded, noise %.0e", amps[k]);
        run(what, &s, &c, k < 2 ? PE_DX_MATCH : PE_DX_UNEXPLAINED, NULL);
    }
}

static void bias_negatives(void)
{
    enum { H = 4, T = 16 };
    int64_t pos[T];
    static float bias[H * T * T];
    static float table[32 * H];
    uint64_t seed = 101;
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    for (size_t e = 0; e < H * T * T; e++)
        bias[e] = (float)test_uniform(&seed, -3.0, 3.0);
    for (size_t e = 0; e < 32 * H; e++)
        table[e] = (float)test_uniform(&seed, -1.0, 1.0);
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_ALIBI_BIAS,
                       .rows = T,
                       .heads = H,
                       .a = bias,
                       .positions = pos};
    run("alibi bias, random", &s, &c, PE_DX_UNEXPLAINED, NULL);
    c.t5.table = table;
    c.t5.heads = H;
    c.t5.num_buckets = 32;
    c.t5.max_distance = 128;
    c.t5.bidirectional = true;
    s.kind = PE_DX_SUBJ_T5_BIAS;
    run("t5 bias, random", &s, &c, PE_DX_UNEXPLAINED, NULL);
    for (size_t e = 0; e < H * T * T; e++)
        bias[e] = 0.25f;
    run("t5 bias, constant", &s, &c, PE_DX_UNEXPLAINED, NULL);
}

/* llama.cpp's NORMAL mode (ggml rope): theta_scale = base^(-2/d) in
 * float32, theta starts at p and is multiplied by theta_scale per pair,
 * in float32; cos/sin in float32. A float32-level difference: match. */
static void float32_level(void)
{
    enum { T = 512, D = 256 };
    static float cv[T * D], sv[T * D];
    static int64_t pos[T];
    for (size_t t = 0; t < T; t++)
        pos[t] = 100000 + 37 * (int64_t)t;
    float scale = powf(10000.0f, -2.0f / (float)D);
    for (size_t t = 0; t < T; t++) {
        float theta = (float)pos[t];
        for (size_t i = 0; i < D / 2; i++) {
            cv[t * D + i] = cv[t * D + i + D / 2] = cosf(theta);
            sv[t * D + i] = sv[t * D + i + D / 2] = sinf(theta);
            theta *= scale;
        }
    }
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    c.rope.head_dim = c.rope.rotary_dim = D;
    c.frequency_dim = D;
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_CACHE, .rows = T, .cols = D, .a = cv, .b = sv, .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "llama.cpp NORMAL: diagnoses");
    CHECK(r.verdict == PE_DX_MATCH, "llama.cpp NORMAL cache at 3000..3511: match (got %s, %.3g)",
          pe_dx_verdict_name(r.verdict), r.claimed.max_abs);
    check_no_structure("llama.cpp NORMAL", &s, &r);
    pe_dx_result_free(&r);
}

/* max_rel_error where the wanted value is 0: sin at position 0. */
static void max_rel_finite(void)
{
    int64_t pos[4] = {0, 1, 2, 3};
    float tab[4 * 8];
    vaswani(pos, 4, 8, tab);
    tab[0] = 0.5f; /* want sin(0) = 0 */
    pe_dx_variant c;
    pe_dx_variant_init(&c);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_TABLE, .rows = 4, .cols = 8, .a = tab, .positions = pos};
    pe_dx_result r;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK, "one wrong zero: diagnoses");
    CHECK(isfinite(r.claimed.max_rel) && fabs(r.claimed.max_rel - 0.5 / 1e-4) < 1,
          "max_rel_error = |got - want| / max(|want|, atol) = 5000 (got %g)", r.claimed.max_rel);
    pe_dx_result_free(&r);
}

void test_diagnose_neg(void); /* main.c calls it */
void test_diagnose_neg(void)
{
    sinusoidal_negatives();
    rope_cache_negatives();
    rope_encoded_negatives();
    bias_negatives();
    float32_level();
    max_rel_finite();
}

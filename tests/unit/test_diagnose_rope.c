/*
 * test_diagnose_rope.c - pe_diagnose on RoPE subjects (rotated vectors and
 * cos/sin caches). Every subject is made by the reference below, written
 * here from the formulas (Hugging Face modeling_rope_utils / modeling_llama,
 * and the RoFormer paper), not with posenc's kernels; `best` is then
 * recomputed with posenc's own pe_rope_frequencies + pe_rope_apply and must
 * reproduce the subject.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "diagnose/pe_diagnose.h"

enum { SC_NONE, SC_LINEAR, SC_LLAMA3, SC_YARN, SC_DYNAMIC };
enum { P_EXACT, P_F32, P_BF16, P_F16 };

/* One (possibly buggy) RoPE implementation. */
typedef struct ref_rope {
    double base;
    size_t hd, rd;
    int interleaved;
    double exp_num, exp_den; /* exponent (exp_num*i)/exp_den: 2, rd normally */
    int reversed;
    int64_t offset;
    int scaling;
    double factor, orig;
    int drop_yarn_factor;
    double extra_factor; /* multiplies cos and sin (0: none) */
    int prec;
    double seq_len; /* dynamic: largest position + 1 */
} ref_rope;

static ref_rope ref_default(size_t hd, size_t rd, int interleaved)
{
    ref_rope r = {10000.0, hd,  rd,  interleaved, 2.0, (double)rd, 0,  0,
                  SC_NONE, 1.0, 0.0, 0,           0.0, P_EXACT,    0.0};
    return r;
}

static float bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &u, 4);
    return x;
}

static double ref_freq(const ref_rope *r, size_t i)
{
    double base = r->base;
    if (r->scaling == SC_DYNAMIC && r->seq_len > r->orig) /* NTK-aware */
        base *= pow(r->factor * r->seq_len / r->orig - (r->factor - 1),
                    (double)r->rd / (double)(r->rd - 2));
    double w = exp(-r->exp_num * (double)i * log(base) / r->exp_den);
    double twopi = 2 * acos(-1.0);
    switch (r->scaling) {
    case SC_LINEAR:
        return w / r->factor;
    case SC_LLAMA3: {
        double wl = twopi / w, lo = r->orig / 1.0, hi = r->orig / 4.0;
        if (wl < hi)
            return w;
        if (wl > lo)
            return w / r->factor;
        double sm = (r->orig / wl - 1.0) / 3.0;
        return (1 - sm) * w / r->factor + sm * w;
    }
    case SC_YARN: {
        double d = (double)r->rd, lb = log(r->base);
        double low = floor(d * log(r->orig / (32 * twopi)) / (2 * lb));
        double high = ceil(d * log(r->orig / (1 * twopi)) / (2 * lb));
        if (low < 0)
            low = 0;
        if (high > d - 1)
            high = d - 1;
        double ramp = ((double)i - low) / (high - low);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        return (w / r->factor) * ramp + w * (1 - ramp);
    }
    }
    return w;
}

static double ref_att(const ref_rope *r)
{
    double a = 1.0;
    if (r->scaling == SC_YARN && !r->drop_yarn_factor)
        a = 0.1 * log(r->factor) + 1.0;
    if (r->extra_factor != 0.0)
        a *= r->extra_factor;
    return a;
}

/* cos and sin of pair i at position p, in the implementation's precision. */
static void ref_cs(const ref_rope *r, size_t i, int64_t pos, double *c, double *s)
{
    double w = ref_freq(r, i), p = (double)(pos + r->offset), a = ref_att(r);
    switch (r->prec) {
    case P_F32: {
        float th = (float)w * (float)p;
        *c = (float)(cosf(th) * (float)a);
        *s = (float)(sinf(th) * (float)a);
        break;
    }
    case P_BF16: {
        float th = bf16(bf16((float)w) * bf16((float)p));
        *c = bf16(bf16(cosf(th)) * (float)a);
        *s = bf16(bf16(sinf(th)) * (float)a);
        break;
    }
    case P_F16: {
        _Float16 th = (_Float16)((_Float16)w * (_Float16)p);
        *c = (double)(_Float16)((_Float16)cosf((float)th) * (_Float16)a);
        *s = (double)(_Float16)((_Float16)sinf((float)th) * (_Float16)a);
        break;
    }
    default:
        *c = cos(w * p) * a;
        *s = sin(w * p) * a;
    }
    if (r->reversed)
        *s = -*s;
}

/* y = the implementation applied to x[n][width]. */
static void ref_encode(const ref_rope *r, const int64_t *pos, size_t n, size_t width,
                       const float *x, float *y)
{
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < width / r->hd; h++) {
            const float *xh = x + t * width + h * r->hd;
            float *yh = y + t * width + h * r->hd;
            memcpy(yh, xh, r->hd * sizeof *yh);
            for (size_t i = 0; i < r->rd / 2; i++) {
                size_t a = r->interleaved ? 2 * i : i;
                size_t b = r->interleaved ? 2 * i + 1 : i + r->rd / 2;
                double c, s;
                ref_cs(r, i, pos[t], &c, &s);
                double complex z = (xh[a] + I * (double)xh[b]) * (c + I * s);
                yh[a] = (float)creal(z);
                yh[b] = (float)cimag(z);
            }
        }
}

/* A cos/sin cache [n][cols], cols = rd/2 or rd (duplicated per layout). */
static void ref_cache(const ref_rope *r, const int64_t *pos, size_t n, size_t cols, int swap,
                      float *cosv, float *sinv)
{
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < r->rd / 2; i++) {
            double c, s;
            ref_cs(r, i, pos[t], &c, &s);
            size_t c0 = i, c1 = i;
            if (cols == r->rd) {
                c0 = r->interleaved ? 2 * i : i;
                c1 = r->interleaved ? 2 * i + 1 : i + r->rd / 2;
            }
            float *A = swap ? sinv : cosv, *B = swap ? cosv : sinv;
            A[t * cols + c0] = A[t * cols + c1] = (float)c;
            B[t * cols + c0] = B[t * cols + c1] = (float)s;
        }
}

static pe_dx_variant claim_rope(size_t hd, size_t rd, pe_rope_layout layout)
{
    pe_dx_variant v;
    pe_dx_variant_init(&v);
    v.rope.base = 10000.0;
    v.rope.head_dim = hd;
    v.rope.rotary_dim = rd;
    v.rope.layout = layout;
    return v;
}

static bool has_code(const pe_dx_result *r, pe_dx_code c)
{
    for (size_t k = 0; k < r->n_findings; k++)
        if (r->findings[k].code == c)
            return true;
    return false;
}

/* The codes found are exactly `want` (a list ending in PE_DX_CODE_COUNT). */
static bool codes_are(const pe_dx_result *r, const pe_dx_code *want)
{
    size_t n = 0;
    for (; want[n] != PE_DX_CODE_COUNT; n++)
        if (!has_code(r, want[n]))
            return false;
    return r->n_findings == n;
}

static void print_result(const char *what, const pe_dx_result *r)
{
    fprintf(stderr, "  %s: %s, claimed max %.3g, best max %.3g, findings:", what,
            pe_dx_verdict_name(r->verdict), r->claimed.max_abs, r->best_errors.max_abs);
    for (size_t k = 0; k < r->n_findings; k++)
        fprintf(stderr, " %s", pe_dx_code_name(r->findings[k].code));
    fprintf(stderr, "\n");
}

/* posenc's own kernels on `best`: the rotated vectors it gives, with the
 * reversed rotation applied as conj (negate the second member of each pair
 * before and after). */
static void posenc_rotate(const pe_dx_variant *b, const int64_t *pos, size_t n, size_t width,
                          const float *x, float *y)
{
    double inv[512], att;
    int64_t *p = malloc(n * sizeof *p);
    float *xs = malloc(n * width * sizeof *xs);
    int64_t top = 0;
    for (size_t t = 0; t < n; t++) {
        p[t] = pos[t] + b->offset;
        if (p[t] > top)
            top = p[t];
    }
    CHECK(pe_rope_frequencies(&b->rope, (double)top + 1.0, inv, &att) == PE_OK,
          "best's frequencies compute");
    memcpy(xs, x, n * width * sizeof *xs);
    size_t half = b->rope.rotary_dim / 2, hd = b->rope.head_dim;
    if (b->reversed)
        for (size_t e = 0; e < n * width; e++) {
            size_t c = e % hd;
            bool second = b->rope.layout == PE_ROPE_HALF ? (c >= half && c < 2 * half)
                                                         : (c < 2 * half && c % 2 == 1);
            if (second)
                xs[e] = -xs[e];
        }
    pe_rope_apply(&b->rope, inv, b->attention_factor, p, n, width, xs, width, y, width);
    if (b->reversed)
        for (size_t e = 0; e < n * width; e++) {
            size_t c = e % hd;
            bool second = b->rope.layout == PE_ROPE_HALF ? (c >= half && c < 2 * half)
                                                         : (c < 2 * half && c % 2 == 1);
            if (second)
                y[e] = -y[e];
        }
    free(p);
    free(xs);
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t e = 0; e < n; e++)
        if (fabs((double)a[e] - b[e]) > m)
            m = fabs((double)a[e] - b[e]);
    return m;
}

static const pe_dx_tolerance tol = {1e-4, 1e-4};

/* One encoded case: diagnose, check the verdict and codes, and that best
 * (through posenc's kernels) reproduces the subject. Returns whether all
 * held (for the detection rates). */
static bool encoded_case(const char *what, const ref_rope *ref, const pe_dx_variant *claim,
                         size_t n, size_t width, int64_t first, pe_dx_verdict want_verdict,
                         const pe_dx_code *want, uint64_t seed, pe_dx_result *keep)
{
    float *x = malloc(n * width * sizeof *x), *y = malloc(n * width * sizeof *y);
    float *again = malloc(n * width * sizeof *again);
    int64_t *pos = malloc(n * sizeof *pos);
    for (size_t e = 0; e < n * width; e++)
        x[e] = (float)test_uniform(&seed, -1.0, 1.0);
    for (size_t t = 0; t < n; t++)
        pos[t] = first + (int64_t)t;
    ref_encode(ref, pos, n, width, x, y);

    pe_dx_subject s = {.kind = PE_DX_SUBJ_ROPE_ENCODED,
                       .rows = n,
                       .cols = width,
                       .x = x,
                       .a = y,
                       .positions = pos};
    pe_dx_result r;
    bool ok = pe_diagnose(&s, claim, tol, &r) == PE_OK;
    ok = ok && r.verdict == want_verdict && codes_are(&r, want);
    if (ok && want_verdict == PE_DX_EXPLAINED && r.best.precision == PE_DX_EXACT) {
        posenc_rotate(&r.best, pos, n, width, x, again);
        double d = max_diff(again, y, n * width);
        ok = d <= 2e-4;
        if (!ok)
            fprintf(stderr, "  %s: best through posenc differs by %.3g\n", what, d);
    }
    if (!ok)
        print_result(what, &r);
    if (keep)
        *keep = r;
    else
        pe_dx_result_free(&r);
    free(x);
    free(y);
    free(again);
    free(pos);
    return ok;
}

#define CODES(...) ((const pe_dx_code[]){__VA_ARGS__, PE_DX_CODE_COUNT})
#define NO_CODES ((const pe_dx_code[]){PE_DX_CODE_COUNT})

static void exact_and_float32(void)
{
    ref_rope r = ref_default(64, 64, 0);
    pe_dx_variant c = claim_rope(64, 64, PE_ROPE_HALF);
    CHECK(encoded_case("exact", &r, &c, 32, 128, 0, PE_DX_MATCH, NO_CODES, 1, NULL),
          "an exact subject matches with no findings");
    r.prec = P_F32;
    CHECK(encoded_case("float32 ordinary", &r, &c, 64, 128, 0, PE_DX_MATCH, NO_CODES, 2, NULL),
          "float32 angles at ordinary positions match with no findings");
    pe_dx_result res;
    CHECK(encoded_case("float32 at 1e5", &r, &c, 32, 128, 100000, PE_DX_MATCH,
                       CODES(PE_DX_LOW_PRECISION), 3, &res),
          "float32 angles at 1e5: match with low_precision only");
    CHECK(res.best.precision == PE_DX_FLOAT32, "precision float32 (got %s)",
          pe_dx_precision_name(res.best.precision));
    CHECK(res.claimed.max_abs > 1e-4, "float32 at 1e5 is visibly off (%.3g)", res.claimed.max_abs);
    pe_dx_result_free(&res);
}

static void single_findings(void)
{
    pe_dx_result res;
    pe_dx_variant c = claim_rope(64, 64, PE_ROPE_HALF);

    ref_rope r = ref_default(64, 64, 1); /* interleaved computed, half claimed */
    CHECK(encoded_case("layout", &r, &c, 32, 128, 0, PE_DX_EXPLAINED, CODES(PE_DX_LAYOUT_SWAPPED),
                       4, &res),
          "interleaved for half: layout_swapped");
    CHECK(res.best.rope.layout == PE_ROPE_INTERLEAVED, "evidence: interleaved");
    pe_dx_result_free(&res);

    r = ref_default(64, 64, 0);
    r.reversed = 1;
    CHECK(encoded_case("reversed", &r, &c, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_ROTATION_REVERSED), 5, NULL),
          "rotation by -theta: rotation_reversed");

    r = ref_default(64, 64, 0);
    r.offset = -3;
    CHECK(encoded_case("offset", &r, &c, 32, 128, 10, PE_DX_EXPLAINED, CODES(PE_DX_POSITION_OFFSET),
                       6, &res),
          "positions shifted: position_offset");
    CHECK(res.best.offset == -3, "evidence: offset -3 (got %lld)", (long long)res.best.offset);
    pe_dx_result_free(&res);

    r = ref_default(64, 64, 0);
    r.base = 500000.0;
    CHECK(encoded_case("base", &r, &c, 48, 128, 0, PE_DX_EXPLAINED, CODES(PE_DX_BASE_MISMATCH), 7,
                       &res),
          "another base: base_mismatch");
    CHECK(fabs(res.best.rope.base - 500000.0) < 1e-6, "evidence: base 5e5 (got %.9g)",
          res.best.rope.base);
    pe_dx_result_free(&res);

    static const struct {
        double num, den_delta;
        pe_dx_formula f;
    } forms[] = {{1.0, 0, PE_DX_FORMULA_PAIR_INDEX},
                 {2.0, -1, PE_DX_FORMULA_D_MINUS_1},
                 {2.0, 1, PE_DX_FORMULA_D_PLUS_1}};
    for (size_t k = 0; k < ARRAY_LEN(forms); k++) {
        r = ref_default(64, 64, 0);
        r.exp_num = forms[k].num;
        r.exp_den = 64 + forms[k].den_delta;
        CHECK(encoded_case("formula", &r, &c, 32, 128, 0, PE_DX_EXPLAINED,
                           CODES(PE_DX_FREQUENCY_FORMULA), 8 + k, &res),
              "exponent built wrongly (%d): frequency_formula", (int)k);
        CHECK(res.best.formula == forms[k].f, "evidence: the formula (%d)", (int)k);
        pe_dx_result_free(&res);
    }

    /* partial rotary: frequencies over head_dim instead of rotary_dim */
    pe_dx_variant cp = claim_rope(64, 32, PE_ROPE_HALF);
    r = ref_default(64, 32, 0);
    r.exp_den = 64;
    CHECK(encoded_case("rotary freq dim", &r, &cp, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_ROTARY_DIM_MISMATCH), 11, &res),
          "frequencies from head_dim: rotary_dim_mismatch");
    CHECK(res.best.frequency_dim == 64 && res.best.rope.rotary_dim == 32,
          "evidence: rotary_dim 32, frequency_dim 64 (got %zu, %zu)", res.best.rope.rotary_dim,
          res.best.frequency_dim);
    pe_dx_result_free(&res);

    /* another count of rotated channels */
    r = ref_default(64, 64, 0);
    CHECK(encoded_case("rotary count", &r, &cp, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_ROTARY_DIM_MISMATCH), 12, &res),
          "all channels rotated where 32 were claimed: rotary_dim_mismatch");
    CHECK(res.best.rope.rotary_dim == 64, "evidence: rotary_dim 64 (got %zu)",
          res.best.rope.rotary_dim);
    pe_dx_result_free(&res);

    /* the rotation over the whole vector instead of per head */
    r = ref_default(128, 128, 0);
    CHECK(encoded_case("head dim", &r, &c, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_HEAD_DIM_MISMATCH), 13, &res),
          "whole-vector rotation: head_dim_mismatch");
    CHECK(res.best.rope.head_dim == 128, "evidence: head_dim 128 (got %zu)",
          res.best.rope.head_dim);
    pe_dx_result_free(&res);

    /* scalings: one where none was claimed */
    static const struct {
        int sc;
        double factor, orig;
        pe_rope_scaling_type type;
    } scs[] = {{SC_LINEAR, 4, 0, PE_ROPE_SCALING_LINEAR},
               {SC_LLAMA3, 8, 8192, PE_ROPE_SCALING_LLAMA3},
               {SC_YARN, 4, 4096, PE_ROPE_SCALING_YARN}};
    for (size_t k = 0; k < ARRAY_LEN(scs); k++) {
        r = ref_default(64, 64, 0);
        r.base = 500000.0;
        r.scaling = scs[k].sc;
        r.factor = scs[k].factor;
        r.orig = scs[k].orig;
        pe_dx_variant cb = c;
        cb.rope.base = 500000.0;
        CHECK(encoded_case("scaling", &r, &cb, 64, 128, 0, PE_DX_EXPLAINED,
                           CODES(PE_DX_SCALING_MISMATCH), 14 + k, &res),
              "scaling %d where none was claimed: scaling_mismatch", (int)k);
        CHECK(res.best.rope.scaling.type == scs[k].type &&
                  fabs(res.best.rope.scaling.factor - scs[k].factor) < 1e-9,
              "evidence: scaling type %d factor %g (got %d, %g)", (int)k, scs[k].factor,
              (int)res.best.rope.scaling.type, res.best.rope.scaling.factor);
        pe_dx_result_free(&res);
    }

    /* dynamic NTK past the original context: positions 3000..3063 */
    r = ref_default(64, 64, 0);
    r.scaling = SC_DYNAMIC;
    r.factor = 4;
    r.orig = 2048;
    r.seq_len = 3064;
    CHECK(encoded_case("dynamic", &r, &c, 64, 128, 3000, PE_DX_EXPLAINED,
                       CODES(PE_DX_SCALING_MISMATCH), 21, &res),
          "dynamic where none was claimed: scaling_mismatch");
    CHECK(res.best.rope.scaling.type == PE_ROPE_SCALING_DYNAMIC &&
              res.best.rope.scaling.factor == 4 &&
              res.best.rope.scaling.original_max_position_embeddings == 2048,
          "evidence: dynamic factor 4 original 2048 (got %d, %g, %g)",
          (int)res.best.rope.scaling.type, res.best.rope.scaling.factor,
          res.best.rope.scaling.original_max_position_embeddings);
    pe_dx_result_free(&res);

    /* none where one was claimed */
    r = ref_default(64, 64, 0);
    pe_dx_variant cl = c;
    cl.rope.scaling.type = PE_ROPE_SCALING_LINEAR;
    cl.rope.scaling.factor = 2.0;
    CHECK(encoded_case("scaling dropped", &r, &cl, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_SCALING_MISMATCH), 17, &res),
          "linear claimed, none computed: scaling_mismatch");
    CHECK(res.best.rope.scaling.type == PE_ROPE_SCALING_NONE, "evidence: none");
    pe_dx_result_free(&res);

    /* a dropped YaRN attention factor */
    r = ref_default(64, 64, 0);
    r.scaling = SC_YARN;
    r.factor = 4;
    r.orig = 4096;
    r.drop_yarn_factor = 1;
    pe_dx_variant cy = c;
    cy.rope.scaling.type = PE_ROPE_SCALING_YARN;
    cy.rope.scaling.factor = 4;
    cy.rope.scaling.original_max_position_embeddings = 4096;
    cy.rope.scaling.truncate = true;
    CHECK(encoded_case("yarn factor", &r, &cy, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_ATTENTION_FACTOR), 18, &res),
          "dropped yarn factor: attention_factor");
    CHECK(res.best.attention_factor == 1.0, "evidence: factor 1 (got %.9g)",
          res.best.attention_factor);
    pe_dx_result_free(&res);

    /* bfloat16 angles */
    r = ref_default(64, 64, 0);
    r.prec = P_BF16;
    CHECK(encoded_case("bf16", &r, &c, 32, 128, 0, PE_DX_EXPLAINED, CODES(PE_DX_LOW_PRECISION), 19,
                       &res),
          "bfloat16 angles: low_precision");
    CHECK(res.best.precision == PE_DX_BFLOAT16, "evidence: bfloat16 (got %s)",
          pe_dx_precision_name(res.best.precision));
    pe_dx_result_free(&res);
    r.prec = P_F16;
    CHECK(encoded_case("f16", &r, &c, 32, 128, 0, PE_DX_EXPLAINED, CODES(PE_DX_LOW_PRECISION), 20,
                       &res),
          "float16 angles: low_precision");
    CHECK(res.best.precision == PE_DX_FLOAT16, "evidence: float16 (got %s)",
          pe_dx_precision_name(res.best.precision));
    pe_dx_result_free(&res);
}

/* posenc's own cos/sin cache for best: pe_rope_apply on x = NULL gives
 * [cos | sin] (half) or [c0, s0, ...] (interleaved) per row. */
static void posenc_cache(const pe_dx_variant *b, const int64_t *pos, size_t n, size_t cols,
                         float *cosv, float *sinv)
{
    size_t rd = b->rope.rotary_dim, half = rd / 2;
    double inv[512], att;
    int64_t *p = malloc(n * sizeof *p);
    float *row = malloc(n * rd * sizeof *row);
    int64_t top = 0;
    for (size_t t = 0; t < n; t++) {
        p[t] = pos[t] + b->offset;
        top = p[t] > top ? p[t] : top;
    }
    pe_rope one = b->rope;
    one.head_dim = rd;
    CHECK(pe_rope_frequencies(&one, (double)top + 1.0, inv, &att) == PE_OK,
          "best's frequencies compute");
    pe_rope_apply(&one, inv, b->attention_factor, p, n, rd, NULL, rd, row, rd);
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < half; i++) {
            bool il = one.layout == PE_ROPE_INTERLEAVED;
            float c = row[t * rd + (il ? 2 * i : i)];
            float s = row[t * rd + (il ? 2 * i + 1 : half + i)];
            if (b->reversed)
                s = -s;
            if (b->sin_cos_swapped) {
                float tmp = c;
                c = s;
                s = tmp;
            }
            size_t c0 = i, c1 = i;
            if (cols == rd) {
                c0 = il ? 2 * i : i;
                c1 = il ? 2 * i + 1 : i + half;
            }
            cosv[t * cols + c0] = cosv[t * cols + c1] = c;
            sinv[t * cols + c0] = sinv[t * cols + c1] = s;
        }
    free(p);
    free(row);
}

static bool cache_case(const char *what, const ref_rope *ref, int swap, const pe_dx_variant *claim,
                       size_t n, size_t cols, int64_t first, pe_dx_verdict want_verdict,
                       const pe_dx_code *want, pe_dx_result *keep)
{
    float *cv = malloc(n * cols * sizeof *cv), *sv = malloc(n * cols * sizeof *sv);
    float *c2 = malloc(n * cols * sizeof *c2), *s2 = malloc(n * cols * sizeof *s2);
    int64_t *pos = malloc(n * sizeof *pos);
    for (size_t t = 0; t < n; t++)
        pos[t] = first + (int64_t)t;
    ref_cache(ref, pos, n, cols, swap, cv, sv);
    pe_dx_subject s = {.kind = PE_DX_SUBJ_ROPE_CACHE,
                       .rows = n,
                       .cols = cols,
                       .a = cv,
                       .b = sv,
                       .positions = pos};
    pe_dx_result r;
    bool ok = pe_diagnose(&s, claim, tol, &r) == PE_OK;
    ok = ok && r.verdict == want_verdict && codes_are(&r, want);
    if (ok && want_verdict == PE_DX_EXPLAINED && r.best.precision == PE_DX_EXACT) {
        posenc_cache(&r.best, pos, n, cols, c2, s2);
        double d = fmax(max_diff(c2, cv, n * cols), max_diff(s2, sv, n * cols));
        ok = d <= 2e-4;
        if (!ok)
            fprintf(stderr, "  %s: best through posenc differs by %.3g\n", what, d);
    }
    if (!ok)
        print_result(what, &r);
    if (keep)
        *keep = r;
    else
        pe_dx_result_free(&r);
    free(cv);
    free(sv);
    free(c2);
    free(s2);
    free(pos);
    return ok;
}

static void caches(void)
{
    pe_dx_result res;
    pe_dx_variant c = claim_rope(64, 64, PE_ROPE_HALF);
    ref_rope r = ref_default(64, 64, 0);

    CHECK(cache_case("cache exact", &r, 0, &c, 64, 64, 0, PE_DX_MATCH, NO_CODES, NULL),
          "an exact HF cache matches");
    CHECK(cache_case("cache vllm exact", &r, 0, &c, 64, 32, 0, PE_DX_MATCH, NO_CODES, NULL),
          "an exact half-width cache matches");
    CHECK(cache_case("cache swapped", &r, 1, &c, 64, 64, 0, PE_DX_EXPLAINED,
                     CODES(PE_DX_SIN_COS_SWAPPED), NULL),
          "cos and sin exchanged: sin_cos_swapped");
    r.interleaved = 1;
    CHECK(cache_case("cache layout", &r, 0, &c, 64, 64, 0, PE_DX_EXPLAINED,
                     CODES(PE_DX_LAYOUT_SWAPPED), NULL),
          "repeat_interleave cache for half: layout_swapped");
    r = ref_default(64, 64, 0);
    r.reversed = 1;
    CHECK(cache_case("cache reversed", &r, 0, &c, 64, 32, 0, PE_DX_EXPLAINED,
                     CODES(PE_DX_ROTATION_REVERSED), NULL),
          "negated sin: rotation_reversed");
    r = ref_default(64, 64, 0);
    r.extra_factor = 0.5;
    CHECK(cache_case("cache factor", &r, 0, &c, 64, 32, 0, PE_DX_EXPLAINED,
                     CODES(PE_DX_ATTENTION_FACTOR), &res),
          "cos and sin halved: attention_factor");
    CHECK(res.best.attention_factor == 0.5, "evidence: factor 0.5 (got %.9g)",
          res.best.attention_factor);
    pe_dx_result_free(&res);
    /* pairs: swapped with an offset; interleaved with another base */
    r = ref_default(64, 64, 0);
    r.offset = 7;
    CHECK(cache_case("cache swapped+offset", &r, 1, &c, 64, 64, 0, PE_DX_EXPLAINED,
                     CODES(PE_DX_SIN_COS_SWAPPED, PE_DX_POSITION_OFFSET), NULL),
          "swapped with offset 7: both found");
    r = ref_default(64, 64, 1);
    r.base = 1000000.0;
    CHECK(cache_case("cache layout+base", &r, 0, &c, 64, 64, 0, PE_DX_EXPLAINED,
                     CODES(PE_DX_LAYOUT_SWAPPED, PE_DX_BASE_MISMATCH), NULL),
          "interleaved cache with base 1e6: both found");
}

static void pairs(void)
{
    pe_dx_result res;
    pe_dx_variant c = claim_rope(64, 64, PE_ROPE_HALF);

    ref_rope r = ref_default(64, 64, 1);
    r.base = 500000.0;
    CHECK(encoded_case("interleaved+base", &r, &c, 48, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_LAYOUT_SWAPPED, PE_DX_BASE_MISMATCH), 30, NULL),
          "interleaved pairs with base 5e5: both found");

    r = ref_default(64, 64, 0);
    r.offset = 5;
    pe_dx_variant ci = claim_rope(64, 64, PE_ROPE_INTERLEAVED);
    CHECK(encoded_case("half+offset", &r, &ci, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_LAYOUT_SWAPPED, PE_DX_POSITION_OFFSET), 31, &res),
          "half layout with offset 5 for interleaved: both found");
    CHECK(res.best.offset == 5 && res.best.rope.layout == PE_ROPE_HALF, "evidence: half, offset 5");
    pe_dx_result_free(&res);

    /* a dropped YaRN attention factor at bfloat16 precision */
    r = ref_default(64, 64, 0);
    r.scaling = SC_YARN;
    r.factor = 4;
    r.orig = 4096;
    r.drop_yarn_factor = 1;
    r.prec = P_BF16;
    pe_dx_variant cy = c;
    cy.rope.scaling.type = PE_ROPE_SCALING_YARN;
    cy.rope.scaling.factor = 4;
    cy.rope.scaling.original_max_position_embeddings = 4096;
    cy.rope.scaling.truncate = true;
    CHECK(encoded_case("yarn factor bf16", &r, &cy, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_ATTENTION_FACTOR, PE_DX_LOW_PRECISION), 32, &res),
          "dropped yarn factor at bfloat16: attention_factor + low_precision");
    CHECK(res.best.attention_factor == 1.0 && res.best.precision == PE_DX_BFLOAT16,
          "evidence: factor 1, bfloat16 (got %.6g, %s)", res.best.attention_factor,
          pe_dx_precision_name(res.best.precision));
    pe_dx_result_free(&res);

    r = ref_default(64, 64, 0);
    r.reversed = 1;
    r.base = 1000000.0;
    CHECK(encoded_case("reversed+base", &r, &c, 32, 128, 0, PE_DX_EXPLAINED,
                       CODES(PE_DX_ROTATION_REVERSED, PE_DX_BASE_MISMATCH), 33, NULL),
          "reversed with base 1e6: both found");

    r = ref_default(64, 64, 0);
    r.scaling = SC_LINEAR;
    r.factor = 2;
    r.offset = 1;
    CHECK(encoded_case("linear+offset", &r, &c, 32, 128, 4, PE_DX_EXPLAINED,
                       CODES(PE_DX_SCALING_MISMATCH, PE_DX_POSITION_OFFSET), 34, NULL),
          "linear 2 with offset 1: both found");
}

/* Subjects no variant explains: random numbers, constants, huge values. */
static void adversarial(void)
{
    enum { N = 32, W = 128 };
    static float x[N * W], y[N * W], cs[N * 64], sn[N * 64];
    int64_t pos[N];
    uint64_t seed = 77;
    pe_dx_variant c = claim_rope(64, 64, PE_ROPE_HALF);
    pe_dx_result r;

    for (size_t t = 0; t < N; t++)
        pos[t] = (int64_t)t;
    for (size_t e = 0; e < N * W; e++) {
        x[e] = (float)test_uniform(&seed, -1, 1);
        y[e] = (float)test_uniform(&seed, -1, 1);
    }
    pe_dx_subject s =
        {.kind = PE_DX_SUBJ_ROPE_ENCODED, .rows = N, .cols = W, .x = x, .a = y, .positions = pos};
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "random encoded: unexplained");
    pe_dx_result_free(&r);

    for (size_t e = 0; e < N * W; e++)
        y[e] = 3.0f;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "constant encoded: unexplained");
    pe_dx_result_free(&r);

    for (size_t e = 0; e < N * W; e++)
        y[e] = (e % 2 ? -1 : 1) * 3e38f;
    CHECK(pe_diagnose(&s, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "huge finite encoded: unexplained");
    pe_dx_result_free(&r);

    for (size_t e = 0; e < N * 64; e++) {
        cs[e] = (float)test_uniform(&seed, -1, 1);
        sn[e] = (float)test_uniform(&seed, -1, 1);
    }
    pe_dx_subject sc =
        {.kind = PE_DX_SUBJ_ROPE_CACHE, .rows = N, .cols = 64, .a = cs, .b = sn, .positions = pos};
    CHECK(pe_diagnose(&sc, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "random cache: unexplained");
    pe_dx_result_free(&r);
    for (size_t e = 0; e < N * 64; e++)
        cs[e] = sn[e] = 0.0f;
    CHECK(pe_diagnose(&sc, &c, tol, &r) == PE_OK && r.verdict == PE_DX_UNEXPLAINED,
          "all-zero cache: unexplained");
    pe_dx_result_free(&r);

    /* shapes the claim cannot have */
    pe_dx_subject bad = sc;
    bad.cols = 48;
    CHECK(pe_diagnose(&bad, &c, tol, &r) == PE_EINVAL,
          "a cache width that is neither rotary_dim nor rotary_dim/2: EINVAL");
    pe_dx_result_free(&r);
}

/* Detection over generated cases: random claimed bases and layouts,
 * inputs, and one or two bugs among eight kinds at a time. Prints the
 * rate per code, alone and in pairs; every case must be found. */
enum {
    BUG_LAYOUT,
    BUG_REVERSED,
    BUG_OFFSET,
    BUG_BASE,
    BUG_FORMULA,
    BUG_SCALING,
    BUG_FACTOR,
    BUG_BF16,
    BUG_KINDS
};

static pe_dx_code apply_bug(int bug, ref_rope *r, int il, double cbase, uint64_t *seed)
{
    switch (bug) {
    case BUG_LAYOUT:
        r->interleaved = !il;
        return PE_DX_LAYOUT_SWAPPED;
    case BUG_REVERSED:
        r->reversed = 1;
        return PE_DX_ROTATION_REVERSED;
    case BUG_OFFSET:
        r->offset = (int64_t)test_uniform(seed, 1, 40);
        return PE_DX_POSITION_OFFSET;
    case BUG_BASE:
        r->base = round(cbase * test_uniform(seed, 2, 50) / 1000) * 1000;
        return PE_DX_BASE_MISMATCH;
    case BUG_FORMULA: {
        int f = (int)test_uniform(seed, 0, 3);
        r->exp_num = f == 0 ? 1.0 : 2.0;
        r->exp_den = (double)r->rd + (f == 1 ? -1 : f == 2 ? 1 : 0);
        return PE_DX_FREQUENCY_FORMULA;
    }
    case BUG_SCALING: {
        static const int kinds[3] = {SC_LINEAR, SC_LLAMA3, SC_YARN};
        static const double factors[4] = {2, 4, 8, 16};
        static const double origs[3] = {2048, 4096, 8192};
        r->scaling = kinds[(int)test_uniform(seed, 0, 3)];
        r->factor = factors[(int)test_uniform(seed, 0, 4)];
        r->orig = origs[(int)test_uniform(seed, 0, 3)];
        return PE_DX_SCALING_MISMATCH;
    }
    case BUG_FACTOR:
        r->extra_factor = round(test_uniform(seed, 0.3, 3.0) * 100) / 100;
        if (fabs(r->extra_factor - 1.0) < 0.05)
            r->extra_factor = 0.5;
        return PE_DX_ATTENTION_FACTOR;
    default:
        r->prec = P_BF16;
        return PE_DX_LOW_PRECISION;
    }
}

static void detection_rates(void)
{
    static const double bases[] = {10000.0, 500000.0, 1000000.0, 50000.0};
    uint64_t seed = 2024;
    int tried[PE_DX_CODE_COUNT] = {0}, found[PE_DX_CODE_COUNT] = {0};
    int pair_tried = 0, pair_found = 0, single_tried = 0, single_found = 0;

    for (int k = 0; k < 160; k++) {
        int il = (int)test_uniform(&seed, 0, 2);
        double cbase = bases[(int)test_uniform(&seed, 0, 4)];
        pe_dx_variant c = claim_rope(64, 64, il ? PE_ROPE_INTERLEAVED : PE_ROPE_HALF);
        c.rope.base = cbase;
        ref_rope r = ref_default(64, 64, il);
        r.base = cbase;
        int b0 = (int)test_uniform(&seed, 0, BUG_KINDS);
        int b1 = (int)test_uniform(&seed, 0, BUG_KINDS + 3); /* >= KINDS: none */
        /* base and formula both move the base: one at a time. A formula
         * bug inside a scaling has no single meaning (YaRN's correction
         * range reads the base itself), so that pair is not generated. */
        bool both_base = (b0 == BUG_BASE && b1 == BUG_FORMULA) ||
                         (b0 == BUG_FORMULA && b1 == BUG_BASE);
        bool formula_scaled = (b0 == BUG_SCALING && b1 == BUG_FORMULA) ||
                              (b0 == BUG_FORMULA && b1 == BUG_SCALING);
        if (b1 == b0 || both_base || formula_scaled)
            b1 = BUG_KINDS;
        pe_dx_code want[3];
        size_t nw = 0;
        want[nw++] = apply_bug(b0, &r, il, cbase, &seed);
        if (b1 < BUG_KINDS)
            want[nw++] = apply_bug(b1, &r, il, cbase, &seed);
        want[nw] = PE_DX_CODE_COUNT;
        bool ok = encoded_case("generated", &r, &c, 64, 128, 0, PE_DX_EXPLAINED, want, seed, NULL);
        if (!ok)
            fprintf(stderr, "    bugs %d %d, base %g, layout %d\n", b0, b1, cbase, il);
        for (size_t q = 0; q < nw; q++) {
            tried[want[q]]++;
            found[want[q]] += ok;
        }
        pair_tried += nw == 2;
        pair_found += nw == 2 && ok;
        single_tried += nw == 1;
        single_found += nw == 1 && ok;
    }
    int total = 0, hit = 0;
    fprintf(stderr, "diagnose rope detection (encoded, 64x128):");
    for (int q = 0; q < PE_DX_CODE_COUNT; q++)
        if (tried[q]) {
            fprintf(stderr, " %s %d/%d", pe_dx_code_name((pe_dx_code)q), found[q], tried[q]);
            total += tried[q];
            hit += found[q];
        }
    fprintf(stderr, "; alone %d/%d, pairs %d/%d\n", single_found, single_tried, pair_found,
            pair_tried);
    CHECK(hit == total, "every generated finding detected (%d/%d)", hit, total);
}

void test_diagnose_rope(void)
{
    exact_and_float32();
    single_findings();
    caches();
    pairs();
    adversarial();
    detection_rates();
}

/*
 * test_mrope.c - multimodal RoPE (pe_mrope_apply): every style on text
 * tokens gives pe_rope_apply's bits (both layouts, partial rotary, with and
 * without the cos/sin cache); each style's slot assignment against the
 * contract's rules written out slot by slot; vision triples against a
 * per-slot complex-multiplication reference; pe_mrope_check's refusals.
 */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "posenc.h"
#include "test_list.h"

enum { HD = 24, ROT = 20, HALF = ROT / 2, N = 5, W = 2 * HD };

/* The configuration of every case and its frequencies (attention factor 1). */
static pe_rope rope_freqs(pe_rope_layout layout, double inv[HALF])
{
    pe_rope r = {.base = 500.0, .head_dim = HD, .rotary_dim = ROT, .layout = layout};
    double att = 0;

    CHECK(pe_rope_frequencies(&r, 1.0, inv, &att) == PE_OK && att == 1.0, "frequencies");
    return r;
}

static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)sin(0.7 * (double)i + 0.3) * 2.0f;
}

/* t = h = w: the bits of the 1-D rotation, cached or not. */
static void text_is_1d(void)
{
    static const pe_mrope styles[] = {{PE_MROPE_CHUNKED, {4, 3, 3}},
                                      {PE_MROPE_INTERLEAVED, {4, 3, 3}},
                                      {PE_MROPE_ERNIE, {4, 3, 3}}};
    int64_t pos[N] = {0, 1, 7, 300, 123456789}, pos3[3 * N];
    float x[N * W], want[N * W], got[N * W];
    double inv[HALF], att = 1.0, table[8 * HALF * 2];

    fill(x, N * W);
    for (size_t i = 0; i < N; i++)
        pos3[3 * i] = pos3[3 * i + 1] = pos3[3 * i + 2] = pos[i];
    for (int layout = 0; layout < 2; layout++) {
        pe_rope r = rope_freqs((pe_rope_layout)layout, inv);
        pe_rope_table(inv, HALF, att, 8, table);
        for (size_t s = 0; s < 3; s++) {
            CHECK(pe_mrope_check(&styles[s], HALF) == PE_OK, "section fits");
            pe_rope cached = r;
            cached.cache = table;
            cached.cache_rows = 8;
            pe_rope_apply(&cached, inv, att, pos, N, W, x, W, want, W);
            pe_mrope_apply(&r, &styles[s], inv, att, pos3, N, W, x, W, got, W);
            CHECK(memcmp(want, got, sizeof want) == 0,
                  "style %zu layout %d: text = 1-D, bit for bit", s, layout);
            pe_rope_apply(&r, inv, att, pos, N, W, NULL, W, want, W);
            pe_mrope_apply(&r, &styles[s], inv, att, pos3, N, W, NULL, W, got, W);
            CHECK(memcmp(want, got, sizeof want) == 0, "style %zu layout %d: bare table = 1-D", s,
                  layout);
        }
    }
}

/* The contract's assignment, slot by slot, for sections [4, 3, 3]. */
static void slot_rules(void)
{
    static const char chunked[] = "tttthhhwww", interleaved[] = "thwthwthwt",
                      ernie[] = "hwhwhwtttt";
    const char *want[] = {chunked, interleaved, ernie};
    for (int s = 0; s < 3; s++) {
        pe_mrope m = {(pe_mrope_style)(PE_MROPE_CHUNKED + s), {4, 3, 3}};
        char got[HALF + 1] = {0};
        for (size_t j = 0; j < HALF; j++)
            got[j] = "thw"[pe_mrope_axis(&m, j)];
        CHECK(strcmp(got, want[s]) == 0, "style %d slots %s, expected %s", s, got, want[s]);
    }
    /* Qwen3-VL's [24, 20, 20]: h up to slot 58, w up to 59, t after */
    pe_mrope q3 = {PE_MROPE_INTERLEAVED, {24, 20, 20}};
    CHECK(pe_mrope_axis(&q3, 58) == 1 && pe_mrope_axis(&q3, 59) == 2 &&
              pe_mrope_axis(&q3, 61) == 0 && pe_mrope_axis(&q3, 62) == 0,
          "interleaved [24, 20, 20]: slots 58 h, 59 w, 61 and 62 t");
}

/* Vision triples: each pair turned by its component, as a complex product. */
static void vision_triples(void)
{
    pe_mrope m = {PE_MROPE_CHUNKED, {4, 3, 3}};
    int64_t pos3[3 * N] = {3, 3, 3, 5, 3, 4, 5, 4, 3, 9, 8, 7, 1000, 2, 70000};
    float x[N * W], got[N * W];
    double inv[HALF], att = 1.0, worst = 0;

    fill(x, N * W);
    for (int layout = 0; layout < 2; layout++) {
        pe_rope r = rope_freqs((pe_rope_layout)layout, inv);
        pe_mrope_apply(&r, &m, inv, att, pos3, N, W, x, W, got, W);
        for (size_t i = 0; i < N; i++)
            for (size_t h = 0; h < W / HD; h++)
                for (size_t j = 0; j < HALF; j++) {
                    size_t a = h * HD + (layout ? 2 * j : j),
                           b = h * HD + (layout ? 2 * j + 1 : j + HALF);
                    double p = (double)pos3[3 * i + (j < 4 ? 0 : j < 7 ? 1 : 2)];
                    double complex z = ((double)x[i * W + a] + I * (double)x[i * W + b]) *
                                       cexp(I * p * pow(500.0, -2.0 * (double)j / ROT));
                    worst = fmax(worst, fabs(creal(z) - got[i * W + a]));
                    worst = fmax(worst, fabs(cimag(z) - got[i * W + b]));
                }
        for (size_t i = 0; i < N; i++)
            for (size_t c = ROT; c < HD; c++)
                CHECK(got[i * W + c] == x[i * W + c], "pass-through channel %zu unchanged", c);
    }
    CHECK(worst < 3e-6, "vision triples within float32 rounding of the complex reference (%g)",
          worst);
}

static void refusals(void)
{
    pe_mrope bad_sum = {PE_MROPE_CHUNKED, {4, 3, 2}}, bad_ernie = {PE_MROPE_ERNIE, {4, 4, 2}};
    pe_mrope ernie = {PE_MROPE_ERNIE, {4, 3, 3}}, none = {PE_MROPE_NONE, {0, 0, 0}};
    pe_mrope huge = {PE_MROPE_CHUNKED, {(size_t)-1, 6, 5}};

    CHECK(pe_mrope_check(&bad_sum, HALF) == PE_EINVAL, "a section that does not sum to half");
    CHECK(pe_mrope_check(&bad_ernie, HALF) == PE_EINVAL, "ernie needs s_h == s_w");
    CHECK(pe_mrope_check(&ernie, HALF) == PE_OK, "ernie [4, 3, 3]");
    CHECK(pe_mrope_check(&none, HALF) == PE_OK, "no mrope fits anything");
    CHECK(pe_mrope_check(&huge, HALF) == PE_EINVAL, "a section that wraps the sum");
}

void test_mrope(void)
{
    text_is_1d();
    slot_rules();
    vision_triples();
    refusals();
}

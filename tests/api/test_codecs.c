/*
 * test_codecs.c - the fast codecs against their plain references.
 *
 * base64: the AVX2 kernels (when this CPU has AVX2) must give exactly what
 * the portable kernels give - the same bytes, the same text, and for bad
 * input the same NULL and the same reason - over random lengths, random
 * alignments, random write splits, every bad byte at every position of a
 * text, and every padding case. The portable kernels themselves are
 * pinned by the RFC 4648 vectors in test_api.c.
 *
 * float text: float_to_text() (Dragonbox's digits, number_shim.cc) must
 * write the same bytes as the reference with Schubfach's digits
 * (f32_shortest.h, float_text.c), and its text must read back (strtof) as
 * the value.
 */
#include "test_codecs.h"
#include "test_list.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "json/base64.h"
#include "json/base64_kernels.h"
#include "json/float_text.h"
#include "json/float_text_ref.h"

static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 11;
}

/* Decode with both kernel sets; true if they agree on everything. */
static bool decode_agrees(const base64_kernels *fast, const char *text, size_t len)
{
    size_t n_ref = 0, n_fast = 0;
    const char *why_ref = NULL, *why_fast = NULL;
    uint8_t *ref = base64_decode_with(&base64_portable_kernels, text, len, &n_ref, &why_ref);
    uint8_t *got = base64_decode_with(fast, text, len, &n_fast, &why_fast);
    bool same;
    if (!ref || !got)
        same = !ref && !got && why_ref && why_fast && strcmp(why_ref, why_fast) == 0;
    else
        same = n_ref == n_fast && memcmp(ref, got, n_ref) == 0;
    free(ref);
    free(got);
    return same;
}

/* Encode `n` bytes with a kernel set, in random pieces. */
static void encode_in_pieces(const base64_kernels *k, const uint8_t *bytes, size_t n, char *out,
                             uint64_t *state)
{
    base64_writer w = {.out = out};
    size_t at = 0;
    while (at < n) {
        size_t piece = next_random(state) % 4 == 0 ? n - at : next_random(state) % (n - at + 1);
        base64_write_with(k, &w, bytes + at, piece);
        at += piece;
    }
    base64_finish(&w);
}

static void test_base64_kernels_agree(const base64_kernels *fast)
{
    enum { MAX_LEN = 3000, SLACK = 64 };
    uint64_t state = 7;
    uint8_t *bytes = malloc(MAX_LEN + SLACK);                      /* owned */
    char *text_ref = malloc(base64_encoded_len(MAX_LEN) + SLACK);  /* owned */
    char *text_fast = malloc(base64_encoded_len(MAX_LEN) + SLACK); /* owned */
    int bad_encode = 0, bad_decode = 0;

    if (!bytes || !text_ref || !text_fast)
        goto done;
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = trial < 200 ? (size_t)trial : next_random(&state) % MAX_LEN;
        size_t align = next_random(&state) % 32, text_align = next_random(&state) % 32;
        for (size_t i = 0; i < n; i++)
            bytes[align + i] = (uint8_t)next_random(&state);
        size_t len = base64_encoded_len(n);
        encode_in_pieces(&base64_portable_kernels, bytes + align, n, text_ref, &state);
        memset(text_fast, '#', len + SLACK);
        encode_in_pieces(fast, bytes + align, n, text_fast + text_align, &state);
        if (memcmp(text_ref, text_fast + text_align, len) != 0 ||
            text_fast[text_align + len] != '#')
            bad_encode++;
        if (!decode_agrees(fast, text_fast + text_align, len))
            bad_decode++;
    }
    CHECK(bad_encode == 0, "%s base64 encoder differs from the portable one in %d of 3000 cases",
          fast->name, bad_encode);
    CHECK(bad_decode == 0, "%s base64 decoder differs from the portable one in %d of 3000 cases",
          fast->name, bad_decode);
done:
    free(bytes);
    free(text_ref);
    free(text_fast);
}

/* Every byte value at every position of a text of 25 groups (three AVX2
 * steps and a tail), with no, one and two '=' at the end. */
static void test_base64_errors_agree(const base64_kernels *fast)
{
    static const char *const ends[] = {"QUJD", "QUI=", "QQ=="};
    char text[101];
    int disagree = 0, accepted_bad = 0;
    uint64_t state = 11;

    for (size_t e = 0; e < ARRAY_LEN(ends); e++) {
        for (size_t i = 0; i < 96; i++)
            text[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                [next_random(&state) % 64];
        memcpy(text + 96, ends[e], 4);
        text[100] = '\0';
        for (size_t pos = 0; pos < 100; pos++) {
            char keep = text[pos];
            for (int c = 0; c < 256; c++) {
                text[pos] = (char)c;
                if (!decode_agrees(fast, text, 100))
                    disagree++;
                bool in_alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                   (c >= '0' && c <= '9') || c == '+' || c == '/';
                size_t n = 0;
                const char *why = NULL;
                uint8_t *got = base64_decode_with(fast, text, 100, &n, &why);
                if (!in_alphabet && pos < 96 && got)
                    accepted_bad++;
                free(got);
            }
            text[pos] = keep;
        }
    }
    CHECK(disagree == 0, "%s: %d bad-byte cases decode differently from the portable kernels",
          fast->name, disagree);
    CHECK(accepted_bad == 0, "%s accepted %d texts with a byte outside the alphabet", fast->name,
          accepted_bad);

    /* padding and lengths: wrong lengths, '=' inside, non-zero padding bits */
    static const char *const cases[] = {
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJD=",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJ",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQU",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQ===",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJ=",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUK=",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQR==",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJD=UJDQUJDQUJDQUJDQUJDQUJDQUJD",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJ=QUJD",
        "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQQ==QUJD",
        "====QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJD",
        "=",
        "==",
        "===",
        "====",
        "A===",
        "AA==",
        "AB==",
        "AAA=",
        "AAB=",
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        CHECK(decode_agrees(fast, cases[i], strlen(cases[i])),
              "%s decodes \"%s\" differently from the portable kernels", fast->name, cases[i]);
}

/* Inputs past the parallel threshold (2^18 groups) take the OpenMP path
 * in chunks: a bad character near the end of the last chunk must still be
 * found, and good input must decode the same as the portable code. */
static void test_base64_large(const base64_kernels *fast)
{
    size_t n = (size_t)3 << 19;                     /* 1.5 MiB of bytes: 2^19 groups */
    uint8_t *bytes = malloc(n);                     /* owned */
    char *text = malloc(base64_encoded_len(n) + 1); /* owned */
    uint64_t state = 5;

    if (!bytes || !text)
        goto done;
    for (size_t i = 0; i < n; i++)
        bytes[i] = (uint8_t)next_random(&state);
    base64_writer w = {.out = text};
    base64_write_with(fast, &w, bytes, n);
    base64_finish(&w);
    size_t len = base64_encoded_len(n), got_n = 0;
    const char *why = NULL;
    uint8_t *got = base64_decode_with(fast, text, len, &got_n, &why);
    CHECK(got && got_n == n && memcmp(got, bytes, n) == 0, "%s: 1.5 MiB round trip", fast->name);
    free(got);
    CHECK(decode_agrees(fast, text, len), "%s: 1.5 MiB decode agrees", fast->name);
    text[len - 9] = '*';
    CHECK(decode_agrees(fast, text, len), "%s: 1.5 MiB with a bad byte near the end agrees",
          fast->name);
    text[len - 9] = '=';
    CHECK(decode_agrees(fast, text, len), "%s: 1.5 MiB with '=' near the end agrees", fast->name);
done:
    free(bytes);
    free(text);
}

static void test_base64_dispatch(void)
{
    const base64_kernels *k = base64_kernels_for_cpu();
    printf("base64 kernels on this CPU: %s\n", k->name);
    CHECK(k == (base64_avx2_supported() ? &base64_avx2_kernels : &base64_portable_kernels),
          "base64 dispatch picks the AVX2 kernels exactly when the CPU has AVX2");
    if (!base64_avx2_supported()) {
        printf("no AVX2 on this CPU: the AVX2 base64 kernels are not tested here\n");
        return;
    }
    test_base64_kernels_agree(&base64_avx2_kernels);
    test_base64_errors_agree(&base64_avx2_kernels);
    test_base64_large(&base64_avx2_kernels);
}

static bool same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

uint64_t codecs_float_text_range(uint32_t first, uint32_t last)
{
    uint64_t mismatches = 0;
    for (uint64_t b = first; b <= last; b++) {
        uint32_t bits = (uint32_t)b;
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        char got[FLOAT_TEXT_MAX], want[FLOAT_TEXT_MAX];
        size_t got_len = float_to_text(v, got), want_len = float_to_text_schubfach(v, want);
        float back = strtof(got, NULL);
        if (got_len != want_len || strcmp(got, want) != 0 || strlen(got) != got_len ||
            got_len > FLOAT_TEXT_LONGEST || !same_float(back, v)) {
            if (mismatches < 5)
                printf("float bits 0x%08x: float_to_text \"%s\" (%zu), Schubfach \"%s\", reads "
                       "back as %.9g\n",
                       (unsigned)bits, got, got_len, want, (double)back);
            mismatches++;
        }
    }
    return mismatches;
}

/* A few million patterns: the edges of every binade (powers of two, the
 * lower-boundary case), all subnormals near zero and the largest ones,
 * small integers, the extremes, and random patterns. */
static void test_float_text_sampled(void)
{
    uint64_t bad = 0, state = 3;
    for (uint32_t biased = 0; biased < 255; biased++)
        for (uint32_t sign = 0; sign < 2; sign++) {
            uint32_t base = sign << 31 | biased << 23;
            bad += codecs_float_text_range(base, base + 2047);
            bad += codecs_float_text_range(base + 0x7FFFFF - 2047, base + 0x7FFFFF);
        }
    bad += codecs_float_text_range(0, 1u << 20); /* subnormals from 0 up */
    bad += codecs_float_text_range(0x80000000u, 0x80000000u + (1u << 16));
    bad += codecs_float_text_range(0x3F800000u, 0x3F800000u + (1u << 20)); /* 1 .. 1.125 */
    for (uint32_t n = 0; n <= 100000; n++) {                               /* integers */
        float v = (float)n;
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        bad += codecs_float_text_range(bits, bits);
    }
    for (int i = 0; i < 1000000; i++) {
        uint32_t bits = (uint32_t)(next_random(&state) >> 21);
        bad += codecs_float_text_range(bits, bits);
    }
    CHECK(bad == 0,
          "float_to_text differs from the Schubfach writer (or fails the round trip) "
          "for %llu sampled float32 patterns",
          (unsigned long long)bad);
}

/* JSON has no infinity: callers check answers finite before writing, and a
 * non-finite value that slips through is written as null, never an abort
 * of the whole server (Dragonbox asserts finiteness). */
static void test_float_text_non_finite(void)
{
    const float values[] = {INFINITY, -INFINITY, NAN, -NAN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char text[FLOAT_TEXT_MAX];
        size_t n = float_to_text(values[i], text);
        CHECK(n == 4 && strcmp(text, "null") == 0, "float_to_text(%g) wrote \"%s\" (%zu)",
              (double)values[i], text, n);
    }
}

void test_codecs(void)
{
    test_base64_dispatch();
    test_float_text_sampled();
    test_float_text_non_finite();
}

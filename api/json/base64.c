/*
 * base64.c - RFC 4648 base64, standard alphabet, strict padding: the
 * framing (lengths, padding, the last group, errors) and the portable inner
 * loops; base64_avx2.c has the AVX2 ones, picked at run time.
 */
#include "json/base64.h"
#include "json/base64_kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "posenc reads and writes float32 as little-endian bytes in place"
#endif

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Sextet of each byte; 0x80 marks bytes outside the alphabet. Built once
 * by a constant initializer so decoding needs no branch per character. */
#define B64_BAD 0x80
static const uint8_t sextets[256] = {
#define B64_ROW16                                                                                  \
    B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,      \
        B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD
    B64_ROW16,
    B64_ROW16,
    /* ' ' .. '/' */
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    62,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    63,
    /* '0' .. '?' */
    52,
    53,
    54,
    55,
    56,
    57,
    58,
    59,
    60,
    61,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    /* '@' .. 'O' */
    B64_BAD,
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    /* 'P' .. '_' */
    15,
    16,
    17,
    18,
    19,
    20,
    21,
    22,
    23,
    24,
    25,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    /* '`' .. 'o' */
    B64_BAD,
    26,
    27,
    28,
    29,
    30,
    31,
    32,
    33,
    34,
    35,
    36,
    37,
    38,
    39,
    40,
    /* 'p' .. DEL */
    41,
    42,
    43,
    44,
    45,
    46,
    47,
    48,
    49,
    50,
    51,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_BAD,
    B64_ROW16,
    B64_ROW16,
    B64_ROW16,
    B64_ROW16,
    B64_ROW16,
    B64_ROW16,
    B64_ROW16,
    B64_ROW16,
#undef B64_ROW16
};

/* The portable kernels: one table lookup per character, no branch per
 * character (the OR of the sextets flags any bad one at the end). */
static bool decode_groups_portable(const unsigned char *in, size_t groups, uint8_t *out)
{
    uint8_t bad = 0;
    for (size_t g = 0; g < groups; g++) {
        const unsigned char *q = in + 4 * g;
        uint8_t a = sextets[q[0]], b = sextets[q[1]], c = sextets[q[2]], d = sextets[q[3]];
        bad |= a | b | c | d;
        uint32_t triple = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | d;
        out[3 * g] = (uint8_t)(triple >> 16);
        out[3 * g + 1] = (uint8_t)(triple >> 8);
        out[3 * g + 2] = (uint8_t)triple;
    }
    return (bad & B64_BAD) == 0;
}

static void encode_groups_portable(const uint8_t *in, size_t groups, char *out)
{
    for (size_t g = 0; g < groups; g++) { /* the hot loop: no branches */
        const uint8_t *src = in + g * 3;
        uint32_t triple = (uint32_t)src[0] << 16 | (uint32_t)src[1] << 8 | src[2];
        char *dst = out + g * 4;
        dst[0] = alphabet[triple >> 18];
        dst[1] = alphabet[(triple >> 12) & 63];
        dst[2] = alphabet[(triple >> 6) & 63];
        dst[3] = alphabet[triple & 63];
    }
}

const base64_kernels base64_portable_kernels = {
    .name = "portable",
    .decode_groups = decode_groups_portable,
    .encode_groups = encode_groups_portable,
};

const base64_kernels *base64_kernels_for_cpu(void)
{
    /* base64_avx2_supported() reads the CPU model libgcc fills in before
     * main (no state of ours): cheap enough to ask on every call. */
    return base64_avx2_supported() ? &base64_avx2_kernels : &base64_portable_kernels;
}

/* Big inputs are decoded by the OpenMP team in chunks of this many groups
 * (256 KiB of text, so a chunk's input and output stay in L2). */
#define DECODE_CHUNK_GROUPS ((size_t)1 << 16)
#define DECODE_PARALLEL_MIN_GROUPS ((size_t)1 << 18)

size_t base64_decoded_len(const char *text, size_t len)
{
    if (len % 4 != 0)
        return SIZE_MAX;
    size_t pad = (len >= 1 && text[len - 1] == '=') + (len >= 2 && text[len - 2] == '=');
    return len / 4 * 3 - pad;
}

uint8_t *base64_decode_with(const base64_kernels *kernels, const char *text, size_t len,
                            size_t *out_len, const char **why)
{
    const unsigned char *in = (const unsigned char *)text;

    if (len % 4 != 0) {
        *why = "length is not a multiple of 4";
        return NULL;
    }
    size_t n = base64_decoded_len(text, len), pad = len / 4 * 3 - n;
    uint8_t *out = malloc(n ? n : 1); /* owned: returned to the caller */
    if (!out) {
        *why = NULL;
        return NULL;
    }
    /* Every group but the last: four alphabet characters, no padding. */
    size_t full = len == 0 ? 0 : len / 4 - 1, o = full * 3;
    size_t chunks = (full + DECODE_CHUNK_GROUPS - 1) / DECODE_CHUNK_GROUPS;
    bool all_valid = true, parallel = full >= DECODE_PARALLEL_MIN_GROUPS;
#pragma omp parallel for schedule(static) reduction(&& : all_valid) if (parallel)
    for (size_t c = 0; c < chunks; c++) {
        size_t g0 = c * DECODE_CHUNK_GROUPS;
        size_t groups = full - g0 < DECODE_CHUNK_GROUPS ? full - g0 : DECODE_CHUNK_GROUPS;
        all_valid = kernels->decode_groups(in + 4 * g0, groups, out + 3 * g0) && all_valid;
    }
    in += 4 * full;
    if (!all_valid) {
        free(out);
        *why = memchr(text, '=', len - 4 * (len > 0)) ? "misplaced padding"
                                                      : "character outside the base64 alphabet";
        return NULL;
    }
    if (len > 0) { /* the last group, which may end in one or two '=' */
        uint8_t v[4];
        for (size_t k = 0; k < 4; k++) {
            if (k >= 4 - pad) {
                v[k] = 0;
                continue;
            }
            v[k] = sextets[in[k]];
            if (v[k] & B64_BAD) {
                free(out);
                *why = in[k] == '=' ? "misplaced padding" : "character outside the base64 alphabet";
                return NULL;
            }
        }
        uint32_t triple = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
        if (pad > 0 && (triple & (pad == 2 ? 0xFFFFu : 0xFFu)) != 0) {
            free(out);
            *why = "non-zero bits in the padding";
            return NULL;
        }
        uint8_t bytes[3] = {(uint8_t)(triple >> 16), (uint8_t)(triple >> 8), (uint8_t)triple};
        for (size_t k = 0; k < 3 - pad; k++)
            out[o++] = bytes[k];
    }
    *out_len = n;
    return out;
}

uint8_t *base64_decode(const char *text, size_t len, size_t *out_len, const char **why)
{
    return base64_decode_with(base64_kernels_for_cpu(), text, len, out_len, why);
}

static void encode_group(char *dst, const uint8_t *src, size_t n)
{
    uint32_t triple = (uint32_t)src[0] << 16 | (uint32_t)(n > 1 ? src[1] : 0) << 8 |
                      (uint32_t)(n > 2 ? src[2] : 0);
    dst[0] = alphabet[(triple >> 18) & 63];
    dst[1] = alphabet[(triple >> 12) & 63];
    dst[2] = n > 1 ? alphabet[(triple >> 6) & 63] : '=';
    dst[3] = n > 2 ? alphabet[triple & 63] : '=';
}

size_t base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void base64_write_with(const base64_kernels *kernels, base64_writer *w, const void *bytes, size_t n)
{
    const uint8_t *src = bytes;

    while (w->ncarry > 0 && w->ncarry < 3 && n > 0) {
        w->carry[w->ncarry++] = *src++;
        n--;
    }
    if (w->ncarry == 3) {
        encode_group(w->out, w->carry, 3);
        w->out += 4;
        w->ncarry = 0;
    }
    size_t groups = n / 3;
    kernels->encode_groups(src, groups, w->out);
    w->out += groups * 4;
    src += groups * 3;
    n -= groups * 3;
    for (size_t k = 0; k < n; k++)
        w->carry[w->ncarry++] = src[k];
}

void base64_write(base64_writer *w, const void *bytes, size_t n)
{
    base64_write_with(base64_kernels_for_cpu(), w, bytes, n);
}

void base64_finish(base64_writer *w)
{
    if (w->ncarry == 0)
        return;
    encode_group(w->out, w->carry, w->ncarry);
    w->out += 4;
    w->ncarry = 0;
}

/*
 * base64.c - RFC 4648 base64, standard alphabet, strict padding.
 */
#include "base64.h"

#include <stdlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "posenc reads and writes float32 as little-endian bytes in place"
#endif

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

uint8_t *base64_decode(const char *text, size_t len, size_t *out_len,
                       const char **why)
{
    if (len % 4 != 0) {
        *why = "length is not a multiple of 4";
        return NULL;
    }
    size_t pad = 0;
    if (len >= 1 && text[len - 1] == '=')
        pad++;
    if (len >= 2 && text[len - 2] == '=')
        pad++;
    size_t n = len / 4 * 3 - pad;
    uint8_t *out = malloc(n ? n : 1);
    if (!out) {
        *why = NULL;
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        bool last = i + 4 == len;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)text[i + (size_t)k];
            if (c == '=' && last && (size_t)k >= 4 - pad) {
                v[k] = 0;
                continue;
            }
            v[k] = sextet(c);
            if (v[k] < 0) {
                *why = c == '=' ? "misplaced padding" : "character outside the base64 alphabet";
                free(out);
                return NULL;
            }
        }
        uint32_t triple = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                          (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if (last && pad > 0 && (triple & ((pad == 2) ? 0xFFFFu : 0xFFu)) != 0) {
            *why = "non-zero bits in the padding";
            free(out);
            return NULL;
        }
        uint8_t bytes[3] = {(uint8_t)(triple >> 16), (uint8_t)(triple >> 8),
                            (uint8_t)triple};
        size_t take = last ? 3 - pad : 3;
        for (size_t k = 0; k < take; k++)
            out[o++] = bytes[k];
    }
    *out_len = n;
    return out;
}

static void encode_group(char *dst, const uint8_t *src, size_t n)
{
    uint32_t triple = (uint32_t)src[0] << 16 |
                      (uint32_t)(n > 1 ? src[1] : 0) << 8 |
                      (uint32_t)(n > 2 ? src[2] : 0);
    dst[0] = alphabet[(triple >> 18) & 63];
    dst[1] = alphabet[(triple >> 12) & 63];
    dst[2] = n > 1 ? alphabet[(triple >> 6) & 63] : '=';
    dst[3] = n > 2 ? alphabet[triple & 63] : '=';
}

void base64_write(base64_writer *w, const void *bytes, size_t n)
{
    const uint8_t *src = bytes;

    while (w->ncarry > 0 && w->ncarry < 3 && n > 0) {
        w->carry[w->ncarry++] = *src++;
        n--;
    }
    if (w->ncarry == 3) {
        char *at = strbuf_reserve(w->out, 4);
        if (!at)
            return;
        encode_group(at, w->carry, 3);
        strbuf_advance(w->out, 4);
        w->ncarry = 0;
    }
    size_t groups = n / 3;
    if (groups > 0) {
        char *at = strbuf_reserve(w->out, groups * 4);
        if (!at)
            return;
        for (size_t g = 0; g < groups; g++)
            encode_group(at + g * 4, src + g * 3, 3);
        strbuf_advance(w->out, groups * 4);
        src += groups * 3;
        n -= groups * 3;
    }
    for (size_t k = 0; k < n; k++)
        w->carry[w->ncarry++] = src[k];
}

void base64_finish(base64_writer *w)
{
    if (w->ncarry == 0)
        return;
    char *at = strbuf_reserve(w->out, 4);
    if (!at)
        return;
    encode_group(at, w->carry, w->ncarry);
    strbuf_advance(w->out, 4);
    w->ncarry = 0;
}

/*
 * strbuf.c - growable byte buffer (see strbuf.h).
 */
#include "json/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *strbuf_reserve(strbuf *sb, size_t extra)
{
    if (sb->failed)
        return NULL;
    if (extra > SIZE_MAX - sb->len - 1)
        goto fail;
    if (sb->len + extra + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + extra + 1) {
            if (cap > SIZE_MAX / 2)
                goto fail;
            cap *= 2;
        }
        char *grown = realloc(sb->data, cap);
        if (!grown)
            goto fail;
        sb->data = grown;
        sb->cap = cap;
    }
    return sb->data + sb->len;
fail:
    sb->failed = true;
    return NULL;
}

void strbuf_advance(strbuf *sb, size_t n)
{
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void strbuf_put(strbuf *sb, const char *bytes, size_t n)
{
    char *at = strbuf_reserve(sb, n);
    if (!at)
        return;
    memcpy(at, bytes, n);
    strbuf_advance(sb, n);
}

void strbuf_puts(strbuf *sb, const char *s)
{
    strbuf_put(sb, s, strlen(s));
}

void strbuf_putc(strbuf *sb, char c)
{
    strbuf_put(sb, &c, 1);
}

void strbuf_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    char small[256];

    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        strbuf_put(sb, small, (size_t)n);
        return;
    }
    char *at = strbuf_reserve(sb, (size_t)n);
    if (!at)
        return;
    va_start(ap, fmt);
    vsnprintf(at, (size_t)n + 1, fmt, ap);
    va_end(ap);
    strbuf_advance(sb, (size_t)n);
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if it is not one. */
static size_t utf8_sequence(const unsigned char *p)
{
    size_t n;
    uint32_t cp;

    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0) {
        n = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        n = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) /* also stops at the NUL terminator */
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    static const uint32_t smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

size_t json_escape_char(const char *s, char out[JSON_ESCAPE_MAX], size_t *consumed)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = utf8_sequence(p);

    *consumed = n ? n : 1;
    if (n == 0) { /* a truncated or invalid sequence: never emit invalid UTF-8 */
        memcpy(out, "\\ufffd", 6);
        return 6;
    }
    if (n > 1) {
        memcpy(out, s, n);
        return n;
    }
    switch (*p) {
    case '"':
        memcpy(out, "\\\"", 2);
        return 2;
    case '\\':
        memcpy(out, "\\\\", 2);
        return 2;
    case '\n':
        memcpy(out, "\\n", 2);
        return 2;
    case '\r':
        memcpy(out, "\\r", 2);
        return 2;
    case '\t':
        memcpy(out, "\\t", 2);
        return 2;
    default:
        if (*p < 0x20 || *p == 0x7F) {
            const char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
            memcpy(out, esc, sizeof esc);
            return sizeof esc;
        }
        out[0] = (char)*p;
        return 1;
    }
}

void strbuf_put_json_string(strbuf *sb, const char *s)
{
    char esc[JSON_ESCAPE_MAX];
    size_t used;

    strbuf_putc(sb, '"');
    while (*s) {
        strbuf_put(sb, esc, json_escape_char(s, esc, &used));
        s += used;
    }
    strbuf_putc(sb, '"');
}

char *strbuf_detach(strbuf *sb, size_t *len)
{
    char *data = sb->failed ? NULL : sb->data;

    if (sb->failed)
        free(sb->data);
    if (data == NULL && !sb->failed) {
        data = malloc(1); /* an empty buffer still hands over an allocation */
        if (data)
            data[0] = '\0';
    }
    if (len)
        *len = data ? sb->len : 0;
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
    return data;
}

void strbuf_free(strbuf *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
}

/*
 * framing.c - refusing ambiguous framing and NUL bytes in headers (see
 * framing.h).
 */
#include "framing.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "http_token.h"

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The value without leading and trailing blanks: *len bytes at the
 * returned pointer. */
static const char *trimmed(const char *s, size_t *len)
{
    while (is_blank(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    *len = n;
    return s;
}

/* What the Transfer-Encoding headers say, read as RFC 9112 section 6.1
 * does: a comma-separated list (empty elements allowed) of codings, each
 * a token with optional ";" parameters. */
typedef struct codings {
    unsigned headers; /* Transfer-Encoding headers */
    unsigned chunked; /* codings that are "chunked" */
    unsigned others;  /* codings that are not */
    bool malformed;   /* an element that is no coding, or no coding at all */
    bool last_is_chunked;
    bool exact; /* the first header's value is "chunked", in any case */
} codings;

/* One list element of span bytes at p (blanks around it included). */
static void read_coding(codings *c, const char *p, size_t span)
{
    while (span > 0 && is_blank(*p))
        p++, span--;
    while (span > 0 && is_blank(p[span - 1]))
        span--;
    if (span == 0)
        return; /* an empty element: allowed, and no coding */
    size_t name = 0;
    while (name < span && http_is_tchar(p[name]))
        name++;
    const char *rest = p + name;
    while (rest < p + span && is_blank(*rest))
        rest++;
    if (name == 0 || (rest < p + span && *rest != ';')) {
        c->malformed = true;
        return;
    }
    c->last_is_chunked = name == 7 && strncasecmp(p, "chunked", 7) == 0;
    if (c->last_is_chunked)
        c->chunked++;
    else
        c->others++;
}

/* Adds one Transfer-Encoding value to *c. */
static void read_codings(codings *c, const char *value)
{
    unsigned before = c->chunked + c->others;
    if (c->headers++ == 0)
        c->exact = strcasecmp(value, "chunked") == 0;
    for (const char *p = value;;) {
        const char *comma = strchr(p, ',');
        read_coding(c, p, comma != NULL ? (size_t)(comma - p) : strlen(p));
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    if (c->chunked + c->others == before)
        c->malformed = true; /* a list of no coding at all */
}

/* The verdict on the codings alone. libmicrohttpd de-chunks only a first
 * Transfer-Encoding value that is exactly "chunked" (in any case) and
 * otherwise reads the body until the connection closes, so any other
 * spelling of chunked, valid as it may be, is not implemented here. */
static framing_verdict codings_verdict(const codings *c)
{
    if (c->malformed)
        return FRAMING_BAD_CODING;
    if (c->chunked > 0 && !c->last_is_chunked)
        return FRAMING_CHUNKED_NOT_LAST;
    if (c->others > 0)
        return FRAMING_UNKNOWN_CODING;
    if (c->chunked > 1)
        return FRAMING_CHUNKED_TWICE;
    return c->exact ? FRAMING_OK : FRAMING_CODING_SPELLING;
}

framing_verdict framing_check(const framing_header *h, size_t n)
{
    const char *length = NULL;
    size_t length_len = 0;
    bool lengths_differ = false;
    codings c = {0};

    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(h[i].name, "Content-Length") == 0) {
            size_t len;
            const char *v = trimmed(h[i].value, &len);
            if (length != NULL && (len != length_len || memcmp(v, length, len) != 0))
                lengths_differ = true;
            length = v;
            length_len = len;
        } else if (strcasecmp(h[i].name, "Transfer-Encoding") == 0) {
            read_codings(&c, h[i].value);
        }
    }
    if (c.headers > 0 && codings_verdict(&c) != FRAMING_OK)
        return codings_verdict(&c);
    if (c.headers > 0 && length != NULL)
        return FRAMING_LENGTH_AND_CODING;
    return lengths_differ ? FRAMING_CONFLICTING_LENGTHS : FRAMING_OK;
}

const char *framing_message(framing_verdict v)
{
    switch (v) {
    case FRAMING_CONFLICTING_LENGTHS:
        return "the request has Content-Length headers that differ";
    case FRAMING_LENGTH_AND_CODING:
        return "the request has both Transfer-Encoding and Content-Length";
    case FRAMING_CHUNKED_TWICE:
        return "the request applies the chunked transfer coding twice";
    case FRAMING_UNKNOWN_CODING:
        return "the only transfer coding supported is chunked";
    case FRAMING_BAD_CODING:
        return "Transfer-Encoding is not a list of transfer codings";
    case FRAMING_CHUNKED_NOT_LAST:
        return "the chunked transfer coding must be the last one applied";
    case FRAMING_CODING_SPELLING:
        return "send chunked bodies with exactly 'Transfer-Encoding: chunked' (no blanks, no "
               "empty list elements, no parameters)";
    case FRAMING_OK:
        break;
    }
    return "the request's framing is fine";
}

/* Whether the line end at `end` (the NUL that ends a value) is `width`
 * NULs (1: bare LF, 2: CR LF) with the next header's name right after. */
static bool line_end_fits(const char *end, size_t width, const char *next)
{
    return end + width == next && (width == 1 || end[1] == '\0');
}

size_t framing_find_nul(const framing_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *end = h[i].value + strlen(h[i].value);
        if (i + 1 < n) {
            const char *next = h[i + 1].name;
            if (!line_end_fits(end, 2, next) && !line_end_fits(end, 1, next))
                return i;
        } else if (end[1] != '\0') {
            /* The last header: its line end is followed by the empty
             * line's NULs; junk after a NUL is not. (A value ending in a
             * NUL with nothing after it cannot be told from a CR LF line
             * end here without reading past the header block.) */
            return i;
        }
    }
    return n;
}

framing_tail framing_check_tail(const char *line_end, const char *block_start,
                                const char *block_end, size_t width)
{
    uintptr_t at = (uintptr_t)line_end, start = (uintptr_t)block_start, end = (uintptr_t)block_end;
    if (at < start || at >= end)
        return TAIL_OK; /* not in the block: not ours to judge */
    size_t len = (size_t)(end - at), nuls = 0;
    while (nuls < len && line_end[nuls] == '\0')
        nuls++;
    if (nuls < len)
        return nuls == 1 ? TAIL_NUL : TAIL_LOST;
    return width != 0 && nuls == 2 * width + 1 ? TAIL_NUL : TAIL_OK;
}

bool framing_layout_is_in_place(const char *version)
{
    /* "0.9." then the patch number's digits, and nothing else */
    if (version == NULL || strncmp(version, "0.9.", 4) != 0)
        return false;
    const char *p = version + 4;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p == '\0';
}

/*
 * framing.c - refusing ambiguous framing and NUL bytes in headers (see
 * framing.h).
 */
#include "framing.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

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

/* Counts the codings of one Transfer-Encoding value (a comma-separated
 * list): *chunked those that are "chunked", *others the rest. */
static void count_codings(const char *value, unsigned *chunked, unsigned *others)
{
    const char *p = value;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t span = comma != NULL ? (size_t)(comma - p) : strlen(p);
        while (span > 0 && is_blank(*p))
            p++, span--;
        while (span > 0 && is_blank(p[span - 1]))
            span--;
        if (span == 7 && strncasecmp(p, "chunked", 7) == 0)
            (*chunked)++;
        else if (span > 0 || comma == NULL)
            (*others)++; /* an empty value is no coding we know either */
        if (comma == NULL)
            break;
        p = comma + 1;
    }
}

framing_verdict framing_check(const framing_header *h, size_t n)
{
    const char *length = NULL;
    size_t length_len = 0;
    bool lengths_differ = false, has_coding = false;
    unsigned chunked = 0, others = 0;

    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(h[i].name, "Content-Length") == 0) {
            size_t len;
            const char *v = trimmed(h[i].value, &len);
            if (length != NULL && (len != length_len || memcmp(v, length, len) != 0))
                lengths_differ = true;
            length = v;
            length_len = len;
        } else if (strcasecmp(h[i].name, "Transfer-Encoding") == 0) {
            has_coding = true;
            count_codings(h[i].value, &chunked, &others);
        }
    }
    if (others > 0)
        return FRAMING_UNKNOWN_CODING;
    if (has_coding && length != NULL)
        return FRAMING_LENGTH_AND_CODING;
    if (chunked > 1)
        return FRAMING_CHUNKED_TWICE;
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

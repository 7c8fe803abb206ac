/*
 * header_syntax.c - header names, values and Host (see header_syntax.h).
 */
#include "header_syntax.h"

#include <string.h>
#include <strings.h>

#include "http_token.h"

static bool is_token(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (!http_is_tchar(*s))
            return false;
    return true;
}

/* field-value: visible bytes, obs-text (0x80-0xFF), SP and HTAB. */
static bool is_field_value(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    return true;
}

header_verdict header_syntax_check(const framing_header *h, size_t n, bool http11, size_t *at)
{
    size_t hosts = 0;
    *at = n;
    for (size_t i = 0; i < n; i++) {
        header_verdict v = HEADERS_OK;
        if (!is_token(h[i].name))
            v = HEADERS_BAD_NAME;
        else if (!is_field_value(h[i].value))
            v = HEADERS_BAD_VALUE;
        else if (strcasecmp(h[i].name, "Host") == 0 && ++hosts > 1)
            v = HEADERS_TWO_HOSTS;
        if (v != HEADERS_OK) {
            *at = i;
            return v;
        }
    }
    return http11 && hosts == 0 ? HEADERS_NO_HOST : HEADERS_OK;
}

const char *header_syntax_message(header_verdict v)
{
    switch (v) {
    case HEADERS_BAD_NAME:
        return "the header name is not a token (RFC 9110 5.1: not empty, no blanks)";
    case HEADERS_BAD_VALUE:
        return "the header value holds a control character (a bare CR?)";
    case HEADERS_NO_HOST:
        return "an HTTP/1.1 request needs a Host header";
    case HEADERS_TWO_HOSTS:
        return "the request has more than one Host header";
    case HEADERS_OK:
        break;
    }
    return "the headers are fine";
}

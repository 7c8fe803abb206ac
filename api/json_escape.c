/*
 * json_escape.c - the codec's JSON string escaper for server/, which sees
 * the API only through api.h (see api_json_escape there).
 *
 * server/ used to keep an escaper of its own (byte by byte, \n as \u000a,
 * invalid UTF-8 passed through and a multi-byte character cut at the end of
 * a long line); now log lines escape as answers do and stay valid UTF-8.
 */
#include "api.h"

#include <string.h>

#include "json/strbuf.h"

void api_json_escape(char *buf, size_t *len, size_t cap, size_t keep, const char *s)
{
    char esc[JSON_ESCAPE_MAX];
    size_t used;

    while (*s) {
        size_t n = json_escape_char(s, esc, &used);
        if (*len + n + keep >= cap)
            break;
        memcpy(buf + *len, esc, n);
        *len += n;
        s += used;
    }
    buf[*len] = '\0';
}

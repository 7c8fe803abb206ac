/*
 * json_scan.c - see json_scan.h. Where jansson reads a character and puts
 * it back (after a number, a word or a space), this scanner peeks at it:
 * bytes that are not UTF-8 stop the scan there, as they stop jansson's.
 */
#include "json/json_scan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define PEEK_EOF (-1)
#define PEEK_FAULT (-2)

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_hex(int c)
{
    return is_digit(c) || ((c | 32) >= 'a' && (c | 32) <= 'f');
}

void json_scan_init(json_scanner *s, const char *text, size_t len)
{
    memset(s, 0, sizeof *s);
    s->text = text;
    s->len = len;
    s->token = JSON_TOK_INVALID;
}

void json_scan_free(json_scanner *s)
{
    json_charge_give(&s->charge, s->charged);
    s->charged = 0;
    free(s->str);
    s->str = NULL;
    s->str_cap = 0;
}

/* The length of the UTF-8 sequence at text[q], or 0 when it is not one
 * (overlong forms, surrogates and values past U+10FFFF are not). */
static size_t utf8_length(const char *text, size_t q, size_t len)
{
    unsigned char c = (unsigned char)text[q];
    size_t n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    uint32_t v = n == 2 ? c & 0x1Fu : n == 3 ? c & 0x0Fu : c & 0x07u;

    if (n <= 1)
        return n;
    if (len - q < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char k = (unsigned char)text[q + i];
        if ((k & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (k & 0x3Fu);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

void json_scan_line_column(const char *text, size_t at, int *line, int *column)
{
    *line = 1;
    *column = 0;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            ++*line;
            *column = 0;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            ++*column;
        }
    }
}

bool json_scan_fail(json_scanner *s, json_scan_fault fault, const char *what)
{
    size_t n = s->pos > s->tok_start ? s->pos - s->tok_start : 0;
    const char *saved = s->text + s->tok_start;

    if (s->fault != JSON_FAULT_NONE)
        return false;
    s->fault = fault;
    s->fault_pos = s->pos;
    if (n > 0 && saved[0] != '\0') {
        const char *nul = memchr(saved, '\0', n);
        int shown = (int)(nul ? (size_t)(nul - saved) : n);
        if (n <= 20)
            snprintf(s->message, sizeof s->message, "%s near '%.*s'", what, shown, saved);
        else
            snprintf(s->message, sizeof s->message, "%s", what);
    } else if (s->utf8_fault) {
        snprintf(s->message, sizeof s->message, "%s", what);
    } else {
        snprintf(s->message, sizeof s->message, "%s near end of file", what);
    }
    return false;
}

/* Bytes at q that are not UTF-8: the scan stops there. */
static void utf8_fail(json_scanner *s, size_t q)
{
    char what[48];

    snprintf(what, sizeof what, "unable to decode byte 0x%x", (unsigned char)s->text[q]);
    s->pos = q;
    s->utf8_fault = true;
    json_scan_fail(s, JSON_FAULT_SYNTAX, what);
    s->token = JSON_TOK_INVALID;
}

/* The character at q as jansson would read it: a byte, PEEK_EOF, or
 * PEEK_FAULT (recorded) when it starts no UTF-8 sequence. */
static int peek(json_scanner *s, size_t q)
{
    if (q >= s->len)
        return PEEK_EOF;
    unsigned char c = (unsigned char)s->text[q];
    if (c >= 0x80 && utf8_length(s->text, q, s->len) == 0) {
        utf8_fail(s, q);
        return PEEK_FAULT;
    }
    return c;
}

size_t json_scan_clean_run(const char *text, size_t p, size_t len)
{
    size_t q = p;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(' '), del = _mm_set1_epi8(0x7F);
    while (len - q >= 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(text + q));
        /* signed compare: bytes >= 0x80 are negative, so below ' ' too */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, quote),
                                                 _mm_cmpeq_epi8(b, backslash)),
                                    _mm_or_si128(_mm_cmplt_epi8(b, space), _mm_cmpeq_epi8(b, del)));
        int mask = _mm_movemask_epi8(stop);
        if (mask)
            return q + (size_t)__builtin_ctz((unsigned)mask) - p;
        q += 16;
    }
#endif
    while (q < len) {
        unsigned char c = (unsigned char)text[q];
        if (c < 0x20 || c > 0x7E || c == '"' || c == '\\')
            break;
        q++;
    }
    return q - p;
}

static bool reserve(json_scanner *s, size_t n)
{
    if (n <= s->str_cap)
        return true;
    size_t cap = s->str_cap ? s->str_cap : 64;
    while (cap < n)
        cap *= 2;
    size_t free_part = s->str_cap > JSON_UNCHARGED_BYTES ? s->str_cap : JSON_UNCHARGED_BYTES;
    if (cap > free_part) { /* a long string or number: its text decides */
        if (!json_charge_take(&s->charge, cap - free_part)) {
            s->fault = s->fault ? s->fault : JSON_FAULT_REFUSED;
            return false;
        }
        s->charged += cap - free_part;
    }
    char *grown = realloc(s->str, cap);
    if (!grown) {
        s->fault = s->fault ? s->fault : JSON_FAULT_NO_MEMORY;
        return false;
    }
    s->str = grown;
    s->str_cap = cap;
    return true;
}

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)p[i];
        v = v * 16 + (unsigned)(is_digit(c) ? c - '0' : (c | 32) - 'a' + 10);
    }
    return v;
}

static char *put_utf8(char *t, unsigned v)
{
    if (v < 0x80) {
        *t++ = (char)v;
    } else if (v < 0x800) {
        *t++ = (char)(0xC0 | (v >> 6));
        *t++ = (char)(0x80 | (v & 0x3F));
    } else if (v < 0x10000) {
        *t++ = (char)(0xE0 | (v >> 12));
        *t++ = (char)(0x80 | ((v >> 6) & 0x3F));
        *t++ = (char)(0x80 | (v & 0x3F));
    } else {
        *t++ = (char)(0xF0 | (v >> 18));
        *t++ = (char)(0x80 | ((v >> 12) & 0x3F));
        *t++ = (char)(0x80 | ((v >> 6) & 0x3F));
        *t++ = (char)(0x80 | (v & 0x3F));
    }
    return t;
}

/* One \u escape (or a surrogate pair) at text[*r] ('\\'): its code point,
 * or false (recorded) when it is a lone or mismatched surrogate. */
static bool unicode_escape(json_scanner *s, size_t *r, size_t end, unsigned *out)
{
    const char *t = s->text;
    unsigned v = hex4(t + *r + 2), v2;
    char what[48];

    *r += 6;
    if (v >= 0xDC00 && v <= 0xDFFF) {
        snprintf(what, sizeof what, "invalid Unicode '\\u%04X'", v);
        return json_scan_fail(s, JSON_FAULT_SYNTAX, what);
    }
    if (v < 0xD800 || v > 0xDBFF) {
        *out = v;
        return true;
    }
    if (*r + 1 >= end || t[*r] != '\\' || t[*r + 1] != 'u') {
        snprintf(what, sizeof what, "invalid Unicode '\\u%04X'", v);
        return json_scan_fail(s, JSON_FAULT_SYNTAX, what);
    }
    v2 = hex4(t + *r + 2);
    *r += 6;
    if (v2 < 0xDC00 || v2 > 0xDFFF) {
        snprintf(what, sizeof what, "invalid Unicode '\\u%04X\\u%04X'", v, v2);
        return json_scan_fail(s, JSON_FAULT_SYNTAX, what);
    }
    *out = ((v - 0xD800) << 10) + (v2 - 0xDC00) + 0x10000;
    return true;
}

/* The escapes of text[from, to) (checked already) decoded into s->str. */
static bool decode_escapes(json_scanner *s, size_t from, size_t to)
{
    static const char plain[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";

    if (!reserve(s, to - from + 1))
        return false;
    char *t = s->str;
    for (size_t r = from; r < to;) {
        if (s->text[r] != '\\') {
            *t++ = s->text[r++];
            continue;
        }
        if (s->text[r + 1] == 'u') {
            unsigned v = 0;
            if (!unicode_escape(s, &r, to, &v))
                return false;
            s->str_has_nul |= v == 0;
            t = put_utf8(t, v);
        } else {
            *t++ = decoded[strchr(plain, s->text[r + 1]) - plain];
            r += 2;
        }
    }
    *t = '\0';
    s->str_val = s->str;
    s->str_len = (size_t)(t - s->str);
    return true;
}

/* After a '\\' at text[q - 1]: past its escape, or 0 (recorded). */
static size_t skip_escape(json_scanner *s, size_t q)
{
    int c = peek(s, q);
    size_t n = 1;

    if (c == PEEK_FAULT)
        return 0;
    if (c == 'u') {
        for (n = 1; n <= 4; n++) {
            c = peek(s, q + n);
            if (c == PEEK_FAULT)
                return 0;
            if (!is_hex(c)) {
                s->pos = c == PEEK_EOF ? s->len : q + n + 1;
                json_scan_fail(s, JSON_FAULT_SYNTAX, "invalid escape");
                return 0;
            }
        }
        return q + 5;
    }
    if (c == PEEK_EOF || !strchr("\"\\/bfnrt", c) || c == 0) {
        s->pos = c == PEEK_EOF ? s->len : q + 1;
        json_scan_fail(s, JSON_FAULT_SYNTAX, "invalid escape");
        return 0;
    }
    return q + 1;
}

/* The end of the string whose characters start at q (past its '"'), or
 * 0 (recorded); *escaped and *clean say what it holds. */
static size_t string_end(json_scanner *s, size_t q, bool *escaped, bool *clean)
{
    for (;;) {
        q += json_scan_clean_run(s->text, q, s->len);
        if (q >= s->len) {
            s->pos = s->len;
            json_scan_fail(s, JSON_FAULT_SYNTAX, "premature end of input");
            return 0;
        }
        unsigned char c = (unsigned char)s->text[q];
        if (c == '"')
            return q;
        *clean = false;
        if (c < 0x20) {
            char what[40];
            snprintf(what, sizeof what, c == '\n' ? "unexpected newline" : "control character 0x%x",
                     c);
            s->pos = q;
            json_scan_fail(s, JSON_FAULT_SYNTAX, what);
            return 0;
        }
        if (c == '\\') {
            *escaped = true;
            if ((q = skip_escape(s, q + 1)) == 0)
                return 0;
        } else if (c == 0x7F) {
            q++;
        } else {
            size_t n = utf8_length(s->text, q, s->len);
            if (n == 0) {
                utf8_fail(s, q);
                return 0;
            }
            q += n;
        }
    }
}

static void scan_string(json_scanner *s)
{
    size_t first = s->pos + 1;
    bool escaped = false, clean = true;
    size_t end = string_end(s, first, &escaped, &clean);

    s->token = JSON_TOK_INVALID;
    if (end == 0)
        return;
    s->pos = end + 1;
    s->str_has_nul = false;
    s->str_clean = clean;
    if (escaped) {
        if (!decode_escapes(s, first, end))
            return;
    } else {
        s->str_val = s->text + first;
        s->str_len = end - first;
    }
    s->token = JSON_TOK_STRING;
}

/* text[tok_start, pos) NUL-terminated in s->str. */
static const char *token_text(json_scanner *s)
{
    size_t n = s->pos - s->tok_start;
    if (!reserve(s, n + 1))
        return NULL;
    memcpy(s->str, s->text + s->tok_start, n);
    s->str[n] = '\0';
    return s->str;
}

static void number_value(json_scanner *s, bool real)
{
    const char *num = token_text(s);

    s->token = JSON_TOK_INVALID;
    if (!num)
        return;
    errno = 0;
    if (!real) {
        s->integer = strtoll(num, NULL, 10);
        if (errno == ERANGE) {
            json_scan_fail(s, JSON_FAULT_OVERFLOW_INT,
                           num[0] == '-' ? "too big negative integer" : "too big integer");
            return;
        }
        s->token = JSON_TOK_INTEGER;
        return;
    }
    s->real = strtod(num, NULL);
    if (errno == ERANGE && isinf(s->real)) {
        json_scan_fail(s, JSON_FAULT_OVERFLOW_REAL, "real number overflow");
        return;
    }
    s->token = JSON_TOK_REAL;
}

/* Past the digits from q on; *c is the character after them. */
static size_t digits(json_scanner *s, size_t q, int *c)
{
    while (is_digit(*c = peek(s, q)))
        q++;
    return q;
}

/* At least one digit at *q, else the number is invalid there (the error
 * at *q unless the body ended): *q goes past the digits, *c after them. */
static bool required_digits(json_scanner *s, size_t *q, int *c)
{
    if (!is_digit(*c)) {
        if (*c != PEEK_FAULT)
            s->pos = *q;
        return false;
    }
    *q = digits(s, *q, c);
    return true;
}

static void scan_number(json_scanner *s)
{
    size_t q = s->pos;
    int c;

    s->token = JSON_TOK_INVALID;
    if (s->text[q] == '-')
        q++;
    c = peek(s, q);
    if (c == '0') {
        c = peek(s, ++q);
        if (is_digit(c))
            c = PEEK_FAULT - 1; /* "01": invalid, at the second digit */
    } else if (is_digit(c)) {
        q = digits(s, q, &c);
    } else {
        c = PEEK_FAULT - 1;
    }
    if (c == PEEK_FAULT || c == PEEK_FAULT - 1) {
        if (c != PEEK_FAULT)
            s->pos = q;
        return;
    }
    bool real = c == '.' || c == 'e' || c == 'E';
    if (c == '.') {
        c = peek(s, ++q);
        if (!required_digits(s, &q, &c))
            return;
    }
    if (c == 'e' || c == 'E') {
        c = peek(s, ++q);
        if (c == '+' || c == '-')
            c = peek(s, ++q);
        if (!required_digits(s, &q, &c))
            return;
    }
    if (c == PEEK_FAULT)
        return;
    s->pos = q;
    number_value(s, real);
}

static void scan_word(json_scanner *s)
{
    size_t q = s->pos;

    while (q < s->len && is_alpha((unsigned char)s->text[q]))
        q++;
    s->token = JSON_TOK_INVALID;
    if (peek(s, q) == PEEK_FAULT)
        return;
    s->pos = q;
    size_t n = q - s->tok_start;
    const char *w = s->text + s->tok_start;
    if (n == 4 && memcmp(w, "true", 4) == 0)
        s->token = JSON_TOK_TRUE;
    else if (n == 5 && memcmp(w, "false", 5) == 0)
        s->token = JSON_TOK_FALSE;
    else if (n == 4 && memcmp(w, "null", 4) == 0)
        s->token = JSON_TOK_NULL;
}

void json_scan_next(json_scanner *s)
{
    int c;

    for (;;) {
        s->tok_start = s->pos;
        c = peek(s, s->pos);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        s->pos++;
    }
    if (c == PEEK_FAULT || s->fault != JSON_FAULT_NONE) {
        s->token = JSON_TOK_INVALID;
    } else if (c == PEEK_EOF) {
        s->token = JSON_TOK_EOF;
    } else if (strchr("{}[]:,", c) && c != 0) {
        s->pos++;
        s->token = c;
    } else if (c == '"') {
        scan_string(s);
    } else if (is_digit(c) || c == '-') {
        scan_number(s);
    } else if (is_alpha(c)) {
        scan_word(s);
    } else {
        /* any other character, whole (it is valid UTF-8: peek saw it) */
        s->pos += utf8_length(s->text, s->pos, s->len);
        s->token = JSON_TOK_INVALID;
    }
}

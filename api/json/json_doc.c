/*
 * json_doc.c - see json_doc.h. The scanner follows RFC 8259's grammar and
 * validates the whole body before jansson sees any of it; jansson then
 * parses the envelope (the body with every numeric array replaced by `[]`)
 * and still checks what the scanner leaves to it: UTF-8, duplicate keys,
 * \u0000, and scalar numbers it cannot hold. Error messages carry
 * jansson's text with the line and column of the original body.
 */
#include "json/json_doc.h"

#include <math.h>
#include <stdio.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "json/json_rows.h"

/* Arrays whose text may be this long are tried with the parallel row
 * parser, which parses float32 at once (the fuzz build lowers it so that
 * small inputs reach that parser too). Only speed depends on it. */
#ifndef PARALLEL_MIN_BYTES
#define PARALLEL_MIN_BYTES ((size_t)256 << 10)
#endif
/* Any JSON value parses (a non-object body is then the caller's 400);
 * duplicate keys are a syntax error. */
#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)
/* An `[]` in the envelope that the body wrote itself, not a stand-in. */
#define REAL_EMPTY SIZE_MAX

typedef struct scanner {
    const char *text; /* borrowed: the body */
    size_t len, pos;
    size_t depth, deepest;
    size_t values, max_values;
    json_span *spans; /* owned until handed to the doc */
    size_t n_spans, cap_spans;
    size_t *empties; /* owned: every `[]` of the envelope in document order:
                        a span index or REAL_EMPTY */
    size_t n_empties, cap_empties;
    size_t string_span_min;
    json_string_span *strings; /* owned until handed to the doc */
    size_t n_strings, cap_strings;
    size_t *empty_strings; /* owned: every `""` value of the envelope in
                              document order: a string index or REAL_EMPTY */
    size_t n_empty_strings, cap_empty_strings;
    json_codec_kind stop; /* JSON_CODEC_OK while scanning */
    const char *why;      /* a syntax error: what, at `where` */
    size_t where;
} scanner;

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void skip_ws(scanner *s)
{
    while (s->pos < s->len && is_space(s->text[s->pos]))
        s->pos++;
}

static bool syntax(scanner *s, const char *why)
{
    if (s->stop == JSON_CODEC_OK) {
        s->stop = JSON_CODEC_SYNTAX;
        s->why = why;
        s->where = s->pos;
    }
    return false;
}

static bool stop(scanner *s, json_codec_kind kind)
{
    if (s->stop == JSON_CODEC_OK)
        s->stop = kind;
    return false;
}

/* Grow *items (of *cap, each `size` bytes) to hold one more; false when
 * the allocation fails. */
static bool grow(void **items, size_t *cap, size_t used, size_t size)
{
    if (used < *cap)
        return true;
    size_t n = *cap ? 2 * *cap : 16;
    void *grown = realloc(*items, n * size);
    if (!grown)
        return false;
    *items = grown;
    *cap = n;
    return true;
}

static bool note_empty(scanner *s, size_t span_index)
{
    if (!grow((void **)&s->empties, &s->cap_empties, s->n_empties, sizeof *s->empties))
        return stop(s, JSON_CODEC_NO_MEMORY);
    s->empties[s->n_empties++] = span_index;
    return true;
}

/* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool scan_number(scanner *s)
{
    size_t p = s->pos;
    const char *t = s->text;

    if (p < s->len && t[p] == '-')
        p++;
    if (p >= s->len || !is_digit(t[p]))
        return syntax(s, "invalid token");
    if (t[p] == '0')
        p++;
    else
        while (p < s->len && is_digit(t[p]))
            p++;
    if (p < s->len && t[p] == '.') {
        p++;
        if (p >= s->len || !is_digit(t[p]))
            return syntax(s, "invalid number");
        while (p < s->len && is_digit(t[p]))
            p++;
    }
    if (p < s->len && (t[p] == 'e' || t[p] == 'E')) {
        p++;
        if (p < s->len && (t[p] == '+' || t[p] == '-'))
            p++;
        if (p >= s->len || !is_digit(t[p]))
            return syntax(s, "invalid number");
        while (p < s->len && is_digit(t[p]))
            p++;
    }
    s->pos = p;
    return true;
}

static bool is_hex(char h)
{
    return is_digit(h) || ((h | 32) >= 'a' && (h | 32) <= 'f');
}

/* A string with its escapes checked (jansson decodes them later). */
static bool scan_string(scanner *s)
{
    if (s->pos >= s->len || s->text[s->pos] != '"')
        return syntax(s, "string or '}' expected");
    size_t p = s->pos + 1;
    while (p < s->len) {
        unsigned char c = (unsigned char)s->text[p];
        if (c == '"') {
            s->pos = p + 1;
            return true;
        }
        if (c < 0x20) {
            s->pos = p;
            return syntax(s, "control character in string");
        }
        if (c == '\\') {
            if (++p >= s->len)
                break;
            char e = s->text[p];
            if (e == 'u') {
                for (size_t k = 1; k <= 4; k++)
                    if (p + k >= s->len || !is_hex(s->text[p + k])) {
                        s->pos = p;
                        return syntax(s, "invalid escape");
                    }
                p += 4;
            } else if (e == 0 || !strchr("\"\\/bfnrt", e)) {
                s->pos = p;
                return syntax(s, "invalid escape");
            }
        }
        p++;
    }
    s->pos = s->len;
    return syntax(s, "premature end of input");
}

/* How many bytes from text[p] on are printable ASCII other than '"' and
 * '\\' (0x20..0x7E): the characters a long string span may hold. */
static size_t clean_run(const char *text, size_t p, size_t len)
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

static bool note_empty_string(scanner *s, size_t string_index)
{
    if (!grow((void **)&s->empty_strings, &s->cap_empty_strings, s->n_empty_strings,
              sizeof *s->empty_strings))
        return stop(s, JSON_CODEC_NO_MEMORY);
    s->empty_strings[s->n_empty_strings++] = string_index;
    return true;
}

/* A string value: a long clean one becomes a span (jansson sees `""`);
 * every `""` of the envelope is noted for assign_stand_ins. */
static bool scan_string_value(scanner *s)
{
    size_t first = s->pos + 1, run = clean_run(s->text, first, s->len);

    if (first + run >= s->len || s->text[first + run] != '"')
        return scan_string(s); /* escapes, controls, non-ASCII or the end */
    s->pos = first + run + 1;
    if (run == 0)
        return note_empty_string(s, REAL_EMPTY);
    if (run < s->string_span_min)
        return true;
    if (!grow((void **)&s->strings, &s->cap_strings, s->n_strings, sizeof *s->strings))
        return stop(s, JSON_CODEC_NO_MEMORY);
    s->strings[s->n_strings++] = (json_string_span){.start = first, .end = first + run};
    return note_empty_string(s, s->n_strings - 1);
}

static bool scan_literal(scanner *s, const char *word)
{
    size_t n = strlen(word);
    if (s->len - s->pos < n || memcmp(s->text + s->pos, word, n) != 0)
        return syntax(s, "invalid token");
    s->pos += n;
    return true;
}

/* ---- numeric arrays --------------------------------------------------- */

typedef struct shape_scan {
    size_t ndim;
    size_t dim[JSON_ARRAY_MAX_NDIM];
    bool dim_known[JSON_ARRAY_MAX_NDIM];
    size_t count;
} shape_scan;

/* The numbers of one innermost row, up to and including its ']'. Checks
 * the grammar only; values are read later, in the type asked for. */
static bool leaf_row(scanner *s, shape_scan *a, size_t *n)
{
    for (*n = 0;;) {
        skip_ws(s);
        if (s->pos >= s->len || !scan_number(s))
            return false;
        (*n)++;
        if (++a->count > JSON_ARRAY_MAX_ELEMENTS)
            return false;
        skip_ws(s);
        if (s->pos >= s->len)
            return false;
        char c = s->text[s->pos++];
        if (c == ']')
            return true;
        if (c != ',')
            return false;
    }
}

/* A rectangular nested array of numbers at `depth`; false when it is
 * anything else (the caller then scans it as plain JSON). */
static bool numeric_rows(scanner *s, shape_scan *a, size_t depth)
{
    size_t n = 0;

    if (depth >= JSON_ARRAY_MAX_NDIM || s->pos >= s->len || s->text[s->pos] != '[')
        return false;
    s->pos++;
    skip_ws(s);
    if (s->pos >= s->len || s->text[s->pos] == ']')
        return false; /* empty: stays an ordinary `[]` */
    if (s->text[s->pos] != '[') {
        if (a->ndim == 0)
            a->ndim = depth + 1; /* leaves live at this depth */
        if (a->ndim != depth + 1 || !leaf_row(s, a, &n))
            return false;
    } else {
        for (;;) {
            skip_ws(s);
            if (!numeric_rows(s, a, depth + 1))
                return false;
            n++;
            skip_ws(s);
            if (s->pos >= s->len)
                return false;
            char c = s->text[s->pos++];
            if (c == ']')
                break;
            if (c != ',')
                return false;
        }
    }
    if (!a->dim_known[depth]) {
        a->dim_known[depth] = true;
        a->dim[depth] = n;
    }
    return a->dim[depth] == n;
}

/* Take the numeric array at s->pos out of the envelope: 1 when taken
 * (s->pos is past it), 0 when it is not one (s->pos unchanged), -1 when
 * scanning must stop. Nothing here depends on the body's size but speed:
 * a long array is parsed by the OpenMP team now, a short one later. */
static int try_extract(scanner *s)
{
    size_t start = s->pos;
    json_span span = {.start = start};
    json_rows_result big;
    shape_scan a = {0};

    if (s->len - start >= PARALLEL_MIN_BYTES && json_rows_parse(s->text, s->len, start, 0, &big)) {
        span.ndim = big.ndim;
        memcpy(span.dim, big.dim, sizeof span.dim);
        span.count = big.count;
        span.floats = (float *)(void *)big.block;
        span.end = big.end;
    } else if (numeric_rows(s, &a, 0)) {
        span.ndim = a.ndim;
        memcpy(span.dim, a.dim, sizeof span.dim);
        span.count = a.count;
        span.end = s->pos;
    } else {
        /* not a clean numeric array: its errors are the plain scan's */
        s->stop = JSON_CODEC_OK;
        s->pos = start;
        return 0;
    }
    if (!grow((void **)&s->spans, &s->cap_spans, s->n_spans, sizeof *s->spans)) {
        free(span.floats);
        stop(s, JSON_CODEC_NO_MEMORY);
        return -1;
    }
    s->spans[s->n_spans++] = span;
    if (!note_empty(s, s->n_spans - 1))
        return -1;
    if (s->depth + span.ndim > s->deepest)
        s->deepest = s->depth + span.ndim;
    s->pos = span.end;
    return 1;
}

/* ---- generic JSON ----------------------------------------------------- */

static bool scan_value(scanner *s);

/* After a member or element: 1 when a ',' follows, 0 when `close` does
 * (consumed), -1 on anything else. */
static int next_item(scanner *s, char close, const char *expected)
{
    skip_ws(s);
    if (s->pos >= s->len) {
        syntax(s, "premature end of input");
        return -1;
    }
    char c = s->text[s->pos];
    if (c == ',' || c == close) {
        s->pos++;
        return c == ',';
    }
    syntax(s, expected);
    return -1;
}

static bool enter(scanner *s)
{
    if (++s->depth > JSON_MAX_DEPTH)
        return stop(s, JSON_CODEC_TOO_DEEP);
    if (s->depth > s->deepest)
        s->deepest = s->depth;
    s->pos++;
    skip_ws(s);
    return true;
}

static bool scan_object(scanner *s)
{
    if (!enter(s))
        return false;
    if (s->pos < s->len && s->text[s->pos] == '}') {
        s->pos++;
        s->depth--;
        return true;
    }
    for (;;) {
        skip_ws(s);
        if (++s->values > s->max_values) /* the member's key */
            return stop(s, JSON_CODEC_TOO_MANY_VALUES);
        if (!scan_string(s))
            return false;
        skip_ws(s);
        if (s->pos >= s->len || s->text[s->pos] != ':')
            return syntax(s, "':' expected");
        s->pos++;
        skip_ws(s);
        if (!scan_value(s))
            return false;
        int more = next_item(s, '}', "'}' expected");
        if (more < 0)
            return false;
        if (more == 0)
            break;
    }
    s->depth--;
    return true;
}

static bool scan_array(scanner *s)
{
    if (!enter(s))
        return false;
    if (s->pos < s->len && s->text[s->pos] == ']') {
        s->pos++;
        s->depth--;
        return note_empty(s, REAL_EMPTY);
    }
    for (;;) {
        skip_ws(s);
        if (!scan_value(s))
            return false;
        int more = next_item(s, ']', "']' expected");
        if (more < 0)
            return false;
        if (more == 0)
            break;
    }
    s->depth--;
    return true;
}

static bool scan_value(scanner *s)
{
    if (s->pos >= s->len)
        return syntax(s, "premature end of input");
    if (++s->values > s->max_values)
        return stop(s, JSON_CODEC_TOO_MANY_VALUES);
    switch (s->text[s->pos]) {
    case '{':
        return scan_object(s);
    case '[': {
        int taken = try_extract(s);
        return taken < 0 ? false : taken ? true : scan_array(s);
    }
    case '"':
        return scan_string_value(s);
    case 't':
        return scan_literal(s, "true");
    case 'f':
        return scan_literal(s, "false");
    case 'n':
        return scan_literal(s, "null");
    default:
        return scan_number(s);
    }
}

/* ---- jansson on the envelope ----------------------------------------- */

/* The next piece of the body the envelope leaves out, in document order
 * (numeric arrays and long strings interleave): body[*from, *to) becomes
 * `*with`. False when none is left. */
static bool next_cut(const scanner *s, size_t *array_i, size_t *string_i, size_t *from, size_t *to,
                     const char **with)
{
    bool arrays_left = *array_i < s->n_spans, strings_left = *string_i < s->n_strings;

    if (arrays_left && (!strings_left || s->spans[*array_i].start < s->strings[*string_i].start)) {
        *from = s->spans[*array_i].start;
        *to = s->spans[*array_i].end;
        *with = "[]";
        ++*array_i;
        return true;
    }
    if (!strings_left)
        return false;
    *from = s->strings[*string_i].start; /* the quotes stay: `""` */
    *to = s->strings[*string_i].end;
    *with = "";
    ++*string_i;
    return true;
}

/* The envelope jansson parses: each numeric array's text replaced by `[]`,
 * each long string's by `""`. */
static char *envelope_text(const scanner *s, size_t *len)
{
    size_t n = s->len, from = 0, used = 0, cut_from, cut_to, ai = 0, si = 0;
    const char *with;

    for (size_t i = 0; i < s->n_spans; i++)
        n -= s->spans[i].end - s->spans[i].start - 2;
    for (size_t i = 0; i < s->n_strings; i++)
        n -= s->strings[i].end - s->strings[i].start;
    char *out = malloc(n ? n : 1); /* owned: returned to the caller */
    if (!out)
        return NULL;
    while (next_cut(s, &ai, &si, &cut_from, &cut_to, &with)) {
        memcpy(out + used, s->text + from, cut_from - from);
        used += cut_from - from;
        memcpy(out + used, with, strlen(with));
        used += strlen(with);
        from = cut_to;
    }
    if (s->len > from)
        memcpy(out + used, s->text + from, s->len - from);
    *len = n;
    return out;
}

/* The body with each span's inside blanked (newlines kept; a long
 * string's characters become spaces): jansson finds
 * the same error in it at the same line and column as in the body, having
 * built no more than the envelope. Used on the error path only. */
static char *blanked_text(const scanner *s)
{
    char *out = malloc(s->len ? s->len : 1);

    if (!out)
        return NULL;
    if (s->len)
        memcpy(out, s->text, s->len);
    for (size_t i = 0; i < s->n_spans; i++)
        for (size_t k = s->spans[i].start + 1; k + 1 < s->spans[i].end; k++)
            if (out[k] != '\n')
                out[k] = ' ';
    for (size_t i = 0; i < s->n_strings; i++) /* printable: no newline */
        memset(out + s->strings[i].start, ' ', s->strings[i].end - s->strings[i].start);
    return out;
}

static void line_column(const char *text, size_t at, int *line, int *column)
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

/* The message for malformed JSON: jansson's own, placed in the body.
 * False when jansson finds nothing wrong with the blanked body. */
static bool syntax_message(const scanner *s, json_codec_error *err)
{
    json_error_t jerr;
    char *blank = blanked_text(s);
    json_t *v = blank ? json_loadb(blank, s->len, LOAD_FLAGS, &jerr) : NULL;

    err->kind = JSON_CODEC_SYNTAX;
    if (blank && !v && json_error_code(&jerr) == json_error_numeric_overflow) {
        /* a well-formed number jansson cannot hold: its text ends at
         * jerr.position; a fraction or exponent makes it a real */
        size_t end = (size_t)jerr.position, start = end;
        while (start > 0 && strchr("0123456789.eE+-", blank[start - 1]))
            start--;
        bool real = memchr(blank + start, '.', end - start) ||
                    memchr(blank + start, 'e', end - start) ||
                    memchr(blank + start, 'E', end - start);
        err->kind = real ? JSON_CODEC_NON_FINITE : JSON_CODEC_INTEGER_RANGE;
        snprintf(err->message, sizeof err->message,
                 real ? "the number at line %d column %d is not finite"
                      : "the integer at line %d column %d does not fit in 64 bits",
                 jerr.line, jerr.column);
    } else if (blank && !v && json_error_code(&jerr) == json_error_stack_overflow) {
        err->kind = JSON_CODEC_TOO_DEEP;
        snprintf(err->message, sizeof err->message, "line %d column %d", jerr.line, jerr.column);
    } else if (blank && !v) {
        snprintf(err->message, sizeof err->message, "malformed JSON at line %d column %d: %s",
                 jerr.line, jerr.column, jerr.text);
    } else {
        /* jansson accepts what the scanner refused: say where the scanner stopped */
        int line, column;
        line_column(s->text, s->where, &line, &column);
        snprintf(err->message, sizeof err->message, "malformed JSON at line %d column %d: %s", line,
                 column + 1, s->why ? s->why : "invalid JSON");
    }
    bool found = blank && !v;
    json_decref(v);
    free(blank);
    return found;
}

/* Where assign_stand_ins() is in the scanner's lists of `[]` and `""`. */
typedef struct stand_in_walk {
    json_span *spans;
    json_string_span *strings;
    const size_t *empties, *empty_strings;
    size_t n_empties, n_empty_strings;
    size_t next_empty, next_string;
} stand_in_walk;

/* Give every stand-in of the tree its span: the `[]` (and the `""`
 * values) of the tree in document order (jansson keeps object members in
 * insertion order, and duplicates are refused) are those the scanner
 * noted, in its order. */
static bool assign_stand_ins(stand_in_walk *w, json_t *v)
{
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        if (n == 0) {
            if (w->next_empty >= w->n_empties)
                return false;
            size_t e = w->empties[w->next_empty++];
            if (e != REAL_EMPTY)
                w->spans[e].stand_in = v;
            return true;
        }
        for (size_t i = 0; i < n; i++)
            if (!assign_stand_ins(w, json_array_get(v, i)))
                return false;
    } else if (json_is_object(v)) {
        const char *key;
        json_t *child;
        json_object_foreach (v, key, child) {
            if (!assign_stand_ins(w, child))
                return false;
        }
    } else if (json_is_string(v) && json_string_length(v) == 0) {
        if (w->next_string >= w->n_empty_strings)
            return false;
        size_t e = w->empty_strings[w->next_string++];
        if (e != REAL_EMPTY)
            w->strings[e].stand_in = v;
    }
    return true;
}

static int by_string_stand_in(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const json_string_span *)a)->stand_in;
    uintptr_t y = (uintptr_t)((const json_string_span *)b)->stand_in;
    return x < y ? -1 : x > y;
}

static int by_stand_in(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const json_span *)a)->stand_in;
    uintptr_t y = (uintptr_t)((const json_span *)b)->stand_in;
    return x < y ? -1 : x > y;
}

static void free_spans(json_span *spans, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(spans[i].floats);
    free(spans);
}

/* Whether one of jansson's allocations failed on this thread since the
 * flag was last cleared. jansson 2.14 does not always report a failed
 * allocation: its lexer drops a byte when it cannot grow a string and the
 * parse succeeds with a wrong key. jansson has no per-parse allocator, so
 * the only way to tie a failure to the parse that met it is this
 * thread-local flag, set by the allocator below and read right after
 * json_loadb on the same thread. */
static _Thread_local bool jansson_alloc_failed;

static void *jansson_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        jansson_alloc_failed = true;
    return p;
}

static void jansson_free(void *p)
{
    free(p);
}

void json_doc_setup(void)
{
    json_set_alloc_funcs(jansson_malloc, jansson_free);
}

/* json_loadb, with an allocation failure inside it reported as one. */
static json_t *load_checked(const char *text, size_t len, json_error_t *jerr, bool *no_memory)
{
    jansson_alloc_failed = false;
    json_t *v = json_loadb(text, len, LOAD_FLAGS, jerr);
    *no_memory = jansson_alloc_failed;
    if (*no_memory) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

int json_doc_load(json_doc *doc, const char *body, size_t len, const json_doc_limits *limits,
                  json_codec_error *err)
{
    scanner s = {.text = body,
                 .len = len,
                 .max_values = limits->max_values,
                 .string_span_min = limits->string_span_min ? limits->string_span_min
                                                            : JSON_STRING_SPAN_MIN};
    json_error_t jerr;
    char *envelope = NULL;
    size_t envelope_len = 0;
    int rc = -1;

    memset(doc, 0, sizeof *doc);
    err->kind = JSON_CODEC_OK;
    err->message[0] = '\0';
    skip_ws(&s);
    if (scan_value(&s)) {
        skip_ws(&s);
        if (s.pos != s.len)
            syntax(&s, "end of file expected");
    }
    if (s.stop == JSON_CODEC_SYNTAX) {
        syntax_message(&s, err);
        goto out;
    }
    if (s.stop != JSON_CODEC_OK) {
        err->kind = s.stop;
        goto out;
    }
    if (s.deepest > limits->max_depth) {
        err->kind = JSON_CODEC_TOO_DEEP;
        goto out;
    }
    envelope = envelope_text(&s, &envelope_len);
    if (!envelope) {
        err->kind = JSON_CODEC_NO_MEMORY;
        goto out;
    }
    bool no_memory = false;
    doc->root = load_checked(envelope, envelope_len, &jerr, &no_memory);
    /* jansson does not always say that an allocation failed: when the
     * same text parses the second time, that is what happened */
    if (!doc->root && (no_memory || json_error_code(&jerr) == json_error_out_of_memory ||
                       !syntax_message(&s, err))) {
        err->kind = JSON_CODEC_NO_MEMORY;
        goto out;
    }
    if (!doc->root)
        goto out;
    stand_in_walk walk = {.spans = s.spans,
                          .strings = s.strings,
                          .empties = s.empties,
                          .empty_strings = s.empty_strings,
                          .n_empties = s.n_empties,
                          .n_empty_strings = s.n_empty_strings};
    if (!assign_stand_ins(&walk, doc->root) || walk.next_empty != s.n_empties ||
        walk.next_string != s.n_empty_strings) {
        err->kind = JSON_CODEC_INTERNAL;
        snprintf(err->message, sizeof err->message, "the envelope lost its order");
        goto out;
    }
    if (s.n_spans > 1)
        qsort(s.spans, s.n_spans, sizeof *s.spans, by_stand_in);
    if (s.n_strings > 1)
        qsort(s.strings, s.n_strings, sizeof *s.strings, by_string_stand_in);
    doc->text = body;
    doc->len = len;
    doc->spans = s.spans;
    doc->n_spans = s.n_spans;
    doc->strings = s.strings;
    doc->n_strings = s.n_strings;
    s.spans = NULL;
    s.n_spans = 0;
    s.strings = NULL;
    rc = 0;
out:
    if (rc) {
        json_decref(doc->root);
        doc->root = NULL;
    }
    free_spans(s.spans, s.n_spans);
    free(s.strings);
    free(s.empties);
    free(s.empty_strings);
    free(envelope);
    return rc;
}

void json_doc_free(json_doc *doc)
{
    if (!doc)
        return;
    json_decref(doc->root);
    free_spans(doc->spans, doc->n_spans);
    free(doc->strings);
    memset(doc, 0, sizeof *doc);
}

json_span *json_doc_array(const json_doc *doc, const json_t *v)
{
    if (!doc || !v || !json_is_array(v) || json_array_size(v) != 0)
        return NULL;
    size_t lo = 0, hi = doc->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)doc->spans[mid].stand_in < (uintptr_t)v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < doc->n_spans && doc->spans[lo].stand_in == v ? &doc->spans[lo] : NULL;
}

/* The long string v stands in for, or NULL. */
static const json_string_span *string_span(const json_doc *doc, const json_t *v)
{
    if (!doc || !v || !json_is_string(v) || doc->n_strings == 0)
        return NULL;
    size_t lo = 0, hi = doc->n_strings;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)doc->strings[mid].stand_in < (uintptr_t)v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < doc->n_strings && doc->strings[lo].stand_in == v ? &doc->strings[lo] : NULL;
}

const char *json_doc_string_text(const json_doc *doc, const json_t *v, size_t *len)
{
    const json_string_span *span = string_span(doc, v);

    if (span) {
        *len = span->end - span->start;
        return doc->text + span->start;
    }
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

const char *json_doc_string(const json_doc *doc, const json_t *v)
{
    const json_string_span *span = string_span(doc, v);

    /* a stand-in is `""` until its first call: its text has no escape, so
     * it is the value, and valid UTF-8 */
    if (span && json_string_length(v) == 0 &&
        json_string_setn_nocheck(span->stand_in, doc->text + span->start, span->end - span->start))
        return NULL;
    return json_string_value(v);
}

/* json_doc_string() on every long string inside v: false when out of
 * memory. */
static bool fill_strings(const json_doc *doc, const json_t *v)
{
    if (json_is_string(v))
        return json_doc_string(doc, v) != NULL;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!fill_strings(doc, json_array_get(v, i)))
                return false;
    } else if (json_is_object(v)) {
        const char *key;
        json_t *child;
        json_object_foreach ((json_t *)(uintptr_t)v, key, child) {
            if (!fill_strings(doc, child))
                return false;
        }
    }
    return true;
}

void json_doc_describe(const json_doc *doc, const json_t *v, char *buf, size_t cap)
{
    const json_span *span = json_doc_array(doc, v);
    char text[48];
    size_t n = 0;

    if (span) {
        for (size_t i = span->start; i < span->end && n < sizeof text - 1; i++)
            if (!is_space(doc->text[i]))
                text[n++] = doc->text[i];
        text[n] = '\0';
        snprintf(buf, cap, n > 40 ? "%.37s..." : "%s", text);
        return;
    }
    char *dumped = fill_strings(doc, v) ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (!dumped) {
        snprintf(buf, cap, "(a value)");
        return;
    }
    snprintf(buf, cap, strlen(dumped) > 40 ? "%.37s..." : "%s", dumped);
    free(dumped);
}

/*
 * fast_json.c - see fast_json.h. The scanner follows RFC 8259's grammar;
 * on any doubt it gives up on the fast path and jansson parses the original
 * text, so the fast path can change speed but never the answer.
 */
#include "json/fast_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/base64.h"
#include "json/json_number.h"
#include "json/json_rows.h"
#include "json/number_shim.h"

/* Bodies below this go straight to jansson (lowered in the fuzz build). */
#ifndef FAST_MIN_BODY
#define FAST_MIN_BODY 2048
#endif
/* Arrays with fewer numbers stay in the text. */
#define FAST_MIN_NUMBERS 64
/* Arrays that may be this long are tried with the parallel row parser
 * (the fuzz build lowers it, so that small inputs reach that parser too). */
#ifndef PARALLEL_MIN_BYTES
#define PARALLEL_MIN_BYTES ((size_t)256 << 10)
#endif
/* Base64 strings with fewer characters stay in the text. */
#define FAST_MIN_BASE64 1024
#define FAST_MAX_DEPTH 128
#define MARKER_PREFIX "#posenc-array:"
/* Any JSON value parses (a non-object body is then a 400 invalid_request,
 * not a syntax error); duplicate keys are a syntax error. */
#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

/* A binary tensor string: this header, then the float32 values. The magic
 * holds NUL bytes, which no string from a request can contain (bodies are
 * parsed without JSON_ALLOW_NUL), so it cannot be forged. */
typedef struct tensor_blob_header {
    char magic[8];
    uint64_t ndim;
    uint64_t dim[TENSOR_MAX_NDIM];
} tensor_blob_header;

static const char blob_magic[8] = {'\0', 'p', 'e', 'f', '3', '2', '\0', '\0'};

typedef struct extracted {
    char *blob; /* owned: header + floats */
    size_t size;
    size_t start, end; /* where its text was in the body */
} extracted;

typedef struct scanner {
    const char *text; /* borrowed: the body */
    size_t len, pos;
    extracted *arrays;
    size_t n_arrays, cap_arrays;
    bool failed; /* give up the fast path */
} scanner;

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static void skip_ws(scanner *s)
{
    while (s->pos < s->len && is_space(s->text[s->pos]))
        s->pos++;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool scan_number(scanner *s)
{
    size_t p = s->pos;
    const char *t = s->text;

    if (p < s->len && t[p] == '-')
        p++;
    if (p >= s->len || !is_digit(t[p]))
        return false;
    if (t[p] == '0')
        p++;
    else
        while (p < s->len && is_digit(t[p]))
            p++;
    if (p < s->len && t[p] == '.') {
        p++;
        if (p >= s->len || !is_digit(t[p]))
            return false;
        while (p < s->len && is_digit(t[p]))
            p++;
    }
    if (p < s->len && (t[p] == 'e' || t[p] == 'E')) {
        p++;
        if (p < s->len && (t[p] == '+' || t[p] == '-'))
            p++;
        if (p >= s->len || !is_digit(t[p]))
            return false;
        while (p < s->len && is_digit(t[p]))
            p++;
    }
    s->pos = p;
    return true;
}

/* A string; its raw contents (escapes not decoded) are at *start, *n bytes. */
static bool scan_string(scanner *s, size_t *start, size_t *n)
{
    if (s->pos >= s->len || s->text[s->pos] != '"')
        return false;
    size_t p = ++s->pos;
    while (p < s->len) {
        unsigned char c = (unsigned char)s->text[p];
        if (c == '"') {
            *start = s->pos;
            *n = p - s->pos;
            s->pos = p + 1;
            /* a request string that looks like our marker disables the fast path */
            if (*n >= sizeof MARKER_PREFIX - 1 &&
                memcmp(s->text + *start, MARKER_PREFIX, sizeof MARKER_PREFIX - 1) == 0)
                s->failed = true;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            p++;
            if (p >= s->len)
                return false;
            char e = s->text[p];
            if (e == 'u') {
                for (int k = 1; k <= 4; k++) {
                    char h = p + (size_t)k < s->len ? s->text[p + (size_t)k] : 0;
                    if (!is_digit(h) && !((h | 32) >= 'a' && (h | 32) <= 'f'))
                        return false;
                }
                p += 4;
            } else if (!strchr("\"\\/bfnrt", e) || e == 0) {
                return false;
            }
        }
        p++;
    }
    return false;
}

static bool scan_literal(scanner *s, const char *word)
{
    size_t n = strlen(word);
    if (s->len - s->pos < n || memcmp(s->text + s->pos, word, n) != 0)
        return false;
    s->pos += n;
    return true;
}

/* ---- numeric arrays --------------------------------------------------- */

typedef struct numeric {
    size_t ndim;
    size_t dim[TENSOR_MAX_NDIM];
    bool dim_known[TENSOR_MAX_NDIM];
    float *values; /* owned while scanning */
    size_t count, cap;
} numeric;

static bool push_value(numeric *a, float v)
{
    if (a->count == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        if (cap > TENSOR_MAX_ELEMENTS)
            return false;
        float *grown = realloc(a->values, cap * sizeof *grown);
        if (!grown)
            return false;
        a->values = grown;
        a->cap = cap;
    }
    a->values[a->count++] = v;
    return true;
}

/* The numbers of one innermost row, up to and including its ']'. */
static bool scan_leaf_row(scanner *s, numeric *a, size_t *n_out)
{
    const char *p = s->text + s->pos, *end = s->text + s->len;
    size_t n = 0;

    for (;;) {
        float v;
        while (p < end && is_space(*p))
            p++;
        p = json_number_to_float(p, end, &v);
        if (!p || !isfinite(v) || !push_value(a, v))
            return false;
        n++;
        while (p < end && is_space(*p))
            p++;
        if (p >= end)
            return false;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != ']')
            return false;
        s->pos = (size_t)(p + 1 - s->text);
        *n_out = n;
        return true;
    }
}

/* Parse a nested array of numbers at depth; false when it is anything else
 * (then the caller leaves the text alone). */
static bool scan_numeric(scanner *s, numeric *a, size_t depth)
{
    size_t n = 0;

    if (depth >= TENSOR_MAX_NDIM || s->text[s->pos] != '[')
        return false;
    s->pos++;
    skip_ws(s);
    if (s->pos >= s->len || s->text[s->pos] == ']')
        return false; /* empty: the plain path reports it */
    if (s->text[s->pos] != '[') {
        if (a->ndim == 0)
            a->ndim = depth + 1; /* leaves live at this depth */
        if (a->ndim != depth + 1 || !scan_leaf_row(s, a, &n))
            return false;
    } else {
        for (;;) {
            skip_ws(s);
            if (s->pos >= s->len || s->text[s->pos] != '[' || !scan_numeric(s, a, depth + 1))
                return false;
            n++;
            skip_ws(s);
            if (s->pos >= s->len)
                return false;
            if (s->text[s->pos] == ',') {
                s->pos++;
                continue;
            }
            if (s->text[s->pos] != ']')
                return false;
            s->pos++;
            break;
        }
    }
    if (!a->dim_known[depth]) {
        a->dim_known[depth] = true;
        a->dim[depth] = n;
    }
    return a->dim[depth] == n;
}

/* Room for one more extracted array; false on allocation failure. */
static bool reserve_array_slot(scanner *s)
{
    if (s->n_arrays < s->cap_arrays)
        return true;
    size_t cap = s->cap_arrays ? 2 * s->cap_arrays : 4;
    extracted *grown = realloc(s->arrays, cap * sizeof *grown);
    if (!grown)
        return false;
    s->arrays = grown;
    s->cap_arrays = cap;
    return true;
}

/* Try to take the numeric array at s->pos out of the text; true when it
 * was replaced by a marker (s->pos is then past it). */
static bool try_extract(scanner *s)
{
    size_t start = s->pos;
    numeric a = {0};
    json_rows_result big;

    /* Big arrays: parsed by the OpenMP team straight into the blob. */
    if (s->len - start >= PARALLEL_MIN_BYTES &&
        json_rows_parse(s->text, s->len, start, sizeof(tensor_blob_header), &big)) {
        if (!reserve_array_slot(s)) {
            free(big.block);
            s->failed = true;
            return false;
        }
        tensor_blob_header h = {.ndim = big.ndim};
        memcpy(h.magic, blob_magic, sizeof blob_magic);
        for (size_t i = 0; i < big.ndim; i++)
            h.dim[i] = big.dim[i];
        memcpy(big.block, &h, sizeof h);
        s->arrays[s->n_arrays++] =
            (extracted){.blob = big.block, .size = sizeof h + big.count * sizeof(float),
                        .start = start, .end = big.end};
        s->pos = big.end;
        return true;
    }

    if (scan_numeric(s, &a, 0) && a.count >= FAST_MIN_NUMBERS) {
        size_t size = sizeof(tensor_blob_header) + a.count * sizeof(float);
        char *blob = malloc(size);
        if (blob && reserve_array_slot(s)) {
            tensor_blob_header h = {.ndim = a.ndim};
            memcpy(h.magic, blob_magic, sizeof blob_magic);
            for (size_t i = 0; i < a.ndim; i++)
                h.dim[i] = a.dim[i];
            memcpy(blob, &h, sizeof h);
            memcpy(blob + sizeof h, a.values, a.count * sizeof(float));
            s->arrays[s->n_arrays] = (extracted){.blob = blob, .size = size, .start = start,
                                                 .end = s->pos};
            s->n_arrays++;
            free(a.values);
            return true;
        }
        free(blob);
        s->failed = true;
    }
    free(a.values);
    /* not a clean numeric array: scan it as plain JSON instead */
    s->pos = start;
    return false;
}

/* Take a long base64 string (no escapes) out of the text, decoded; the
 * blob has ndim 0 ("flat": the sibling shape field gives the shape). A
 * string that does not decode stays for the plain path to report. */
static bool try_extract_base64(scanner *s)
{
    size_t start = s->pos;
    const char *quote = memchr(s->text + start + 1, '"', s->len - start - 1);

    if (!quote || memchr(s->text + start + 1, '\\', (size_t)(quote - s->text) - start - 1))
        return false; /* unterminated, or escapes: the plain path decides */
    size_t end = (size_t)(quote - s->text);
    if (end - start - 1 < FAST_MIN_BASE64)
        return false;
    size_t n = 0;
    const char *why = NULL;
    uint8_t *bytes = base64_decode(s->text + start + 1, end - start - 1, &n, &why);
    if (!bytes || n % sizeof(float) != 0 || !reserve_array_slot(s)) {
        free(bytes);
        return false;
    }
    char *blob = malloc(sizeof(tensor_blob_header) + n);
    if (!blob) {
        free(bytes);
        s->failed = true;
        return false;
    }
    tensor_blob_header h = {.ndim = 0};
    memcpy(h.magic, blob_magic, sizeof blob_magic);
    memcpy(blob, &h, sizeof h);
    memcpy(blob + sizeof h, bytes, n);
    free(bytes);
    s->arrays[s->n_arrays++] = (extracted){.blob = blob, .size = sizeof h + n, .start = start,
                                           .end = end + 1};
    s->pos = end + 1;
    return true;
}

/* ---- generic JSON ----------------------------------------------------- */

/* Where the scanner is: numeric arrays are taken from the top-level
 * "embeddings" and from the members of "model"."weights". */
typedef enum context { CTX_ROOT, CTX_TOP, CTX_MODEL, CTX_WEIGHTS, CTX_OTHER } context;

static bool scan_value(scanner *s, size_t depth, context ctx);

/* After a member or element: 1 when a ',' follows (another one comes), 0
 * when the closing `close` does (consumed), -1 on anything else. */
static int next_item(scanner *s, char close)
{
    skip_ws(s);
    if (s->pos >= s->len)
        return -1;
    char c = s->text[s->pos++];
    return c == ',' ? 1 : c == close ? 0 : -1;
}

static bool key_is(const scanner *s, size_t start, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(s->text + start, word, n) == 0;
}

static bool scan_object(scanner *s, size_t depth, context ctx)
{
    s->pos++; /* '{' */
    skip_ws(s);
    if (s->pos < s->len && s->text[s->pos] == '}') {
        s->pos++;
        return true;
    }
    for (;;) {
        size_t kstart, kn;
        skip_ws(s);
        if (!scan_string(s, &kstart, &kn))
            return false;
        skip_ws(s);
        if (s->pos >= s->len || s->text[s->pos] != ':')
            return false;
        s->pos++;
        skip_ws(s);
        if (s->pos >= s->len)
            return false;
        bool numeric_key = (ctx == CTX_TOP && key_is(s, kstart, kn, "embeddings")) ||
                           ctx == CTX_WEIGHTS;
        bool taken = numeric_key && !s->failed &&
                     ((s->text[s->pos] == '[' && try_extract(s)) ||
                      (s->text[s->pos] == '"' && try_extract_base64(s)));
        context child = ctx == CTX_TOP && key_is(s, kstart, kn, "model") ? CTX_MODEL
                        : ctx == CTX_MODEL && key_is(s, kstart, kn, "weights") ? CTX_WEIGHTS
                                                                                : CTX_OTHER;
        if (!taken && !scan_value(s, depth + 1, child))
            return false;
        int more = next_item(s, '}');
        if (more <= 0)
            return more == 0;
    }
}

static bool scan_array(scanner *s, size_t depth)
{
    s->pos++; /* '[' */
    skip_ws(s);
    if (s->pos < s->len && s->text[s->pos] == ']') {
        s->pos++;
        return true;
    }
    for (;;) {
        skip_ws(s);
        if (!scan_value(s, depth + 1, CTX_OTHER))
            return false;
        int more = next_item(s, ']');
        if (more <= 0)
            return more == 0;
    }
}

static bool scan_value(scanner *s, size_t depth, context ctx)
{
    size_t start, n;

    if (depth > FAST_MAX_DEPTH || s->pos >= s->len)
        return false;
    switch (s->text[s->pos]) {
    case '{':
        return scan_object(s, depth, ctx == CTX_ROOT ? CTX_TOP : ctx);
    case '[':
        return scan_array(s, depth);
    case '"':
        return scan_string(s, &start, &n);
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

/* ---- markers back into the tree -------------------------------------- */

static json_t *blob_for(const scanner *s, const json_t *v)
{
    const char *text = json_string_value(v);
    size_t n = sizeof MARKER_PREFIX - 1;
    char *end;

    if (!text || strncmp(text, MARKER_PREFIX, n) != 0)
        return NULL;
    unsigned long index = strtoul(text + n, &end, 10);
    if (*end || index >= s->n_arrays)
        return NULL;
    return json_stringn_nocheck(s->arrays[index].blob, s->arrays[index].size);
}

/* Replace every marker string in the tree by its binary tensor string;
 * false on allocation failure. */
static bool restore(const scanner *s, json_t *v)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *child;
        json_object_foreach(v, key, child) {
            json_t *blob = blob_for(s, child);
            if (blob) {
                if (json_object_set_new(v, key, blob))
                    return false;
            } else if (!restore(s, child)) {
                return false;
            }
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!restore(s, json_array_get(v, i)))
                return false;
    }
    return true;
}

/* The body with each extracted array replaced by its marker string: what
 * jansson parses. The scanner has validated the whole text, so jansson can
 * only still object to duplicate keys, and then the plain path parses the
 * original text and reports the original position. */
static char *reduced_text(const scanner *s, size_t *len)
{
    size_t cap = s->len + 48 * s->n_arrays, n = 0, from = 0;
    char *out = malloc(cap);

    if (!out)
        return NULL;
    for (size_t i = 0; i < s->n_arrays; i++) {
        const extracted *a = &s->arrays[i];
        memcpy(out + n, s->text + from, a->start - from);
        n += a->start - from;
        n += (size_t)snprintf(out + n, cap - n, "\"" MARKER_PREFIX "%zu\"", i);
        from = a->end;
    }
    memcpy(out + n, s->text + from, s->len - from);
    *len = n + s->len - from;
    return out;
}

json_t *fast_json_load(const char *body, size_t len, json_error_t *jerr)
{
    scanner s = {.text = body, .len = len};
    json_t *root = NULL;
    char *reduced = NULL;
    size_t reduced_len = 0;

    if (len < FAST_MIN_BODY)
        return json_loadb(body, len, LOAD_FLAGS, jerr);
    skip_ws(&s);
    if (!scan_value(&s, 0, CTX_ROOT) || s.failed || s.n_arrays == 0)
        goto plain;
    skip_ws(&s);
    if (s.pos != s.len)
        goto plain;
    reduced = reduced_text(&s, &reduced_len);
    if (!reduced)
        goto plain;
    root = json_loadb(reduced, reduced_len, LOAD_FLAGS, jerr);
    if (!root)
        goto plain;
    if (!restore(&s, root)) {
        json_decref(root);
        root = NULL;
        goto plain;
    }
    goto done;
plain:
    root = json_loadb(body, len, LOAD_FLAGS, jerr);
done:
    for (size_t i = 0; i < s.n_arrays; i++)
        free(s.arrays[i].blob);
    free(s.arrays);
    free(reduced);
    return root;
}

const float *fast_json_tensor(const json_t *v, size_t *ndim, size_t *dim, size_t *count)
{
    tensor_blob_header h;
    size_t n = json_string_length(v);
    const char *bytes = json_string_value(v);

    if (!bytes || n < sizeof h || memcmp(bytes, blob_magic, sizeof blob_magic) != 0)
        return NULL;
    memcpy(&h, bytes, sizeof h);
    if (h.ndim > TENSOR_MAX_NDIM || (n - sizeof h) % sizeof(float) != 0)
        return NULL;
    *count = (n - sizeof h) / sizeof(float);
    size_t shaped = 1;
    for (size_t i = 0; i < h.ndim; i++) {
        dim[i] = (size_t)h.dim[i];
        shaped *= dim[i];
    }
    if (h.ndim > 0 && shaped != *count)
        return NULL;
    *ndim = (size_t)h.ndim;
    return (const float *)(const void *)(bytes + sizeof h);
}

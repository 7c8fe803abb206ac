/*
 * json_build.c - see json_build.h. The value grammar and its errors are
 * jansson's (parse_value, parse_object, parse_array in its load.c): the
 * error is raised on the token that breaks the grammar.
 */
#include "json/json_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_number.h"
#include "json/json_rows.h"

/* Arrays whose text may be this long are tried with the parallel row
 * parser, which parses float32 at once (the fuzz build lowers it so that
 * small inputs reach that parser too). Only speed depends on it. */
#ifndef PARALLEL_MIN_BYTES
#define PARALLEL_MIN_BYTES ((size_t)256 << 10)
#endif

static json_t *build_value(json_builder *b);

static bool stop(json_builder *b, json_codec_kind kind)
{
    if (b->stop == JSON_CODEC_OK)
        b->stop = kind;
    return false;
}

/* jansson's copy of a string of n bytes (a value or a key: it lives as
 * long as the tree), charged when it is long: false (a stop) when the
 * charge is refused. */
static bool charge_copy(json_builder *b, size_t n)
{
    if (n < JSON_UNCHARGED_BYTES || json_charge_take(&b->charge, n + 1))
        return true;
    return stop(b, JSON_CODEC_REFUSED);
}

/* Room for items[used]: the capacity doubles, from `first`. */
static bool grow(void **items, size_t *cap, size_t used, size_t size, size_t first)
{
    if (used < *cap)
        return true;
    size_t n = *cap ? 2 * *cap : first;
    void *grown = realloc(*items, n * size);
    if (!grown)
        return false;
    *items = grown;
    *cap = n;
    return true;
}

/* ---- numeric arrays --------------------------------------------------- */

/* The first room for an array's floats (1 KiB): from 16, S1's 1024 numbers
 * took six reallocs, each a copy and a turn of the one malloc arena's
 * lock that both HTTP threads queue on (heap_policy.h). */
#define FLOATS_FIRST ((size_t)256)

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

typedef struct shape_scan {
    const char *t;
    size_t len, pos;
    size_t ndim;
    size_t dim[JSON_ARRAY_MAX_NDIM];
    bool dim_known[JSON_ARRAY_MAX_NDIM];
    size_t count;
    float *floats; /* owned: the values parsed on the way, while `keep` */
    size_t cap;
    bool keep;                 /* all finite so far and no allocation failed */
    const json_charge *charge; /* asked before floats grows */
    size_t charged;            /* what floats holds of it */
    bool refused;              /* charge refused: the body is refused */
} shape_scan;

static void skip_ws(shape_scan *a)
{
    while (a->pos < a->len && is_space(a->t[a->pos]))
        a->pos++;
}

/* Keep v as the count-th value (a->count already counts it); past a
 * non-finite value or a failed allocation, parse nothing more: the typed
 * reader then reads the text and says which value is wrong. */
static void keep_float(shape_scan *a, float v)
{
    if (!a->keep)
        return;
    if (!isfinite(v)) {
        a->keep = false;
        return;
    }
    if (a->count > a->cap) {
        size_t more = (a->cap ? a->cap : FLOATS_FIRST) * sizeof *a->floats; /* what grow() adds */
        if (!json_charge_take(a->charge, more)) {
            a->refused = true;
            a->keep = false;
            return;
        }
        a->charged += more;
        if (!grow((void **)&a->floats, &a->cap, a->count - 1, sizeof *a->floats, FLOATS_FIRST)) {
            a->keep = false;
            return;
        }
    }
    a->floats[a->count - 1] = v;
}

/* The numbers of one innermost row, up to and including its ']', parsed
 * to float32 on the way (json_number_to_float checks the grammar too). */
static bool leaf_row(shape_scan *a, size_t *n)
{
    for (*n = 0;;) {
        float v;
        skip_ws(a);
        const char *end = json_number_to_float(a->t + a->pos, a->t + a->len, &v);
        if (!end)
            return false;
        a->pos = (size_t)(end - a->t);
        (*n)++;
        if (++a->count > JSON_ARRAY_MAX_ELEMENTS)
            return false;
        keep_float(a, v);
        if (a->refused)
            return false;
        skip_ws(a);
        if (a->pos >= a->len)
            return false;
        char c = a->t[a->pos++];
        if (c == ']')
            return true;
        if (c != ',')
            return false;
    }
}

/* A rectangular nested array of numbers at `depth`; false when it is
 * anything else (it is then built as plain JSON). */
static bool numeric_rows(shape_scan *a, size_t depth)
{
    size_t n = 0;

    if (depth >= JSON_ARRAY_MAX_NDIM || a->pos >= a->len || a->t[a->pos] != '[')
        return false;
    a->pos++;
    skip_ws(a);
    if (a->pos >= a->len || a->t[a->pos] == ']')
        return false; /* empty: stays an ordinary `[]` */
    if (a->t[a->pos] != '[') {
        if (a->ndim == 0)
            a->ndim = depth + 1; /* leaves live at this depth */
        if (a->ndim != depth + 1 || !leaf_row(a, &n))
            return false;
    } else {
        for (;;) {
            skip_ws(a);
            if (!numeric_rows(a, depth + 1))
                return false;
            n++;
            skip_ws(a);
            if (a->pos >= a->len)
                return false;
            char c = a->t[a->pos++];
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

/* The numeric array whose '[' is the current token, as a span: its
 * stand-in (new), or NULL when it is not one (nothing moved) or on a stop. */
static json_t *numeric_array(json_builder *b, bool *taken)
{
    size_t start = b->sc.tok_start;
    json_span span = {.start = start};
    json_rows_result big;
    shape_scan a = {.t = b->sc.text,
                    .len = b->sc.len,
                    .pos = start,
                    .keep = true,
                    .charge = &b->charge};

    *taken = false;
    big.refused = big.index_refused = false;
    if (b->sc.len - start >= PARALLEL_MIN_BYTES &&
        json_rows_parse(b->sc.text, b->sc.len, start, 0, &b->charge, &big)) {
        span.ndim = big.ndim;
        memcpy(span.dim, big.dim, sizeof span.dim);
        span.count = big.count;
        span.floats = (float *)(void *)big.block;
        span.end = big.end;
    } else if (!big.refused && (!big.index_refused || json_charge_take(&b->charge, 0)) &&
               numeric_rows(&a, 0)) {
        /* (a refused row index is only slower: the zero take above tells
         * the caller this parse goes on, granted) */
        span.ndim = a.ndim;
        memcpy(span.dim, a.dim, sizeof span.dim);
        span.count = a.count;
        span.end = a.pos;
        if (a.keep) {
            span.floats = a.floats; /* the values, parsed in this same pass */
        } else {
            free(a.floats); /* the typed reader reads the text */
            json_charge_give(&b->charge, a.charged);
        }
    } else {
        free(a.floats);
        json_charge_give(&b->charge, a.charged); /* not a numeric array after all */
        if (big.refused || a.refused) {
            *taken = true; /* nothing more is built */
            stop(b, JSON_CODEC_REFUSED);
        }
        return NULL;
    }
    *taken = true;
    json_t *stand_in = json_array();
    if (!stand_in || !grow((void **)&b->spans, &b->cap_spans, b->n_spans, sizeof *b->spans, 16)) {
        free(span.floats);
        json_decref(stand_in);
        stop(b, JSON_CODEC_NO_MEMORY);
        return NULL;
    }
    span.stand_in = stand_in;
    b->spans[b->n_spans++] = span;
    if (b->depth + span.ndim > b->deepest)
        b->deepest = b->depth + span.ndim;
    b->sc.pos = span.end; /* the current token is now its last ']' */
    return stand_in;
}

/* ---- values ------------------------------------------------------------ */

static bool fail(json_builder *b, const char *what)
{
    return json_scan_fail(&b->sc, JSON_FAULT_SYNTAX, what);
}

static bool enter(json_builder *b)
{
    if (++b->depth > b->deepest)
        b->deepest = b->depth;
    json_scan_next(&b->sc);
    return true;
}

/* The key of the current token, copied when it lives in the scanner's
 * buffer (which the next token overwrites): *owned then frees it. */
static const char *member_key(json_builder *b, char **owned)
{
    *owned = NULL;
    if (b->sc.str_val != b->sc.str)
        return b->sc.str_val;
    *owned = malloc(b->sc.str_len + 1);
    if (*owned)
        memcpy(*owned, b->sc.str_val, b->sc.str_len + 1);
    return *owned;
}

/* One member "key": value of obj, the key being the current token. */
static bool build_member(json_builder *b, json_t *obj)
{
    char *owned;
    size_t n = b->sc.str_len;

    if (b->sc.token != JSON_TOK_STRING)
        return fail(b, "string or '}' expected");
    if (b->sc.str_has_nul)
        return fail(b, "NUL byte in object key not supported");
    if (json_object_getn(obj, b->sc.str_val, n))
        return fail(b, "duplicate object key");
    /* jansson's copy of the key (kept), and ours while the value is built */
    bool copied = b->sc.str_val == b->sc.str;
    if (!charge_copy(b, n) || (copied && !charge_copy(b, n)))
        return false;
    const char *key = member_key(b, &owned);
    if (!key)
        return stop(b, JSON_CODEC_NO_MEMORY);
    json_scan_next(&b->sc);
    if (b->sc.token != ':') {
        free(owned);
        return fail(b, "':' expected");
    }
    json_scan_next(&b->sc);
    json_t *v = build_value(b);
    bool ok = v && json_object_setn_new_nocheck(obj, key, n, v) == 0;
    if (v && !ok)
        stop(b, JSON_CODEC_NO_MEMORY);
    free(owned);
    if (copied && n >= JSON_UNCHARGED_BYTES)
        json_charge_give(&b->charge, n + 1);
    return ok;
}

static bool build_members(json_builder *b, json_t *obj)
{
    enter(b);
    if (b->sc.token == '}')
        goto done;
    for (;;) {
        if (++b->values > b->max_values)
            return stop(b, JSON_CODEC_TOO_MANY_VALUES);
        if (!build_member(b, obj))
            return false;
        json_scan_next(&b->sc);
        if (b->sc.token != ',')
            break;
        json_scan_next(&b->sc);
    }
    if (b->sc.token != '}')
        return fail(b, "'}' expected");
done:
    b->depth--;
    return true;
}

static bool build_elements(json_builder *b, json_t *arr)
{
    enter(b);
    if (b->sc.token == ']')
        goto done;
    while (b->sc.token != JSON_TOK_EOF) {
        json_t *v = build_value(b);
        if (!v)
            return false;
        if (json_array_append_new(arr, v))
            return stop(b, JSON_CODEC_NO_MEMORY);
        json_scan_next(&b->sc);
        if (b->sc.token != ',')
            break;
        json_scan_next(&b->sc);
    }
    if (b->sc.token != ']')
        return fail(b, "']' expected");
done:
    b->depth--;
    return true;
}

static json_t *container(json_builder *b, bool object)
{
    if (!object) {
        bool taken;
        json_t *numbers = numeric_array(b, &taken);
        if (taken)
            return numbers;
    }
    json_t *v = object ? json_object() : json_array();
    if (!v) {
        stop(b, JSON_CODEC_NO_MEMORY);
        return NULL;
    }
    if (!(object ? build_members(b, v) : build_elements(b, v))) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* A string value: a long clean one is a span of the body with `""` in
 * the tree. */
static json_t *string_value(json_builder *b)
{
    const json_scanner *sc = &b->sc;

    if (sc->str_has_nul) {
        fail(b, "\\u0000 is not allowed without JSON_ALLOW_NUL");
        return NULL;
    }
    if (!sc->str_clean || sc->str_len == 0 || sc->str_len < b->string_span_min) {
        if (!charge_copy(b, sc->str_len))
            return NULL;
        return json_stringn_nocheck(sc->str_val, sc->str_len);
    }
    json_t *stand_in = json_string("");
    if (!stand_in ||
        !grow((void **)&b->strings, &b->cap_strings, b->n_strings, sizeof *b->strings, 16)) {
        json_decref(stand_in);
        return NULL;
    }
    size_t start = (size_t)(sc->str_val - sc->text);
    b->strings[b->n_strings++] = (json_string_span){.stand_in = stand_in,
                                                    .start = start,
                                                    .end = start + sc->str_len};
    return stand_in;
}

static json_t *build_value(json_builder *b)
{
    json_t *v;

    if (b->sc.fault != JSON_FAULT_NONE || b->stop != JSON_CODEC_OK)
        return NULL;
    if (++b->values > b->max_values) {
        stop(b, JSON_CODEC_TOO_MANY_VALUES);
        return NULL;
    }
    if (b->depth + 1 > JSON_MAX_DEPTH) {
        json_scan_fail(&b->sc, JSON_FAULT_DEPTH, "maximum parsing depth reached");
        return NULL;
    }
    switch (b->sc.token) {
    case JSON_TOK_STRING:
        v = string_value(b);
        break;
    case JSON_TOK_INTEGER:
        v = json_integer(b->sc.integer);
        break;
    case JSON_TOK_REAL:
        v = json_real(b->sc.real);
        break;
    case JSON_TOK_TRUE:
        v = json_true();
        break;
    case JSON_TOK_FALSE:
        v = json_false();
        break;
    case JSON_TOK_NULL:
        v = json_null();
        break;
    case '{':
    case '[':
        return container(b, b->sc.token == '{');
    case JSON_TOK_INVALID:
        fail(b, "invalid token");
        return NULL;
    default:
        fail(b, "unexpected token");
        return NULL;
    }
    if (!v && b->sc.fault == JSON_FAULT_NONE)
        stop(b, JSON_CODEC_NO_MEMORY);
    return v;
}

json_t *json_build_document(json_builder *b)
{
    json_scan_next(&b->sc);
    json_t *root = build_value(b);
    if (!root)
        return NULL;
    json_scan_next(&b->sc);
    if (b->sc.token != JSON_TOK_EOF) {
        json_scan_fail(&b->sc, JSON_FAULT_SYNTAX, "end of file expected");
        json_decref(root);
        return NULL;
    }
    return root;
}

void json_build_free(json_builder *b)
{
    for (size_t i = 0; i < b->n_spans; i++)
        free(b->spans[i].floats);
    free(b->spans);
    free(b->strings);
    b->spans = NULL;
    b->strings = NULL;
    b->n_spans = b->n_strings = 0;
    json_scan_free(&b->sc);
}

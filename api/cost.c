/*
 * cost.c - what a compute request will cost, estimated from its body
 * without decoding it (api_request_cost, api.h).
 *
 * One pass over the body's bytes, allocating nothing: the members of the
 * top-level object are read for what sizes the work (token_ids,
 * embeddings and their shape, positions, attention_mask, the scheme, the
 * model and its dimensions, `return`, `encoding`), every other value is
 * skipped. Arrays are measured, not read: how many numbers they hold and
 * the longest run at each depth ([batch][tokens][d]). The estimate is
 * then, in nanoseconds of the request computing alone (constants measured
 * on the 2-core development machine with the default team):
 *   parsing          COST_BODY_BYTE per body byte;
 *   each output value COST_OUT_JSON (shortest digits) or COST_OUT_B64;
 *   /apply's q/k/v projection and scores, COST_MACS_PER_NS multiply-adds
 *                    a nanosecond;
 *   /diagnose        COST_DIAGNOSE per value of its subject (its search
 *                    tries tens of variants), on top of the claim.
 * It only has to be right within a few times: the server compares it with
 * thresholds a hundred times apart (compute_gate.c). Whatever the scan
 * cannot read with certainty counts as expensive (API_COST_UNKNOWN): a
 * key or a string read here holding an escape, nesting past
 * COST_MAX_DEPTH, or a body over COST_SCAN_MAX, which costs
 * COST_BIG_BYTE a byte instead (parsing it and an answer as big). A body
 * that is not JSON at all costs its parse only: the handler refuses it
 * there.
 */
#include "api.h"

#include <stdint.h>
#include <string.h>

#include "service.h"

#define COST_BODY_BYTE 3u
#define COST_OUT_JSON 60u
#define COST_OUT_B64 20u
#define COST_MACS_PER_NS 20u
#define COST_DIAGNOSE 2000u
#define COST_SCAN_MAX ((size_t)256 * 1024)
#define COST_BIG_BYTE 40u
#define COST_MAX_DEPTH 8

/* What the scan learnt of one value. dims[k]: the longest array at depth
 * k inside it (dims[0]: its own length); leaves: numbers and other
 * scalars inside; ints: the first integers of a flat array (a shape). */
typedef struct value_info {
    char kind; /* '[', '{', '"', or 's' (any other scalar) */
    int depth; /* array nesting below this value */
    uint64_t dims[COST_MAX_DEPTH];
    uint64_t leaves;
    int64_t ints[4];
    const char *start; /* its text starts here */
    const char *str;   /* a string's raw text, str_len bytes */
    size_t str_len;
} value_info;

typedef struct scan {
    const char *p, *end;
    bool bad;    /* not JSON: the handler refuses it at its parse */
    bool unsure; /* an escape or a depth the estimate cannot read */
} scan;

/* The facts of the request that size its work. */
typedef struct cost_facts {
    value_info ids, emb, shape, emb_shape, pos, mask;
    size_t d_model, heads, kv_heads, head_dim, params_heads;
    bool bias_scheme; /* scheme alibi or t5 */
    bool scheme_given;
    const model *named;
    unsigned returns; /* bits of q k v encoded bias scores gate; 0: default */
    bool base64;
    uint64_t subject; /* /diagnose: values of every other array */
} cost_facts;

enum { R_Q = 1, R_K = 2, R_V = 4, R_ENC = 8, R_BIAS = 16, R_SCORES = 32, R_GATE = 64 };

static void skip_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

/* A string at s->p (its opening quote): raw text into *str. */
static bool scan_string(scan *s, const char **str, size_t *len)
{
    const char *start = ++s->p;
    bool escaped = false;
    while (s->p < s->end && *s->p != '"') {
        if (*s->p == '\\') {
            escaped = true;
            s->p++;
        }
        s->p++;
    }
    if (s->p >= s->end)
        return !(s->bad = true);
    *str = start;
    *len = (size_t)(s->p - start);
    s->p++;
    if (escaped)
        s->unsure = true;
    return true;
}

static bool scan_value(scan *s, int depth, value_info *v);

/* After a member of an array or object: 1 at a ',' (another follows), 0
 * at `close` (the end), -1 (s->bad) at anything else. */
static int after_member(scan *s, char close)
{
    skip_ws(s);
    if (s->p < s->end && (*s->p == ',' || *s->p == close))
        return *s->p++ == ',';
    s->bad = true;
    return -1;
}

/* Bytes that may continue a number or a literal (true, false, null). */
static bool scalar_byte(char c)
{
    return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || (c >= 'a' && c <= 'z') ||
           c == 'E';
}

/* A scalar other than a string, at s->p: a number (its integer part in
 * *n) or a literal. */
static bool scan_scalar(scan *s, int64_t *n)
{
    const char *start = s->p;
    int64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        if (v < INT64_MAX / 16)
            v = v * 10 + (*s->p - '0');
        s->p++;
    }
    while (s->p < s->end && scalar_byte(*s->p))
        s->p++;
    *n = v;
    if (s->p == start)
        return !(s->bad = true);
    return true;
}

/* The open arrays of scan_numbers, one per level. */
typedef struct open_array {
    uint64_t elems; /* commas so far (+1 at the end when not empty) */
    bool any;       /* not empty */
    bool nested;    /* holds arrays, not numbers */
} open_array;

/* The integer whose first digit is at *p, for a shape's first members;
 * *p is left on its last digit. */
static int64_t read_int(const char **p, const char *end)
{
    int64_t v = **p - '0';
    while (*p + 1 < end && (*p)[1] >= '0' && (*p)[1] <= '9' && v < INT64_MAX / 16)
        v = v * 10 + (*++*p - '0');
    return v;
}

/* Byte classes of scan_numbers: 0 for what a number, a literal or white
 * space holds (skipped), else the structure. */
enum { B_SKIP, B_OPEN, B_CLOSE, B_COMMA, B_OTHER };
static const unsigned char byte_class[256] = {
    ['['] = B_OPEN,  [']'] = B_CLOSE, [','] = B_COMMA, ['"'] = B_OTHER,
    ['{'] = B_OTHER, ['}'] = B_OTHER, [':'] = B_OTHER,
};

/* 16 bytes at a time (GCC vector extensions, any target): the commas in
 * p[0..16), or NOT_PLAIN when the block holds a bracket, a quote, a brace
 * or a colon. */
#define NOT_PLAIN 255u
typedef unsigned char bytes16 __attribute__((vector_size(16)));

static unsigned plain_commas(const char *p)
{
    bytes16 b, z = {0};
    memcpy(&b, p, sizeof b);
    bytes16 structure = (bytes16)((b == z + '[') | (b == z + ']') | (b == z + '"') |
                                  (b == z + '{') | (b == z + '}') | (b == z + ':'));
    uint64_t w[2];
    memcpy(w, &structure, sizeof w);
    if ((w[0] | w[1]) != 0)
        return NOT_PLAIN;
    bytes16 commas = (bytes16)(b == z + ',');
    memcpy(w, &commas, sizeof w);
    /* A comma is a 0xff byte: keep one bit of each and add the eight bytes
     * of a word up with one multiply (at most 8, so no byte carries).
     * __builtin_popcountll is a libgcc call on x86-64's baseline: 3% of S1. */
    const uint64_t ones = 0x0101010101010101u;
    return (unsigned)(((w[0] & ones) * ones) >> 56) + (unsigned)(((w[1] & ones) * ones) >> 56);
}

/* The fast path of an array of numbers, nested or not (the bulk of a
 * body): one pass that classifies each byte by a table and looks at
 * brackets and commas only. False, s->p unmoved, at a string or an object
 * inside: scan_array reads those. */
static bool scan_numbers(scan *s, int depth, value_info *v)
{
    open_array open[COST_MAX_DEPTH + 1];
    int d = 0;
    for (const char *p = s->p; p < s->end; p++) {
        /* Inside rows of numbers (not a shape's first members), 16 bytes
         * at a time. */
        while (d > 0 && (d > 1 || open[1].elems >= 4) && s->end - p >= 16) {
            unsigned n = plain_commas(p);
            if (n == NOT_PLAIN)
                break;
            open[d].elems += n;
            open[d].any = true;
            p += 16;
        }
        const char *run = p;
        while (p < s->end && byte_class[(unsigned char)*p] == B_SKIP)
            p++;
        if (p > run && d > 0) {
            open[d].any = true;
            while (run < p && (*run == ' ' || *run == '\n' || *run == '\r' || *run == '\t'))
                run++;
            if (d == 1 && open[1].elems < 4 && run < p && *run >= '0' && *run <= '9')
                v->ints[open[1].elems] = read_int(&run, s->end);
        }
        if (p >= s->end)
            break;
        switch (byte_class[(unsigned char)*p]) {
        case B_OPEN:
            if (d > 0)
                open[d].any = open[d].nested = true;
            if (depth + ++d > COST_MAX_DEPTH) {
                s->unsure = s->bad = true;
                return true;
            }
            open[d] = (open_array){0, false, false};
            v->depth = d > v->depth ? d : v->depth;
            break;
        case B_CLOSE: {
            uint64_t n = open[d].elems + open[d].any;
            v->dims[d - 1] = n > v->dims[d - 1] ? n : v->dims[d - 1];
            v->leaves += open[d].nested ? 0 : n;
            if (--d == 0) {
                s->p = p + 1;
                return true;
            }
            break;
        }
        case B_COMMA:
            open[d].elems++;
            break;
        default:
            return false;
        }
    }
    s->bad = true; /* never closed */
    return true;
}

/* An array at s->p; merges its elements' dims one level down. Numbers,
 * the bulk of a body, are read without a value_info of their own. */
static bool scan_array(scan *s, int depth, value_info *v)
{
    if (scan_numbers(s, depth, v))
        return !s->bad;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return true;
    }
    for (uint64_t n = 0;; n++) {
        value_info e;
        skip_ws(s);
        if (s->p < s->end && *s->p != '[' && *s->p != '{' && *s->p != '"') {
            int64_t num;
            if (!scan_scalar(s, &num))
                return false;
            v->leaves++;
            if (n < 4)
                v->ints[n] = num;
        } else if (!scan_value(s, depth + 1, &e)) {
            return false;
        } else if (e.kind == '[') {
            for (int k = 0; k < e.depth && k + 1 < COST_MAX_DEPTH; k++)
                if (e.dims[k] > v->dims[k + 1])
                    v->dims[k + 1] = e.dims[k];
            if (e.depth + 1 > v->depth)
                v->depth = e.depth + 1;
            v->leaves += e.leaves;
        } else {
            v->leaves++;
        }
        v->dims[0] = n + 1;
        int next = after_member(s, ']');
        if (next <= 0)
            return next == 0;
    }
}

typedef void member_fn(scan *s, void *ctx, const char *key, size_t klen, const value_info *v);

static bool scan_object(scan *s, int depth, member_fn *fn, void *ctx);

static bool scan_value(scan *s, int depth, value_info *v)
{
    memset(v, 0, sizeof *v);
    skip_ws(s);
    if (depth > COST_MAX_DEPTH) {
        s->unsure = true;
        return !(s->bad = true);
    }
    if (s->p >= s->end)
        return !(s->bad = true);
    v->start = s->p;
    v->kind = *s->p == '[' || *s->p == '{' || *s->p == '"' ? *s->p : 's';
    if (v->kind == '[') {
        v->depth = 1;
        return scan_array(s, depth, v);
    }
    if (v->kind == '{')
        return scan_object(s, depth, NULL, NULL);
    if (v->kind == '"')
        return scan_string(s, &v->str, &v->str_len);
    return scan_scalar(s, &v->ints[0]);
}

/* An object at s->p: fn(ctx, key, value) for each member whose value is
 * not an object (objects are handed to fn before they are read, with
 * v->kind '{', and fn reads them, or NULL skips them). */
static bool scan_object(scan *s, int depth, member_fn *fn, void *ctx)
{
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        const char *key;
        size_t klen;
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"' || !scan_string(s, &key, &klen))
            return !(s->bad = true);
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return !(s->bad = true);
        s->p++;
        skip_ws(s);
        value_info v = {.kind = s->p < s->end && *s->p == '{' ? '{' : 0};
        if (v.kind == '{' && fn != NULL) {
            fn(s, ctx, key, klen, &v);
            if (s->bad)
                return false;
        } else if (!scan_value(s, depth + 1, &v)) {
            return false;
        } else if (fn != NULL) {
            fn(s, ctx, key, klen, &v);
        }
        int next = after_member(s, '}');
        if (next <= 0)
            return next == 0;
    }
}

static bool key_is(const char *key, size_t klen, const char *name)
{
    return strlen(name) == klen && memcmp(key, name, klen) == 0;
}

static bool str_is(const value_info *v, const char *text)
{
    return v->kind == '"' && key_is(v->str, v->str_len, text);
}

static size_t as_size(const value_info *v)
{
    return v->kind == 's' && v->ints[0] > 0 ? (size_t)v->ints[0] : 0;
}

/* Members of `params` (top level or the inline model's). */
static void on_params(scan *s, void *ctx, const char *key, size_t klen, const value_info *v)
{
    cost_facts *f = ctx;
    if (v->kind == '{')
        scan_object(s, 2, NULL, NULL);
    else if (key_is(key, klen, "heads"))
        f->params_heads = as_size(v);
}

/* Members of an inline model object: its dimensions and scheme. */
static void on_model(scan *s, void *ctx, const char *key, size_t klen, const value_info *v)
{
    cost_facts *f = ctx;
    if (v->kind == '{') {
        scan_object(s, 2, key_is(key, klen, "params") ? on_params : NULL, ctx);
        return;
    }
    if (key_is(key, klen, "d_model"))
        f->d_model = as_size(v);
    else if (key_is(key, klen, "heads"))
        f->heads = as_size(v);
    else if (key_is(key, klen, "kv_heads"))
        f->kv_heads = as_size(v);
    else if (key_is(key, klen, "head_dim"))
        f->head_dim = as_size(v);
    else if (key_is(key, klen, "scheme") && !f->scheme_given)
        f->bias_scheme = str_is(v, "alibi") || str_is(v, "t5");
}

static unsigned return_bit(const char *name, size_t len)
{
    static const char *const names[] = {"q", "k", "v", "encoded", "bias", "scores", "gate"};
    for (unsigned i = 0; i < 7; i++)
        if (key_is(name, len, names[i]))
            return 1u << i;
    return 0;
}

/* `return`: a flat list of strings, read again from its text. */
static unsigned scan_returns(const char *start, const char *end)
{
    unsigned bits = 0;
    for (const char *p = start; p < end; p++) {
        if (*p != '"')
            continue;
        const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
        if (q == NULL)
            break;
        bits |= return_bit(p + 1, (size_t)(q - p - 1));
        p = q;
    }
    return bits;
}

/* `model` given by name: that model's dimensions (an unknown name is a
 * 404 at once; the default model's stand in). */
static void set_named_model(const api_service *svc, cost_facts *f, const value_info *v)
{
    char name[128];
    if (v->kind != '"' || v->str_len >= sizeof name)
        return;
    memcpy(name, v->str, v->str_len);
    name[v->str_len] = '\0';
    const model *m = service_find_model(svc, name);
    if (m != NULL)
        f->named = m;
}

typedef struct top_ctx {
    const api_service *svc;
    cost_facts *f;
} top_ctx;

/* The arrays that size the work, by key, in the order of cost_facts. */
static const char *const sized_keys[] = {"token_ids",        "embeddings", "shape",
                                         "embeddings_shape", "positions",  "attention_mask"};

static void on_top(scan *s, void *ctx, const char *key, size_t klen, const value_info *v)
{
    top_ctx *t = ctx;
    cost_facts *f = t->f;
    if (v->kind == '{') {
        member_fn *fn = key_is(key, klen, "model")    ? on_model
                        : key_is(key, klen, "params") ? on_params
                                                      : NULL;
        scan_object(s, 1, fn, f);
        return;
    }
    value_info *slot[] = {&f->ids, &f->emb, &f->shape, &f->emb_shape, &f->pos, &f->mask};
    for (int i = 0; i < 6; i++)
        if (key_is(key, klen, sized_keys[i]))
            *slot[i] = *v;
    if (key_is(key, klen, "scheme")) {
        f->scheme_given = true;
        f->bias_scheme = str_is(v, "alibi") || str_is(v, "t5");
    } else if (key_is(key, klen, "model")) {
        set_named_model(t->svc, f, v);
    } else if (key_is(key, klen, "return") && v->kind == '[') {
        f->returns = scan_returns(v->start, s->p);
    } else if (key_is(key, klen, "encoding")) {
        f->base64 = str_is(v, "base64");
    }
    if (v->kind == '[')
        f->subject += v->leaves;
    else if (v->kind == '"')
        f->subject += v->str_len * 3 / 16; /* base64 float32 */
}

/* The request's shape: rows (batch x tokens), tokens per row and d. */
typedef struct cost_shape {
    double rows, tokens, d;
} cost_shape;

static void take(cost_shape *c, double rows, double tokens, double d)
{
    if (rows > c->rows)
        c->rows = rows;
    if (tokens > c->tokens)
        c->tokens = tokens;
    if (d > c->d)
        c->d = d;
}

/* From a `shape` [.., tokens, d]. */
static void take_shape(cost_shape *c, const value_info *v)
{
    size_t n = v->dims[0] < 4 ? (size_t)v->dims[0] : 4;
    if (v->kind != '[' || v->depth != 1 || n < 2)
        return;
    double rows = 1;
    for (size_t i = 0; i + 1 < n; i++)
        rows *= (double)v->ints[i];
    take(c, rows, (double)v->ints[n - 2], (double)v->ints[n - 1]);
}

/* From a numeric array: embeddings [.., tokens, d] when has_d, else
 * token_ids, positions or a mask [.., tokens]. */
static void take_array(cost_shape *c, const value_info *v, bool has_d)
{
    if (v->kind != '[' || v->depth < (has_d ? 2 : 1))
        return;
    double d = has_d ? (double)v->dims[v->depth - 1] : 0;
    double tokens = (double)v->dims[v->depth - (has_d ? 2 : 1)];
    take(c, d > 0 ? (double)v->leaves / d : (double)v->leaves, tokens, d);
}

/* The model the request runs on: inline dimensions over the named (or
 * default) model's. */
static void model_dims(const api_service *svc, cost_facts *f)
{
    const model *m = f->named ? f->named : service_find_model(svc, "default");
    if (f->d_model == 0 && m != NULL) {
        f->d_model = m->d_model;
        f->heads = m->heads;
        f->kv_heads = m->kv_heads;
        f->head_dim = m->head_dim;
        if (!f->scheme_given)
            f->bias_scheme = m->scheme == SCHEME_ALIBI || m->scheme == SCHEME_T5;
    }
    if (f->heads == 0)
        f->heads = 1;
    if (f->kv_heads == 0)
        f->kv_heads = f->heads;
    if (f->head_dim == 0)
        f->head_dim = f->d_model / f->heads > 0 ? f->d_model / f->heads : 1;
}

/* Nanoseconds of work the facts ask for (see the top of the file). */
static double facts_cost(const cost_facts *f, api_endpoint ep, size_t len)
{
    cost_shape c = {0, 0, 0};
    take_array(&c, &f->ids, false);
    take_array(&c, &f->emb, true);
    take_shape(&c, &f->shape);
    take_shape(&c, &f->emb_shape);
    take_array(&c, &f->pos, false);
    take_array(&c, &f->mask, false);
    if (c.d == 0)
        c.d = (double)f->d_model;
    double batch = c.tokens > 0 ? c.rows / c.tokens : 1;
    double heads = (double)(f->params_heads ? f->params_heads : f->heads);
    double square = (batch < 1 ? 1 : batch) * heads * c.tokens * c.tokens;
    double hd = (double)f->head_dim, kv = (double)f->kv_heads;
    double out = 0, macs = 0;
    if (ep == API_ENDPOINT_ENCODE) {
        out = f->bias_scheme ? square : c.rows * c.d;
    } else {
        unsigned r = f->returns ? f->returns : R_Q | R_K | R_V;
        macs = c.rows * c.d * ((double)f->heads + 2 * kv) * hd;
        out += (r & R_Q) ? c.rows * (double)f->heads * hd : 0;
        out += (r & R_K) ? c.rows * kv * hd : 0;
        out += (r & R_V) ? c.rows * kv * hd : 0;
        out += (r & R_ENC) ? c.rows * c.d : 0;
        out += (r & R_BIAS) ? square : 0;
        out += (r & R_SCORES) ? square : 0;
        macs += (r & R_SCORES) ? square * hd : 0;
        /* gated attention's gate: one more projection, as wide as q */
        out += (r & R_GATE) ? c.rows * (double)f->heads * hd : 0;
        macs += (r & R_GATE) ? c.rows * c.d * (double)f->heads * hd : 0;
    }
    double ns = (double)len * COST_BODY_BYTE + macs / COST_MACS_PER_NS +
                out * (f->base64 ? COST_OUT_B64 : COST_OUT_JSON);
    if (ep == API_ENDPOINT_DIAGNOSE)
        ns += (double)f->subject * COST_DIAGNOSE;
    return ns;
}

uint64_t api_request_cost(const api_service *svc, api_endpoint ep, const char *body, size_t len)
{
    if (len > COST_SCAN_MAX)
        return (uint64_t)len * COST_BIG_BYTE;
    cost_facts f;
    memset(&f, 0, sizeof f);
    scan s = {.p = body, .end = body + len};
    top_ctx t = {svc, &f};
    skip_ws(&s);
    if (s.p < s.end && *s.p == '{')
        scan_object(&s, 0, on_top, &t);
    else
        s.bad = true;
    if (s.unsure)
        return API_COST_UNKNOWN;
    if (s.bad)
        return (uint64_t)len * COST_BODY_BYTE;
    model_dims(svc, &f);
    double ns = facts_cost(&f, ep, len);
    return ns >= (double)API_COST_UNKNOWN ? API_COST_UNKNOWN : (uint64_t)ns;
}

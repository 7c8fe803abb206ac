/*
 * test_decoder_diff.c - posenc's one-pass request decoder (json_scan.c,
 * json_build.c) against jansson's own parser, the independent reference:
 * many generated bodies, valid and not (nested values, escapes and
 * surrogate pairs, raw UTF-8, numbers near int64's and double's limits,
 * numeric arrays of 1 to 5 dimensions, ragged ones, and random byte
 * mutations of these and of real request bodies). For each, both must
 * accept or both refuse; an accepted body must give the same values
 * (numeric arrays read back as doubles, long strings as strings) and a
 * refused one the same message at the same line and column.
 *
 * One difference is by design: a numeric array keeps its text for the
 * typed readers (which answer non_finite with the element's path), so a
 * number jansson cannot hold inside one is accepted by the codec.
 */
#include "test_list.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "json/json_doc.h"
#include "json/strbuf.h"

typedef struct gen {
    uint64_t state;
    strbuf sb;
} gen;

static uint64_t next_random(gen *g)
{
    g->state ^= g->state << 13;
    g->state ^= g->state >> 7;
    g->state ^= g->state << 17;
    return g->state;
}

static size_t pick(gen *g, size_t n)
{
    return (size_t)(next_random(g) % n);
}

static void space(gen *g)
{
    static const char *const ws[] = {"", "", "", " ", "\n", "\t ", "\r\n  "};
    strbuf_puts(&g->sb, ws[pick(g, ARRAY_LEN(ws))]);
}

/* A number; in_array: one any double and int64 hold (see the top). */
static void gen_number(gen *g, bool in_array)
{
    static const char *const odd[] = {"0",
                                      "-0",
                                      "9223372036854775807",
                                      "-9223372036854775808",
                                      "9223372036854775808",
                                      "-9223372036854775809",
                                      "1e308",
                                      "1.7976931348623157e308",
                                      "1.8e308",
                                      "-1e309",
                                      "4.9e-324",
                                      "1e-400",
                                      "0.5",
                                      "1E+2",
                                      "-12.25e-3",
                                      "123456789012345678901234567890",
                                      "1.00000000000000000000000001",
                                      "3.4028235e38",
                                      "3.5e38",
                                      "1e-46"};
    static const char *const held[] = {"0",
                                       "-0",
                                       "9223372036854775807",
                                       "-9223372036854775808",
                                       "1.7976931348623157e308",
                                       "4.9e-324",
                                       "1e-400",
                                       "3.5e38"};
    if (pick(g, 3) == 0) {
        if (in_array)
            strbuf_puts(&g->sb, held[pick(g, ARRAY_LEN(held))]);
        else
            strbuf_puts(&g->sb, odd[pick(g, ARRAY_LEN(odd))]);
        return;
    }
    if (pick(g, 2))
        strbuf_printf(&g->sb, "%lld", (long long)(next_random(g) % 2000001) - 1000000);
    else
        strbuf_printf(&g->sb, "%.*g", (int)pick(g, 17) + 1,
                      ((double)(next_random(g) % 1000000) - 5e5) *
                          pow(10.0, (double)pick(g, 40) - 20.0));
}

static void gen_string(gen *g)
{
    static const char *const parts[] = {"a",
                                        "key",
                                        "\\n",
                                        "\\\"",
                                        "\\\\",
                                        "\\/",
                                        "\\u00e9",
                                        "\\u20AC",
                                        "\\ud83d\\ude00",
                                        "\xc3\xa9",
                                        "\xe2\x82\xac",
                                        "\xf0\x9f\x98\x80",
                                        "\\t",
                                        " ",
                                        "#posenc",
                                        "\\u0041",
                                        "\\b\\f\\r"};
    size_t n = pick(g, 6);
    strbuf_putc(&g->sb, '"');
    if (pick(g, 10) == 0)
        n = 20 + pick(g, 40); /* long: a span when clean */
    for (size_t i = 0; i < n; i++)
        strbuf_puts(&g->sb, parts[pick(g, n > 10 ? 2 : ARRAY_LEN(parts))]);
    strbuf_putc(&g->sb, '"');
}

/* A rectangular (or, rarely, ragged) array of numbers of ndim dims. */
static void gen_numeric(gen *g, size_t ndim, size_t width)
{
    size_t n = width + (ndim == 1 && pick(g, 12) == 0);
    strbuf_putc(&g->sb, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            strbuf_putc(&g->sb, ',');
        space(g);
        if (ndim == 1)
            gen_number(g, true);
        else
            gen_numeric(g, ndim - 1, width);
    }
    strbuf_putc(&g->sb, ']');
}

static void gen_value(gen *g, int depth)
{
    size_t kind = pick(g, depth > 5 ? 5 : 9);
    space(g);
    switch (kind) {
    case 0:
        gen_number(g, false);
        break;
    case 1:
        gen_string(g);
        break;
    case 2:
        strbuf_puts(&g->sb, pick(g, 2) ? "true" : "null");
        break;
    case 3:
        strbuf_puts(&g->sb, "false");
        break;
    case 4:
    case 5:
        gen_numeric(g, 1 + pick(g, 5), 1 + pick(g, 4));
        break;
    case 6:
    case 7: {
        size_t n = pick(g, 5);
        strbuf_putc(&g->sb, '{');
        for (size_t i = 0; i < n; i++) {
            if (i)
                strbuf_putc(&g->sb, ',');
            space(g);
            gen_string(g);
            space(g);
            strbuf_putc(&g->sb, ':');
            gen_value(g, depth + 1);
        }
        space(g);
        strbuf_putc(&g->sb, '}');
        break;
    }
    default: {
        size_t n = pick(g, 5);
        strbuf_putc(&g->sb, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                strbuf_putc(&g->sb, ',');
            gen_value(g, depth + 1);
        }
        space(g);
        strbuf_putc(&g->sb, ']');
    }
    }
    space(g);
}

/* Random byte edits: deletions, insertions, replacements, a cut. */
static void mutate(gen *g, char *body, size_t *len, size_t cap)
{
    static const char bytes[] = "\"\\,:[]{}0-.eE1u \n\x01\x80\xc3\xff\xed\xa0\xf4\x90tnx";
    size_t edits = 1 + pick(g, 3);
    for (size_t e = 0; e < edits && len[0] > 0; e++) {
        size_t at = pick(g, *len), op = pick(g, 4);
        char c = bytes[pick(g, sizeof bytes - 1)];
        if (op == 0) {
            memmove(body + at, body + at + 1, *len - at - 1);
            --*len;
        } else if (op == 1 && *len + 1 < cap) {
            memmove(body + at + 1, body + at, *len - at);
            body[at] = c;
            ++*len;
        } else if (op == 2) {
            body[at] = c;
        } else {
            *len = at;
        }
    }
}

static bool same_value(const json_doc *doc, const json_t *mine, json_t *ref);

/* A numeric array's span against jansson's nested arrays. */
static bool same_span(const json_doc *doc, json_span *span, const json_t *ref)
{
    double *got = malloc(span->count * sizeof *got);
    size_t bad, flat = 0;
    bool same = got && json_span_doubles(span, doc->text, got, &bad) == JSON_READ_OK;
    const json_t *stack[JSON_ARRAY_MAX_NDIM + 1] = {ref};
    size_t index[JSON_ARRAY_MAX_NDIM + 1] = {0};

    /* walk ref's leaves in order, checking the shape on the way */
    for (size_t d = 0; same;) {
        const json_t *a = stack[d];
        if (!json_is_array(a) || json_array_size(a) != span->dim[d]) {
            same = false;
            break;
        }
        if (index[d] == span->dim[d]) {
            if (d == 0)
                break;
            index[--d]++;
            continue;
        }
        const json_t *item = json_array_get(a, index[d]);
        if (d + 1 < span->ndim) {
            stack[++d] = item;
            index[d] = 0;
            continue;
        }
        same = json_is_number(item) && flat < span->count && got[flat++] == json_number_value(item);
        index[d]++;
    }
    free(got);
    return same && flat == span->count;
}

static bool same_members(const json_doc *doc, const json_t *mine, json_t *ref)
{
    const char *key;
    json_t *v;

    if (json_object_size(mine) != json_object_size(ref))
        return false;
    json_object_foreach (ref, key, v) {
        const json_t *m = json_object_getn(mine, key,
                                           json_object_iter_key_len(json_object_key_to_iter(key)));
        if (!m || !same_value(doc, m, v))
            return false;
    }
    return true;
}

static bool same_value(const json_doc *doc, const json_t *mine, json_t *ref)
{
    json_span *span = json_doc_array(doc, mine);

    if (span)
        return same_span(doc, span, ref);
    if (json_is_object(mine))
        return json_is_object(ref) && same_members(doc, mine, ref);
    if (json_is_array(mine)) {
        if (!json_is_array(ref) || json_array_size(ref) != json_array_size(mine))
            return false;
        for (size_t i = 0; i < json_array_size(mine); i++)
            if (!same_value(doc, json_array_get(mine, i), json_array_get(ref, i)))
                return false;
        return true;
    }
    if (json_is_string(mine)) {
        const char *s = json_doc_string(doc, mine);
        return s && json_is_string(ref) && json_string_length(mine) == json_string_length(ref) &&
               memcmp(s, json_string_value(ref), json_string_length(ref)) == 0;
    }
    return json_equal(mine, ref) && json_typeof(mine) == json_typeof(ref);
}

/* The message the codec must give for jansson's error. */
static void expected_message(const json_error_t *jerr, char *out, size_t cap)
{
    enum json_error_code code = json_error_code(jerr);
    if (code == json_error_numeric_overflow)
        snprintf(out, cap,
                 strstr(jerr->text, "real")
                     ? "the number at line %d column %d is not finite"
                     : "the integer at line %d column %d does not fit in 64 bits",
                 jerr->line, jerr->column);
    else if (code == json_error_stack_overflow)
        snprintf(out, cap, "line %d column %d", jerr->line, jerr->column);
    else
        snprintf(out, cap, "malformed JSON at line %d column %d: %s", jerr->line, jerr->column,
                 jerr->text);
}

typedef struct tally {
    size_t bodies, accepted, refused, by_design, failures;
} tally;

/* Whether jansson's overflow lies inside one of the doc's numeric arrays
 * (the difference by design). */
static bool overflow_in_span(const json_doc *doc, const json_error_t *jerr)
{
    for (size_t i = 0; i < doc->n_spans; i++)
        if ((size_t)jerr->position > doc->spans[i].start &&
            (size_t)jerr->position < doc->spans[i].end)
            return true;
    return false;
}

/* Whether the overflow jansson met at `at` lies in a numeric array of the
 * body (a bracketed run of numbers), which the codec reads as text. */
static bool overflow_in_numbers(const char *body, size_t len, size_t at)
{
    for (size_t open = at; open-- > 0;) {
        if (body[open] != '[')
            continue;
        size_t close = open, level = 0;
        for (; close < len; close++) {
            level += body[close] == '[';
            if (body[close] == ']' && --level == 0)
                break;
        }
        if (close >= len || close < at)
            continue;
        json_doc doc;
        json_codec_error ce;
        json_doc_limits limits = {.max_depth = 16, .max_values = 4};
        if (json_doc_load(&doc, body + open, close + 1 - open, &limits, &ce) == 0) {
            bool numbers = json_doc_array(&doc, doc.root) != NULL;
            json_doc_free(&doc);
            if (numbers)
                return true;
        }
    }
    return false;
}

static void compare_one(const char *body, size_t len, size_t span_min, tally *t)
{
    json_error_t jerr;
    json_t *ref = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    json_doc doc;
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = JSON_MAX_DEPTH,
                              .max_values = SIZE_MAX,
                              .string_span_min = span_min};
    bool ok = json_doc_load(&doc, body, len, &limits, &ce) == 0;
    bool fine;
    char want[400];

    t->bodies++;
    if (ref && ok) {
        fine = same_value(&doc, doc.root, ref);
        t->accepted++;
    } else if (!ref && !ok) {
        expected_message(&jerr, want, sizeof want);
        fine = strcmp(want, ce.message) == 0;
        if (!fine && json_error_code(&jerr) == json_error_numeric_overflow &&
            overflow_in_numbers(body, len, (size_t)jerr.position)) {
            fine = true;
            t->by_design++;
        }
        t->refused++;
    } else if (ok && json_error_code(&jerr) == json_error_numeric_overflow &&
               overflow_in_span(&doc, &jerr)) {
        fine = true;
        t->by_design++;
    } else {
        fine = false;
        snprintf(want, sizeof want, "%s", ref ? "(accepted)" : jerr.text);
    }
    if (!fine && t->failures++ < 8)
        CHECK(false, "body %.*s: jansson %s, codec %s", (int)(len > 160 ? 160 : len), body,
              ref ? "accepts" : want, ok ? "accepts" : ce.message);
    if (ok)
        json_doc_free(&doc);
    json_decref(ref);
}

static const char *const real_bodies[] = {
    "{\"embeddings\":[[0.5,-1.25,3e-2,4],[1,2,3,4]],\"positions\":[0,1],\"scheme\":\"rope\","
    "\"params\":{\"base\":10000,\"scaling\":{\"type\":\"linear\",\"factor\":2.0}}}",
    "{\"shape\":[2,4],\"encoding\":\"base64\",\"embeddings\":"
    "\"AACAPwAAAEAAAEBAAACAQAAAgD8AAABAAABAQAAAgEA=\"}",
    "{\"model\":{\"d_model\":4,\"heads\":2,\"weights\":{\"wq\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,"
    "0,1]]}},"
    "\"token_ids\":[1,2,3],\"return\":[\"q\",\"k\"]}",
    "{\n  \"subject\": {\"q\": [[[1.5, 2.5]]], \"k\": [[[3, 4]]]},\n  \"offset\": 7\n}\n",
};

/* Nesting at jansson's limit: [[..."x"...]] and [[...{}...]] around it. */
static void deep_bodies(tally *t)
{
    static const char *const inner[] = {"\"x\"", "{}", "[]", "{\"a\":[\"b\"]}"};
    size_t depths[] = {2046, 2047, 2048, 2049, 2050};
    char *body = malloc(2 * 2050 + 16);

    if (!body)
        return;
    for (size_t d = 0; d < ARRAY_LEN(depths); d++)
        for (size_t k = 0; k < ARRAY_LEN(inner); k++) {
            size_t n = 0, w = strlen(inner[k]);
            memset(body, '[', depths[d]);
            n = depths[d];
            memcpy(body + n, inner[k], w);
            n += w;
            memset(body + n, ']', depths[d]);
            n += depths[d];
            compare_one(body, n, SIZE_MAX, t);
        }
    free(body);
}

void test_decoder_diff(void)
{
    enum { GENERATED = 6000, MUTATIONS = 6 };
    gen g = {.state = 0x9E3779B97F4A7C15ull};
    tally t = {0};
    char *buf = malloc(1 << 16);

    if (!buf)
        return;
    for (size_t i = 0; i < GENERATED + ARRAY_LEN(real_bodies); i++) {
        g.sb.len = 0;
        if (i < ARRAY_LEN(real_bodies))
            strbuf_puts(&g.sb, real_bodies[i]);
        else
            gen_value(&g, 0);
        size_t len = g.sb.len < (1 << 15) ? g.sb.len : (1 << 15);
        size_t span_min = pick(&g, 2) ? 16 : SIZE_MAX;
        compare_one(g.sb.data, len, span_min, &t);
        for (int m = 0; m < MUTATIONS; m++) {
            size_t n = len;
            memcpy(buf, g.sb.data, len);
            mutate(&g, buf, &n, 1 << 16);
            compare_one(buf, n, span_min, &t);
        }
    }
    deep_bodies(&t);
    CHECK(t.failures == 0, "%zu of %zu bodies differ from jansson", t.failures, t.bodies);
    CHECK(t.accepted > 1000 && t.refused > 1000, "both kinds met: %zu accepted, %zu refused",
          t.accepted, t.refused);
    printf("decoder_diff: %zu bodies, %zu accepted alike, %zu refused alike, %zu overflow in a "
           "numeric array (by design)\n",
           t.bodies, t.accepted, t.refused, t.by_design);
    free(buf);
    strbuf_free(&g.sb);
}

/*
 * json_doc.c - see json_doc.h: the document API over json_build's one
 * pass (json_scan.c tokenizes, json_build.c builds; jansson parses
 * nothing here).
 */
#include "json/json_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_build.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
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

static void *codec_malloc(size_t n)
{
    return malloc(n);
}

static void codec_free(void *p)
{
    free(p);
}

void json_doc_setup(void)
{
    json_set_alloc_funcs(codec_malloc, codec_free);
}

/* The codec's error for the scanner's first fault. */
static void scan_error(const json_scanner *sc, json_codec_error *err)
{
    int line, column;

    json_scan_line_column(sc->text, sc->fault_pos, &line, &column);
    switch (sc->fault) {
    case JSON_FAULT_OVERFLOW_INT:
        err->kind = JSON_CODEC_INTEGER_RANGE;
        snprintf(err->message, sizeof err->message,
                 "the integer at line %d column %d does not fit in 64 bits", line, column);
        break;
    case JSON_FAULT_OVERFLOW_REAL:
        err->kind = JSON_CODEC_NON_FINITE;
        snprintf(err->message, sizeof err->message, "the number at line %d column %d is not finite",
                 line, column);
        break;
    case JSON_FAULT_DEPTH:
        err->kind = JSON_CODEC_TOO_DEEP;
        snprintf(err->message, sizeof err->message, "line %d column %d", line, column);
        break;
    case JSON_FAULT_NO_MEMORY:
        err->kind = JSON_CODEC_NO_MEMORY;
        break;
    case JSON_FAULT_REFUSED:
        err->kind = JSON_CODEC_REFUSED;
        break;
    default:
        err->kind = JSON_CODEC_SYNTAX;
        snprintf(err->message, sizeof err->message, "malformed JSON at line %d column %d: %s", line,
                 column, sc->message);
        break;
    }
}

int json_doc_load(json_doc *doc, const char *body, size_t len, const json_doc_limits *limits,
                  json_codec_error *err)
{
    json_builder b = {.max_values = limits->max_values,
                      .charge = limits->charge,
                      .string_span_min = limits->string_span_min ? limits->string_span_min
                                                                 : JSON_STRING_SPAN_MIN};
    int rc = -1;

    memset(doc, 0, sizeof *doc);
    err->kind = JSON_CODEC_OK;
    err->message[0] = '\0';
    json_scan_init(&b.sc, body, len);
    b.sc.charge = limits->charge;
    doc->root = json_build_document(&b);
    if (!doc->root) {
        if (b.stop != JSON_CODEC_OK)
            err->kind = b.stop;
        else
            scan_error(&b.sc, err);
        goto out;
    }
    if (b.deepest > limits->max_depth) {
        err->kind = JSON_CODEC_TOO_DEEP;
        goto out;
    }
    if (b.n_spans > 1)
        qsort(b.spans, b.n_spans, sizeof *b.spans, by_stand_in);
    if (b.n_strings > 1)
        qsort(b.strings, b.n_strings, sizeof *b.strings, by_string_stand_in);
    doc->text = body;
    doc->len = len;
    doc->charge = limits->charge;
    doc->spans = b.spans;
    doc->n_spans = b.n_spans;
    doc->strings = b.strings;
    doc->n_strings = b.n_strings;
    b.spans = NULL;
    b.strings = NULL;
    b.n_spans = b.n_strings = 0;
    rc = 0;
out:
    if (rc) {
        json_decref(doc->root);
        doc->root = NULL;
    }
    json_build_free(&b);
    return rc;
}

void json_doc_free(json_doc *doc)
{
    if (!doc)
        return;
    json_decref(doc->root);
    for (size_t i = 0; i < doc->n_spans; i++)
        free(doc->spans[i].floats);
    free(doc->spans);
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
     * it is the value, and valid UTF-8; jansson's copy is charged as the
     * builder charges any long string */
    if (span && json_string_length(v) == 0) {
        size_t n = span->end - span->start;
        if (n >= JSON_UNCHARGED_BYTES && !json_charge_take(&doc->charge, n + 1))
            return NULL;
        if (json_string_setn_nocheck(span->stand_in, doc->text + span->start, n))
            return NULL;
    }
    return json_string_value(v);
}

/* json_doc_string() on every long string of the doc (the tree is the
 * doc's own; a message may show any part of it): false when out of memory. */
static bool fill_strings(const json_doc *doc)
{
    for (size_t i = 0; doc && i < doc->n_strings; i++)
        if (!json_doc_string(doc, doc->strings[i].stand_in))
            return false;
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
    char *dumped = fill_strings(doc) ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (!dumped) {
        snprintf(buf, cap, "(a value)");
        return;
    }
    snprintf(buf, cap, strlen(dumped) > 40 ? "%.37s..." : "%s", dumped);
    free(dumped);
}

/*
 * json_doc.h - a request body read once: a jansson tree for the envelope,
 * the numeric arrays kept as text spans and read lazily into the type the
 * decoder asks for.
 *
 * json_doc_load() reads the body once: posenc's tokenizer (json_scan.c)
 * goes over it a token at a time and json_build.c builds the tree from the
 * tokens through jansson's API (jansson parses nothing). Every rectangular
 * array of JSON numbers (1 to JSON_ARRAY_MAX_NDIM dimensions, none empty)
 * is taken out on the way, whatever its key, size or place: its text span
 * and shape are recorded and the tree holds an empty array `[]` in its
 * place (the stand-in), recognised by its json_t pointer alone, never by
 * content, so no body can forge one. Past max_values values outside
 * numeric arrays the body is refused on the spot. Errors are worded and
 * placed as jansson's own parser words them.
 *
 * Long strings are taken out the same way: a string value (never a key) of
 * at least string_span_min characters, all printable ASCII (0x20..0x7E)
 * and no escape, is recorded as a text span and the tree holds `""` in its
 * place, found again by pointer identity. Its value is then exactly its
 * text, so json_doc_string_text() gives it straight from the body (a
 * base64 tensor is decoded from there), and json_doc_string() writes it
 * into the stand-in for any reader that wants the string itself: every
 * reader of a request's strings goes through one of the two, and sees the
 * value jansson would have built.
 *
 * The codec knows numbers, strings, arrays and limits; it knows no field of
 * the HTTP contract. Its errors are its own kind (json_codec_kind); api/
 * maps them to the contract's.
 */
#ifndef JSON_DOC_H
#define JSON_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json_span.h"

typedef struct json_codec_error {
    json_codec_kind kind;
    char message[256];
} json_codec_error;

typedef struct json_doc_limits {
    size_t max_depth;       /* nesting of arrays and objects, at most JSON_MAX_DEPTH */
    size_t max_values;      /* values (and object members) outside numeric arrays */
    size_t string_span_min; /* strings this long are read from the body's text
                               (0: JSON_STRING_SPAN_MIN; SIZE_MAX: never) */
    json_charge charge;     /* asked before decoded values are allocated */
} json_doc_limits;

/* Only speed depends on it: below this, jansson's copy costs less than the
 * bookkeeping. */
#define JSON_STRING_SPAN_MIN ((size_t)4096)

typedef struct json_doc {
    json_t *root;     /* owned */
    const char *text; /* borrowed: the body, which must outlive the doc */
    size_t len;
    json_span *spans; /* owned, n_spans, sorted by stand_in for lookups */
    size_t n_spans;
    json_string_span *strings; /* owned, n_strings, sorted by stand_in */
    size_t n_strings;
    json_charge charge; /* the limits' charge: typed readers ask it too */
} json_doc;

/* Route jansson's allocations through the codec's allocator. Process-wide
 * (json_set_alloc_funcs): call once at start-up, before any thread parses,
 * as api_service_new does. */
void json_doc_setup(void);

/* Parse body (len bytes, need not be NUL-terminated) into *doc. Any JSON
 * value may be the root; duplicate keys are a syntax error. Returns 0, or
 * -1 with *err filled and *doc empty. */
int json_doc_load(json_doc *doc, const char *body, size_t len, const json_doc_limits *limits,
                  json_codec_error *err);

/* Frees everything the doc owns; accepts NULL and an empty doc. */
void json_doc_free(json_doc *doc);

/* The span v stands in for, or NULL when v is an ordinary jansson value
 * (doc may be NULL: then always NULL). Borrowed from the doc. */
json_span *json_doc_array(const json_doc *doc, const json_t *v);

/* The characters of the string v (borrowed, NOT NUL-terminated, *len of
 * them): a long string's straight from the body, any other string's from
 * jansson. NULL when v is not a string. doc may be NULL. */
const char *json_doc_string_text(const json_doc *doc, const json_t *v, size_t *len);

/* The string v as jansson would have it: NUL-terminated, borrowed from the
 * tree. A long string's stand-in gets its value on the first call (the
 * doc's tree is filled in lazily: logically const; the pointer v stays the
 * same). NULL when v is not a string, or (v a string) when out of memory.
 * doc may be NULL. */
const char *json_doc_string(const json_doc *doc, const json_t *v);

/* A short rendering of v for messages ("true", "\"abc\"", "[1,2]"): a
 * numeric array's stand-in shows its text, and the long strings inside v
 * get their values first. */
void json_doc_describe(const json_doc *doc, const json_t *v, char *buf, size_t cap);

#endif /* JSON_DOC_H */

/*
 * json_build.h - the document built from json_scan's tokens in one pass:
 * objects, strings and small values as jansson values (through jansson's
 * API: jansson parses nothing), rectangular numeric arrays and long clean
 * strings recorded as spans of the body with an empty stand-in value.
 */
#ifndef JSON_BUILD_H
#define JSON_BUILD_H

#include "json/json_scan.h"
#include "json/json_span.h"

typedef struct json_builder {
    json_scanner sc;
    size_t depth, deepest; /* arrays and objects around the current value */
    size_t values, max_values;
    size_t string_span_min;
    json_span *spans; /* owned until handed to the doc */
    size_t n_spans, cap_spans;
    json_string_span *strings; /* owned until handed to the doc */
    size_t n_strings, cap_strings;
    json_codec_kind stop; /* a stop that is not the scanner's */
    json_charge charge;   /* asked before decoded values are allocated */
} json_builder;

/* The whole body as one value (new reference), or NULL: then b->stop or
 * b->sc.fault says why. */
json_t *json_build_document(json_builder *b);

/* Frees what the builder still owns. */
void json_build_free(json_builder *b);

#endif /* JSON_BUILD_H */

/*
 * fast_json.h - JSON request parsing with a fast path for big numeric
 * arrays.
 *
 * jansson builds one heap node per number and parses through strtod: about
 * 25 MB/s on float arrays. fast_json_load() first scans the body with a
 * strict JSON scanner; every rectangular array of numbers that is the value
 * of "embeddings" or of a key inside the model's "weights" object (and is
 * large) is parsed straight to float32 (fast_float, correctly rounded), and
 * every long base64 string there is decoded, and each is replaced in a copy
 * of the text by a short marker; jansson then parses the rest, and
 * each marker becomes a binary tensor string (see fast_json_tensor()).
 * Anything irregular (invalid JSON, non-numbers, ragged arrays, float32
 * overflow) is left to jansson, so errors and their messages are exactly
 * those of the plain path.
 */
#ifndef FAST_JSON_H
#define FAST_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "json/tensor.h"

/* Parse a request body (len bytes, not necessarily NUL-terminated). Returns
 * a new reference, or NULL with *jerr filled as json_loadb() does. */
json_t *fast_json_load(const char *body, size_t len, json_error_t *jerr);

/* If v is a binary tensor string made by fast_json_load, return a pointer
 * to its float32 data (borrowed from v) and their *count, else NULL. For a
 * parsed nested array *ndim and dim[] give its shape; *ndim == 0 marks a
 * decoded base64 string, whose shape is its sibling shape field's. */
const float *fast_json_tensor(const json_t *v, size_t *ndim, size_t *dim, size_t *count);

#endif /* FAST_JSON_H */

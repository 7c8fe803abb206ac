/*
 * json_fields.h - typed, validated access to fields of a decoded JSON
 * object, in the style "parse a field or say exactly what is wrong".
 *
 * Every reader takes the object, the JSON path of the object ("" for the
 * request body), and a key. A missing key and a JSON null both count as
 * absent. On a wrong type or value the reader fills *err with the field's
 * full path and returns -1; on success it returns 0. `doc` is the document
 * the object belongs to (NULL for a plain jansson value), so that a message
 * can show a numeric array the scanner took out as the body wrote it.
 */
#ifndef JSON_FIELDS_H
#define JSON_FIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "json/json_error.h"
#include "json/json_doc.h"

/* A JSON path buffer: "params.scaling.factor", "embeddings[2][5]". */
typedef struct jpath {
    char s[JSON_FIELD_MAX];
} jpath;

/* parent + "." + key (or key alone at the root). */
jpath jpath_key(const char *parent, const char *key);
/* parent + "[i]". */
jpath jpath_index(const char *parent, size_t i);

/* The value at key, or NULL when absent or null. */
const json_t *jf_get(const json_t *obj, const char *key);

/* v must be an object whose keys all appear in `allowed` (NULL-terminated):
 * not an object -> 400; an unknown key -> 400 naming it. */
int jf_check_object(const json_t *v, const char *path, const char *const *allowed, json_error *err);

/* An integer in [lo, hi]. Not an integer -> 400; outside -> 422
 * out_of_range naming the range. */
int jf_int(const json_doc *doc, const json_t *obj, const char *path, const char *key, int64_t lo,
           int64_t hi, bool *present, int64_t *out, json_error *err);

/* A finite number. Not a number -> 400. With positive, <= 0 -> 422. */
int jf_number(const json_doc *doc, const json_t *obj, const char *path, const char *key,
              bool positive, bool *present, double *out, json_error *err);

int jf_bool(const json_t *obj, const char *path, const char *key, bool *present, bool *out,
            json_error *err);

/* A string that must be one of options (NULL-terminated): *out is its
 * index. Anything else -> 400 listing the options. */
int jf_choice(const json_doc *doc, const json_t *obj, const char *path, const char *key,
              const char *const *options, bool *present, int *out, json_error *err);

/* A short rendering of a JSON value for messages ("true", "\"abc\"", ...). */
void jf_describe(const json_t *v, char *buf, size_t cap);

#endif /* JSON_FIELDS_H */

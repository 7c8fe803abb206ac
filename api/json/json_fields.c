/*
 * json_fields.c - typed access to JSON object fields (see json_fields.h).
 */
#include "json/json_fields.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

jpath jpath_key(const char *parent, const char *key)
{
    jpath p;
    if (parent && parent[0])
        snprintf(p.s, sizeof p.s, "%s.%s", parent, key);
    else
        snprintf(p.s, sizeof p.s, "%s", key);
    return p;
}

jpath jpath_index(const char *parent, size_t i)
{
    jpath p;
    snprintf(p.s, sizeof p.s, "%s[%zu]", parent, i);
    return p;
}

const json_t *jf_get(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

void jf_describe(const json_t *v, char *buf, size_t cap)
{
    json_doc_describe(NULL, v, buf, cap);
}

int jf_check_object(const json_t *v, const char *path, const char *const *allowed, json_error *err)
{
    const char *key;
    const json_t *value;

    if (!json_is_object(v))
        return json_fail(err, JSON_E_INVALID, path[0] ? path : NULL, "%s must be a JSON object",
                         path[0] ? path : "the request body");
    json_object_foreach ((json_t *)(uintptr_t)v, key, value) {
        bool known = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                known = true;
        if (!known) {
            jpath at = jpath_key(path, key);
            return json_fail(err, JSON_E_INVALID, at.s, "unknown field '%s'", at.s);
        }
    }
    return 0;
}

int jf_int(const json_doc *doc, const json_t *obj, const char *path, const char *key, int64_t lo,
           int64_t hi, bool *present, int64_t *out, json_error *err)
{
    const json_t *v = jf_get(obj, key);
    jpath at = jpath_key(path, key);
    char seen[48];

    *present = v != NULL;
    if (!v)
        return 0;
    if (!json_is_integer(v)) {
        json_doc_describe(doc, v, seen, sizeof seen);
        return json_fail(err, JSON_E_INVALID, at.s, "%s must be an integer, got %s", at.s, seen);
    }
    json_int_t n = json_integer_value(v);
    if (n < lo || n > hi)
        return json_fail(err, JSON_E_RANGE, at.s,
                         "%s = %" PRId64 " is out of range (must be in [%" PRId64 ", %" PRId64 "])",
                         at.s, (int64_t)n, lo, hi);
    *out = (int64_t)n;
    return 0;
}

int jf_number(const json_doc *doc, const json_t *obj, const char *path, const char *key,
              bool positive, bool *present, double *out, json_error *err)
{
    const json_t *v = jf_get(obj, key);
    jpath at = jpath_key(path, key);
    char seen[48];

    *present = v != NULL;
    if (!v)
        return 0;
    if (!json_is_number(v)) {
        json_doc_describe(doc, v, seen, sizeof seen);
        return json_fail(err, JSON_E_INVALID, at.s, "%s must be a number, got %s", at.s, seen);
    }
    double x = json_number_value(v);
    if (!isfinite(x))
        return json_fail(err, JSON_E_NON_FINITE, at.s, "%s is not finite", at.s);
    if (positive && !(x > 0))
        return json_fail(err, JSON_E_RANGE, at.s, "%s = %g must be > 0", at.s, x);
    *out = x;
    return 0;
}

int jf_bool(const json_t *obj, const char *path, const char *key, bool *present, bool *out,
            json_error *err)
{
    const json_t *v = jf_get(obj, key);
    jpath at = jpath_key(path, key);

    *present = v != NULL;
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return json_fail(err, JSON_E_INVALID, at.s, "%s must be true or false", at.s);
    *out = json_is_true(v);
    return 0;
}

int jf_choice(const json_doc *doc, const json_t *obj, const char *path, const char *key,
              const char *const *options, bool *present, int *out, json_error *err)
{
    const json_t *v = jf_get(obj, key);
    jpath at = jpath_key(path, key);
    char seen[48], list[160] = "";

    *present = v != NULL;
    if (!v)
        return 0;
    const char *text = json_doc_string(doc, v);
    if (json_is_string(v) && !text)
        return json_fail_oom(err);
    if (text)
        for (int i = 0; options[i]; i++)
            if (strcmp(options[i], text) == 0) {
                *out = i;
                return 0;
            }
    for (int i = 0; options[i]; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", options[i]);
    }
    json_doc_describe(doc, v, seen, sizeof seen);
    return json_fail(err, JSON_E_INVALID, at.s, "%s must be one of %s; got %s", at.s, list, seen);
}

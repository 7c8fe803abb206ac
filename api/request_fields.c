/*
 * request_fields.c - the request field table (request_fields.h) and what
 * is read through it: each endpoint's allowed keys, and the shape of a
 * base64 array by its one name, X_shape (contract 1.2).
 */
#include "request_fields.h"

#include <stdio.h>
#include <string.h>

#include "json/json_fields.h"

const request_field request_fields[RF_COUNT] = {
#define RF_ROW(name, kind, endpoints) [RF_##name] = {#name, RFK_##kind, endpoints},
    REQUEST_FIELDS(RF_ROW)
#undef RF_ROW
};

void request_field_keys(unsigned endpoint, const char *keys[RF_COUNT + 1])
{
    size_t n = 0;

    for (size_t i = 0; i < RF_COUNT; i++)
        if (request_fields[i].endpoints & endpoint)
            keys[n++] = request_fields[i].name;
    keys[n] = NULL;
}

/* The array field that `shape_name` ("X_shape") shapes on `endpoint`, or
 * NULL when it is not such a name. */
static const request_field *shaped_array(unsigned endpoint, const char *shape_name)
{
    size_t len = strlen(shape_name), suffix = sizeof "_shape" - 1;

    if (len <= suffix || strcmp(shape_name + len - suffix, "_shape") != 0)
        return NULL;
    for (size_t i = 0; i < RF_COUNT; i++) {
        const request_field *f = &request_fields[i];
        if (f->kind == RFK_ARRAY && (f->endpoints & endpoint) && strlen(f->name) == len - suffix &&
            memcmp(f->name, shape_name, len - suffix) == 0)
            return f;
    }
    return NULL;
}

int request_check_shapes(const json_t *root, unsigned endpoint, api_error *err)
{
    if (jf_get(root, RF(embeddings_shape)) && jf_get(root, RF(shape)))
        return api_fail(err, API_E_INVALID_REQUEST, RF(shape),
                        "give the shape of embeddings once: embeddings_shape or its alias "
                        "shape, not both");
    for (size_t i = 0; i < RF_COUNT; i++) {
        const request_field *f = &request_fields[i];
        const request_field *array = (f->endpoints & endpoint) && f->kind == RFK_DIMS
                                         ? shaped_array(endpoint, f->name)
                                         : NULL;
        if (array && jf_get(root, f->name) && !jf_get(root, array->name))
            return api_fail(err, API_E_INVALID_REQUEST, f->name,
                            "%s is the shape of %s, which the request does not give", f->name,
                            array->name);
    }
    return 0;
}

int request_array(json_doc *doc, const char *name, size_t min_ndim, size_t max_ndim, tensor *out,
                  api_error *err)
{
    char shape_key[JSON_FIELD_MAX];

    snprintf(shape_key, sizeof shape_key, "%s_shape", name);
    const json_t *shape = jf_get(doc->root, shape_key);
    if (!shape && strcmp(name, RF(embeddings)) == 0) { /* the v1 alias, named when none is given */
        shape = jf_get(doc->root, RF(shape));
        snprintf(shape_key, sizeof shape_key, "%s", RF(shape));
    }
    return api_json(err, tensor_from_json(doc, jf_get(doc->root, name), name, shape, shape_key,
                                          min_ndim, max_ndim, out, &err->json));
}

/*
 * request_fields.h - every top-level request field of /encode, /apply and
 * /diagnose, declared once: its name, its JSON kind and the
 * endpoints that accept it.
 *
 * The "unknown key" check of each endpoint is built from this table
 * (request_field_keys), and decoders name a field as RF(name), so that a
 * misspelt field is a compile error. api/openapi.yaml describes the same
 * fields: tools/check-fields.py, run by the build, fails when a request
 * schema there and this table disagree by one property, and when a base64
 * array X of an endpoint lacks its X_shape there (contract 1.2).
 *
 * XX(name, kind, endpoints): kind is a request_field_kind without its
 * RFK_ prefix, endpoints an OR of RF_ENCODE, RF_APPLY and RF_DIAGNOSE.
 */
#ifndef REQUEST_FIELDS_H
#define REQUEST_FIELDS_H

#include <stddef.h>

#include "api_error.h"
#include "json/json_doc.h"
#include "json/tensor.h"

typedef enum request_field_kind {
    RFK_ARRAY,   /* float32 numbers, or base64 shaped by <name>_shape */
    RFK_DIMS,    /* a list of positive integers: an array's shape */
    RFK_INTS,    /* [n] or [rows][n] integers */
    RFK_STRING,  /* one of a list of words */
    RFK_STRINGS, /* a list of words */
    RFK_NUMBER,
    RFK_INTEGER,
    RFK_BOOL,
    RFK_OBJECT,
    RFK_MODEL,  /* a model's name or an inline model object */
    RFK_OBJECTS /* a list of objects */
} request_field_kind;

#define RF_ENCODE 1u
#define RF_APPLY 2u
#define RF_DIAGNOSE 4u
#define RF_ALL (RF_ENCODE | RF_APPLY | RF_DIAGNOSE)

#define REQUEST_FIELDS(XX)                                                                         \
    XX(embeddings, ARRAY, RF_ALL)                                                                  \
    XX(embeddings_shape, DIMS, RF_ALL)                                                             \
    XX(shape, DIMS, RF_ALL) /* embeddings' alias; /encode: the bare table's */                     \
    XX(token_ids, INTS, RF_APPLY | RF_DIAGNOSE)                                                    \
    XX(scheme, STRING, RF_ALL)                                                                     \
    XX(params, OBJECT, RF_ALL)                                                                     \
    XX(model, MODEL, RF_ALL)                                                                       \
    XX(offset, INTEGER, RF_ALL)                                                                    \
    XX(positions, INTS, RF_ALL) /* also [t, h, w] triples, or base64 */                            \
    XX(positions_shape, DIMS, RF_ALL)                                                              \
    XX(mm_layout, OBJECTS, RF_ALL)                                                                 \
    XX(merge, INTEGER, RF_ALL)                                                                     \
    XX(mm_rule, STRING, RF_ALL)                                                                    \
    XX(grid, OBJECT, RF_ENCODE | RF_DIAGNOSE)                                                      \
    XX(attention_mask, INTS, RF_ALL)                                                               \
    XX(causal, BOOL, RF_ALL)                                                                       \
    XX(encoding, STRING, RF_ALL)                                                                   \
    XX(embed_scale, NUMBER, RF_ALL)                                                                \
    XX(return, STRINGS, RF_APPLY)                                                                  \
    XX(table, ARRAY, RF_DIAGNOSE)                                                                  \
    XX(table_shape, DIMS, RF_DIAGNOSE)                                                             \
    XX(encoded, ARRAY, RF_DIAGNOSE)                                                                \
    XX(encoded_shape, DIMS, RF_DIAGNOSE)                                                           \
    XX(cos, ARRAY, RF_DIAGNOSE)                                                                    \
    XX(cos_shape, DIMS, RF_DIAGNOSE)                                                               \
    XX(sin, ARRAY, RF_DIAGNOSE)                                                                    \
    XX(sin_shape, DIMS, RF_DIAGNOSE)                                                               \
    XX(bias, ARRAY, RF_DIAGNOSE)                                                                   \
    XX(bias_shape, DIMS, RF_DIAGNOSE)                                                              \
    XX(slopes, ARRAY, RF_DIAGNOSE)                                                                 \
    XX(slopes_shape, DIMS, RF_DIAGNOSE)                                                            \
    XX(q, ARRAY, RF_DIAGNOSE)                                                                      \
    XX(q_shape, DIMS, RF_DIAGNOSE)                                                                 \
    XX(k, ARRAY, RF_DIAGNOSE)                                                                      \
    XX(k_shape, DIMS, RF_DIAGNOSE)                                                                 \
    XX(v, ARRAY, RF_DIAGNOSE)                                                                      \
    XX(v_shape, DIMS, RF_DIAGNOSE)                                                                 \
    XX(tolerance, OBJECT, RF_DIAGNOSE)                                                             \
    XX(return_map, BOOL, RF_DIAGNOSE)                                                              \
    XX(axes, STRING, RF_DIAGNOSE)

typedef enum request_field_id {
#define RF_ENUM(name, kind, endpoints) RF_##name,
    REQUEST_FIELDS(RF_ENUM)
#undef RF_ENUM
        RF_COUNT
} request_field_id;

typedef struct request_field {
    const char *name;
    request_field_kind kind;
    unsigned endpoints;
} request_field;

/* The table, by request_field_id (request_fields.c). */
extern const request_field request_fields[RF_COUNT];

/* A field's name by its identifier in the table: RF(embeddings). */
#define RF(field) (request_fields[RF_##field].name)

/* The names of the fields `endpoint` (one RF_ bit) accepts, NULL-terminated,
 * into keys[RF_COUNT + 1]: the allowed list of the unknown-key check. */
void request_field_keys(unsigned endpoint, const char *keys[RF_COUNT + 1]);

/* Contract 1.2's array names, for every endpoint (request_fields.c): a
 * base64 array X is shaped by X_shape, and `shape` is also accepted for
 * embeddings. request_check_shapes refuses (400) both embeddings_shape and
 * shape, and an X_shape of `endpoint` without its X. */
int request_check_shapes(const json_t *root, unsigned endpoint, api_error *err);

/* The array field `name` of the body (absent: a 400 from the tensor
 * reader) with its shape as above, of rank min_ndim..max_ndim, into *out
 * (moved out of the doc; empty on failure). */
int request_array(json_doc *doc, const char *name, size_t min_ndim, size_t max_ndim, tensor *out,
                  api_error *err);

#endif /* REQUEST_FIELDS_H */

/*
 * model_error.h - why loading a model directory failed, in the loader's own
 * terms (which file, key, tensor or value), not the HTTP API's.
 *
 * The API layer (api/service.c) turns a model_error into its start-up
 * failure; nothing here knows a status code. The message is the whole
 * text: its buffer holds several full paths (each up to PATH_MAX) plus a
 * tensor name and an explanation, so nothing is cut.
 */
#ifndef MODEL_ERROR_H
#define MODEL_ERROR_H

#include <stddef.h>

#include "json/json_error.h"

typedef enum model_error_kind {
    MODEL_E_FILE = 0, /* a file is missing, unreadable, not a regular file or malformed */
    MODEL_E_KEY,      /* a config.json key is missing or has the wrong type */
    MODEL_E_TENSOR,   /* a tensor is missing, of the wrong dtype or shape, or bad */
    MODEL_E_VALUE,    /* a value is out of range or asks for what posenc does not model */
    MODEL_E_NOMEM     /* out of memory */
} model_error_kind;

/* Three paths of PATH_MAX (4096) and the explanation around them. */
#define MODEL_MESSAGE_MAX 16384

typedef struct model_error {
    model_error_kind kind;
    char message[MODEL_MESSAGE_MAX];
} model_error;

/* Record an error. Returns -1 so that callers can write
 * `return model_fail(err, ...);`. */
int model_fail(model_error *err, model_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The out-of-memory error: "out of memory loading <what>". */
int model_nomem(model_error *err, const char *what);

/* "file", "key", "tensor", "value", "memory". */
const char *model_error_kind_name(model_error_kind kind);

/* Where the loader reports what it accepts but Hugging Face would warn
 * about (one line each, no newline). fn may be NULL: no warnings. */
typedef struct model_warner {
    void (*fn)(void *ctx, const char *message);
    void *ctx;
} model_warner;

/* Format and pass one warning to w (NULL or w->fn NULL: dropped). */
void model_warn(const model_warner *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * What is wrong with a described model or scheme: an inline model, a
 * request's or a config's params (model.h, scheme.h). The model layer's own
 * kinds, or DESC_E_JSON when a typed JSON reader (api/json) refused a value
 * and said why in its own kind; api/model_errors.h maps both to the
 * contract's status and code, in one place. The text and the JSON path at
 * fault are in `json` in every case (json.kind is JSON_E_NONE unless
 * kind is DESC_E_JSON).
 */
typedef enum desc_error_kind {
    DESC_E_JSON = 0,       /* a reader refused a value (a type, a choice, an
                              unknown key, a number): json.kind says how */
    DESC_E_TYPE,           /* a value of the wrong type (params.scaling not an object) */
    DESC_E_KEY,            /* a key missing, or given with one it excludes */
    DESC_E_SHAPE,          /* dimensions or weight shapes that disagree */
    DESC_E_RANGE,          /* a value outside the range its neighbours allow */
    DESC_E_TOO_LARGE,      /* past a size limit */
    DESC_E_MISSING_WEIGHT, /* the description needs a weight it does not give */
    DESC_E_NO_MEMORY       /* an allocation failed */
} desc_error_kind;

typedef struct desc_error {
    desc_error_kind kind;
    json_error json; /* message and field; where the readers report */
} desc_error;

/* Record an error; field may be NULL. Returns -1. */
int desc_fail(desc_error *err, desc_error_kind kind, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An allocation failed; returns -1. */
int desc_fail_oom(desc_error *err);

/* The result rc of a typed JSON reader that reported into &err->json: on
 * failure err->kind becomes DESC_E_JSON. Returns rc:
 * `if (desc_json(err, jf_int(..., &err->json)))`. */
int desc_json(desc_error *err, int rc);

#endif /* MODEL_ERROR_H */

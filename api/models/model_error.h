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

#endif /* MODEL_ERROR_H */

/*
 * request.h - what /encode and /apply share after decoding: the model, the
 * scheme with its merged params, the embeddings, positions and output
 * options.
 */
#ifndef REQUEST_H
#define REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api_error.h"
#include "models/model.h"
#include "models/scheme.h"
#include "service.h"
#include "json/json_doc.h"
#include "json/tensor.h"

typedef struct request {
    json_doc doc;          /* owned: the parsed body, while decoding */
    const model *model;    /* borrowed (service) or == owned_model; may be NULL */
    model *owned_model;    /* an inline model */
    scheme scheme;         /* owns its arrays */
    tensor x;              /* embeddings, owned; x.data NULL when absent */
    bool batched;
    size_t batch, tokens, d;
    int64_t *positions;    /* owned, [batch * tokens] */
    const char *pos_field; /* "offset" or "positions", for messages */
    int64_t max_position;
    double embed_scale;
    bool base64;
} request;

/* Parse the body as a JSON object whose keys are in `allowed`, nested no
 * deeper than the service's max_json_depth (else 422 too_large). */
int request_parse(const api_service *svc, const char *body, size_t len,
                  const char *const *allowed, request *rq, api_error *err);

/* Resolve the `model` field: a name, an inline object, or absent (then the
 * model called default_name, or none when default_name is NULL). */
int request_model(const api_service *svc, request *rq,
                  const char *default_name, api_error *err);

/* Decode scheme/params, shape, embeddings (unless rq->x is already set),
 * limits, embed_scale, encoding and positions. */
int request_common(const api_service *svc, request *rq, api_error *err);

void request_free(request *rq);

/* Rows of the flattened input: batch * tokens. */
static inline size_t request_rows(const request *rq)
{
    return rq->batch * rq->tokens;
}

/* -1 with 422 too_large when an output of n elements passes the limit. */
int request_check_output(const api_service *svc, size_t n, const char *what,
                         api_error *err);

#endif /* REQUEST_H */

/*
 * model.h - a served model: dimensions, default scheme, optional norm and
 * weights, with the Q/K/V projection fused once at construction.
 *
 * Models come from the built-in generator (model_new_default) or from an
 * inline JSON object in a request (model_from_json). A model is immutable
 * after construction and may be shared by threads.
 */
#ifndef MODEL_H
#define MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api_error.h"
#include "posenc.h"
#include "scheme.h"
#include "tensor.h"

typedef enum weight_id {
    W_WQ = 0, W_WK, W_WV, W_BQ, W_BK, W_BV, W_NORM_WEIGHT, W_NORM_BIAS,
    W_POSITION_TABLE, W_T5_BIAS, W_TOKEN_EMBEDDING, W_COUNT
} weight_id;

/* Contract names of the weights, indexed by weight_id. */
extern const char *const weight_names[W_COUNT];

typedef struct model {
    char *name;            /* owned */
    char *source;          /* owned: "built-in ...", "inline" */
    const char *architecture; /* static: "posenc" */
    size_t layer;
    size_t d_model, heads, kv_heads, head_dim;
    scheme_kind scheme;
    json_t *params;        /* owned reference: the model's params object */
    pe_norm_kind norm;     /* PE_NORM_NONE when the model has none */
    double norm_eps;
    tensor weights[W_COUNT]; /* owned; a missing weight has data == NULL */
    pe_qkv_weights qkv;    /* fused projection (w_qkv NULL when wq/wk/wv missing) */
} model;

/* The built-in `default` model (contract "The default model"). Allocates;
 * NULL on allocation failure. */
model *model_new_default(void);

/* An inline model object at JSON path `path` ("model"). Validates every key,
 * shape and the params of its scheme. NULL + *err on failure. */
model *model_from_json(const json_t *obj, const char *path, api_error *err);

/* Frees a model; accepts NULL. */
void model_free(model *m);

/* Whether weight w is present. */
static inline bool model_has(const model *m, weight_id w)
{
    return m->weights[w].data != NULL;
}

#endif /* MODEL_H */

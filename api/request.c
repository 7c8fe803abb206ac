/*
 * request.c - decoding what /encode and /apply share (see request.h).
 */
#include "request.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"

/* The codec's failure as the contract's error. */
static int codec_fail(const api_service *svc, const json_codec_error *ce, api_error *err)
{
    switch (ce->kind) {
    case JSON_CODEC_TOO_DEEP:
        return api_fail(err, API_E_TOO_LARGE, NULL,
                        "the JSON nests arrays and objects deeper than the limit of %zu levels",
                        svc->limits.max_json_depth);
    case JSON_CODEC_TOO_MANY_VALUES:
        return api_fail(err, API_E_TOO_LARGE, NULL,
                        "the JSON holds more than %zu values outside numeric arrays",
                        svc->limits.max_json_values);
    case JSON_CODEC_NO_MEMORY:
        return api_fail_oom(err);
    default:
        return api_fail(err, API_E_INVALID_JSON, NULL, "%s", ce->message);
    }
}

int request_parse(const api_service *svc, const char *body, size_t len,
                  const char *const *allowed, request *rq, api_error *err)
{
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = svc->limits.max_json_depth,
                              .max_values = svc->limits.max_json_values};

    memset(rq, 0, sizeof *rq);
    rq->embed_scale = 1.0;
    if (json_doc_load(&rq->doc, body, len, &limits, &ce))
        return codec_fail(svc, &ce, err);
    return jf_check_object(rq->doc.root, "", allowed, err);
}

/* The sizes an inline model declares, against the limits. */
static int check_model_limits(const api_service *svc, const model *m, api_error *err)
{
    const api_limits *lim = &svc->limits;

    if (m->d_model > lim->max_dim)
        return api_fail(err, API_E_TOO_LARGE, "model.d_model",
                        "d_model %zu exceeds the limit of %zu", m->d_model, lim->max_dim);
    if (m->head_dim > lim->max_dim)
        return api_fail(err, API_E_TOO_LARGE, "model.head_dim",
                        "head_dim %zu exceeds the limit of %zu", m->head_dim, lim->max_dim);
    if (m->heads > lim->max_heads)
        return api_fail(err, API_E_TOO_LARGE, "model.heads",
                        "heads %zu exceeds the limit of %zu", m->heads, lim->max_heads);
    if (m->kv_heads > lim->max_heads)
        return api_fail(err, API_E_TOO_LARGE, "model.kv_heads",
                        "kv_heads %zu exceeds the limit of %zu", m->kv_heads, lim->max_heads);
    return 0;
}

int request_model(const api_service *svc, request *rq,
                  const char *default_name, api_error *err)
{
    const json_t *v = jf_get(rq->doc.root, "model");

    if (!v) {
        rq->model = default_name ? service_find_model(svc, default_name) : NULL;
        if (default_name && !rq->model)
            rq->model = svc->models[0];
        return 0;
    }
    if (json_is_string(v)) {
        rq->model = service_find_model(svc, json_string_value(v));
        if (!rq->model)
            return api_fail(err, API_E_UNKNOWN_MODEL, "model", "no model named '%s' is loaded",
                            json_string_value(v));
        return 0;
    }
    if (json_is_object(v)) {
        rq->owned_model = model_from_json(&rq->doc, v, "model", err);
        rq->model = rq->owned_model;
        return rq->model ? check_model_limits(svc, rq->model, err) : -1;
    }
    return api_fail(err, API_E_INVALID_REQUEST, "model",
                    "model must be a model name or an inline model object");
}

/* The scheme: the request's, else the model's, else sinusoidal. With the
 * model's scheme, request params override the model's key by key; another
 * scheme starts from its defaults. */
static int decode_scheme(request *rq, api_error *err)
{
    bool present;
    int which = SCHEME_SINUSOIDAL;
    const json_t *params = jf_get(rq->doc.root, "params");

    if (jf_choice(&rq->doc, rq->doc.root, "", "scheme", scheme_names, &present, &which, err))
        return -1;
    if (!present && rq->model)
        which = (int)rq->model->scheme;
    if (params && !json_is_object(params))
        return api_fail(err, API_E_INVALID_REQUEST, "params", "params must be an object");
    const scheme *base = rq->model && rq->model->has_decoded ? &rq->model->decoded : NULL;
    return scheme_decode(&rq->doc, (scheme_kind)which, params, "params", base, &rq->scheme, err);
}

static int decode_positions(request *rq, api_error *err)
{
    const json_t *positions = jf_get(rq->doc.root, "positions");
    size_t rows = request_rows(rq);
    int64_t offset = 0;
    bool present;

    rq->positions = malloc(rows * sizeof *rq->positions);
    if (!rq->positions)
        return api_fail_oom(err);
    if (positions) {
        int_array given;
        rq->pos_field = "positions";
        if (jf_get(rq->doc.root, "offset"))
            return api_fail(err, API_E_INVALID_REQUEST, "offset",
                            "give offset or positions, not both");
        if (int_array_from_json(&rq->doc, positions, "positions", 0, PE_MAX_POSITION, API_E_TOO_LARGE,
                                &given, err))
            return -1;
        bool per_row = given.ndim == 2;
        if ((!per_row && given.dim[0] != rq->tokens) ||
            (per_row && (!rq->batched || given.dim[0] != rq->batch ||
                         given.dim[1] != rq->tokens))) {
            int_array_free(&given);
            if (rq->batched)
                return api_fail(err, API_E_INVALID_SHAPE, "positions",
                                "positions must be [%zu] or [%zu][%zu] for this input",
                                rq->tokens, rq->batch, rq->tokens);
            return api_fail(err, API_E_INVALID_SHAPE, "positions",
                            "positions has the wrong shape: expected [%zu]", rq->tokens);
        }
        for (size_t b = 0; b < rq->batch; b++)
            memcpy(rq->positions + b * rq->tokens, given.data + (per_row ? b * rq->tokens : 0),
                   rq->tokens * sizeof *rq->positions);
        int_array_free(&given);
    } else {
        rq->pos_field = "offset";
        if (jf_int(&rq->doc, rq->doc.root, "", "offset", 0, INT64_MAX, &present, &offset, err))
            return -1;
        if ((uint64_t)offset + rq->tokens - 1 > (uint64_t)PE_MAX_POSITION)
            return api_fail(err, API_E_TOO_LARGE, "offset",
                            "offset %" PRId64 " with %zu tokens reaches past the largest "
                            "position %" PRId64, offset, rq->tokens, PE_MAX_POSITION);
        for (size_t b = 0; b < rq->batch; b++)
            for (size_t t = 0; t < rq->tokens; t++)
                rq->positions[b * rq->tokens + t] = offset + (int64_t)t;
    }
    rq->max_position = 0;
    for (size_t i = 0; i < rows; i++)
        if (rq->positions[i] > rq->max_position)
            rq->max_position = rq->positions[i];
    return 0;
}

int request_check_output(const api_service *svc, size_t n, const char *what,
                         api_error *err)
{
    if (n > svc->limits.max_output_elements)
        return api_fail(err, API_E_TOO_LARGE, NULL,
                        "%s would have %zu elements; the limit is %zu", what, n,
                        svc->limits.max_output_elements);
    return 0;
}

int request_common(const api_service *svc, request *rq, api_error *err)
{
    const json_t *shape = jf_get(rq->doc.root, "shape");
    const json_t *embeddings = jf_get(rq->doc.root, "embeddings");
    static const char *const encodings[] = {"json", "base64", NULL};
    size_t ndim = 0, dim[3] = {0};
    bool present;
    int which = 0;

    if (decode_scheme(rq, err))
        return -1;
    if (rq->scheme.heads > svc->limits.max_heads)
        return api_fail(err, API_E_TOO_LARGE, "params.heads", "heads %zu exceeds the limit of %zu",
                        rq->scheme.heads, svc->limits.max_heads);
    if (rq->scheme.head_dim > svc->limits.max_dim)
        return api_fail(err, API_E_TOO_LARGE, "params.head_dim",
                        "head_dim %zu exceeds the limit of %zu", rq->scheme.head_dim,
                        svc->limits.max_dim);
    if (!rq->x.data && embeddings) {
        if (tensor_from_json(&rq->doc, embeddings, "embeddings", shape, "shape", 2, 3, &rq->x, err))
            return -1;
    } else if (!rq->x.data && shape) {
        if (shape_from_json(&rq->doc, shape, "shape", 2, 3, &ndim, dim, err))
            return -1;
    } else if (!rq->x.data) {
        return api_fail(err, API_E_INVALID_REQUEST, "shape",
                        "give embeddings, or shape [tokens, d] for the bare encoding table");
    }
    if (rq->x.data) {
        ndim = rq->x.ndim;
        memcpy(dim, rq->x.dim, ndim * sizeof *dim);
    }
    rq->batched = ndim == 3;
    rq->batch = rq->batched ? dim[0] : 1;
    rq->tokens = dim[ndim - 2];
    rq->d = dim[ndim - 1];
    size_t rows, elements;
    const char *size_field = rq->x.data ? "embeddings" : "shape";
    if (rq->batch > svc->limits.max_batch)
        return api_fail(err, API_E_TOO_LARGE, size_field,
                        "a batch of %zu exceeds the limit of %zu", rq->batch,
                        svc->limits.max_batch);
    if (mul_size(rq->batch, rq->tokens, &rows) || rows > svc->limits.max_tokens)
        return api_fail(err, API_E_TOO_LARGE, size_field,
                        "%zu x %zu tokens exceed the limit of %zu tokens per request",
                        rq->batch, rq->tokens, svc->limits.max_tokens);
    if (rq->d > svc->limits.max_dim)
        return api_fail(err, API_E_TOO_LARGE, size_field, "d = %zu exceeds the limit of %zu",
                        rq->d, svc->limits.max_dim);
    if (mul_size(rows, rq->d, &elements) || request_check_output(svc, elements, "the input", err))
        return -1;
    if (jf_number(&rq->doc, rq->doc.root, "", "embed_scale", false, &present, &rq->embed_scale,
                  err) ||
        jf_choice(&rq->doc, rq->doc.root, "", "encoding", encodings, &present, &which, err))
        return -1;
    rq->base64 = which == 1;
    return decode_positions(rq, err);
}

void request_free(request *rq)
{
    if (!rq)
        return;
    json_doc_free(&rq->doc);
    model_free(rq->owned_model);
    scheme_free(&rq->scheme);
    tensor_free(&rq->x);
    free(rq->positions);
    memset(rq, 0, sizeof *rq);
}

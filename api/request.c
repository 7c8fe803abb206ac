/*
 * request.c - decoding what /encode and /apply share (see request.h).
 */
#include "request.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"
#include "model_errors.h"

/* The field "return", spelled once: clang-format 14 writes a keyword as a
 * macro argument `RETURN_FIELD`, clang-format 19 `RF(return)`. */
/* clang-format off */
#define RETURN_FIELD RF(return)
/* clang-format on */

/* The codec's failure as the contract's error: its kind chosen here, its
 * message (or the limit it passed) through api_mapped. */
static int codec_fail(const api_service *svc, const json_codec_error *ce, api_error *err)
{
    static const api_error_kind kinds[] = {
        [JSON_CODEC_SYNTAX] = API_E_INVALID_JSON,        [JSON_CODEC_TOO_DEEP] = API_E_TOO_LARGE,
        [JSON_CODEC_TOO_MANY_VALUES] = API_E_TOO_LARGE,  [JSON_CODEC_NON_FINITE] = API_E_NON_FINITE,
        [JSON_CODEC_INTEGER_RANGE] = API_E_OUT_OF_RANGE, [JSON_CODEC_NO_MEMORY] = API_E_UNAVAILABLE,
        [JSON_CODEC_INTERNAL] = API_E_INTERNAL,
    };
    api_error_kind kind = (unsigned)ce->kind < sizeof kinds / sizeof kinds[0] && ce->kind
                              ? kinds[ce->kind]
                              : API_E_INVALID_JSON;
    char message[API_MESSAGE_MAX];

    if (ce->kind == JSON_CODEC_TOO_DEEP)
        snprintf(message, sizeof message,
                 "the JSON nests arrays and objects deeper than the limit of %zu levels",
                 svc->limits.max_json_depth);
    else if (ce->kind == JSON_CODEC_TOO_MANY_VALUES)
        snprintf(message, sizeof message,
                 "the JSON holds more than %zu values outside numeric arrays",
                 svc->limits.max_json_values);
    else
        snprintf(message, sizeof message, "%s%s",
                 ce->kind == JSON_CODEC_INTERNAL ? "decoding the body: " : "", ce->message);
    return api_mapped(err, -1, kind, message, NULL);
}

/* The codec's json_charge: grow what decoding holds of the budget by
 * `bytes`, counted with what the request holds already (its body, what it
 * decoded before), so that a total past the whole budget is told apart
 * from a busy one. rq->refused follows the last charge: a codec that goes
 * on without what was refused (json_limits.h) charges again before it
 * allocates anything else. */
static bool charge_decoded(void *ctx, size_t bytes)
{
    request *rq = ctx;

    rq->refused = reservation_grow(&rq->decoded, rq->budget, bytes, &rq->refusal) != 0;
    return !rq->refused;
}

/* The codec's give-back: what a failed parse attempt or a scratch buffer
 * was charged. */
static void uncharge_decoded(void *ctx, size_t bytes)
{
    request *rq = ctx;

    reservation_shrink(&rq->decoded, bytes);
}

/* Parse the body as a JSON object whose keys are fields of `endpoint`
 * (request_fields.h), nested no deeper than the service's max_json_depth
 * (else 422 too_large), with every array's shape named once. The numeric
 * arrays are charged to budget before their values are allocated. */
static int request_parse(const api_service *svc, const api_budget *budget, const char *body,
                         size_t len, unsigned endpoint, request *rq, api_error *err)
{
    const char *allowed[RF_COUNT + 1];
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = svc->limits.max_json_depth,
                              .max_values = svc->limits.max_json_values,
                              .string_span_min = svc->limits.string_span_min,
                              .charge = {.take = budget ? charge_decoded : NULL,
                                         .give = uncharge_decoded,
                                         .ctx = rq}};

    memset(rq, 0, sizeof *rq);
    rq->embed_scale = 1.0;
    rq->budget = budget;
    if (json_doc_load(&rq->doc, body, len, &limits, &ce)) {
        if (ce.kind != JSON_CODEC_REFUSED)
            return codec_fail(svc, &ce, err);
        *err = rq->refusal;
        return -1;
    }
    request_field_keys(endpoint, allowed);
    if (api_json(err, jf_check_object(rq->doc.root, "", allowed, &err->json)))
        return -1;
    return request_check_shapes(rq->doc.root, endpoint, err);
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
        return api_fail(err, API_E_TOO_LARGE, "model.heads", "heads %zu exceeds the limit of %zu",
                        m->heads, lim->max_heads);
    if (m->kv_heads > lim->max_heads)
        return api_fail(err, API_E_TOO_LARGE, "model.kv_heads",
                        "kv_heads %zu exceeds the limit of %zu", m->kv_heads, lim->max_heads);
    return 0;
}

/* Resolve the `model` field: a name, an inline object, or absent (then the
 * model called default_name, or none when default_name is NULL). */
static int request_model(const api_service *svc, request *rq, const char *default_name,
                         api_error *err)
{
    const json_t *v = jf_get(rq->doc.root, RF(model));

    if (!v) {
        rq->model = default_name ? service_find_model(svc, default_name) : NULL;
        if (default_name && !rq->model)
            rq->model = svc->models[0];
        return 0;
    }
    if (json_is_string(v)) {
        const char *name = json_doc_string(&rq->doc, v); /* a long one from the body */
        if (!name)
            return api_fail_oom(err);
        rq->model = service_find_model(svc, name);
        if (!rq->model)
            return api_fail(err, API_E_UNKNOWN_MODEL, RF(model), "no model named '%s' is loaded",
                            name);
        return 0;
    }
    if (json_is_object(v)) {
        desc_error de;
        rq->owned_model = model_from_json(&rq->doc, v, RF(model), &de);
        rq->model = rq->owned_model;
        return rq->model ? check_model_limits(svc, rq->model, err) : api_desc(err, -1, &de);
    }
    return api_fail(err, API_E_INVALID_REQUEST, RF(model),
                    "model must be a model name or an inline model object");
}

/* The scheme: the request's, else the model's, else sinusoidal. With the
 * model's scheme, request params override the model's key by key; another
 * scheme starts from its defaults. */
static int decode_scheme(request *rq, api_error *err)
{
    bool present;
    int which = SCHEME_SINUSOIDAL;
    const json_t *params = jf_get(rq->doc.root, RF(params));

    if (api_json(err, jf_choice(&rq->doc, rq->doc.root, "", RF(scheme), scheme_names, &present,
                                &which, &err->json)))
        return -1;
    if (!present && rq->model)
        which = (int)rq->model->scheme;
    if (params && !json_is_object(params))
        return api_fail(err, API_E_INVALID_REQUEST, RF(params), "params must be an object");
    const scheme *base = rq->model && rq->model->has_decoded ? &rq->model->decoded : NULL;
    desc_error de;
    return api_desc(err,
                    scheme_decode(&rq->doc, (scheme_kind)which, params, RF(params), base,
                                  &rq->scheme, &de),
                    &de);
}

static int positions_shape_fail(const request *rq, api_error *err)
{
    if (rq->batched)
        return api_fail(err, API_E_INVALID_SHAPE, RF(positions),
                        "positions must be [%zu] or [%zu][%zu] for this input", rq->tokens,
                        rq->batch, rq->tokens);
    return api_fail(err, API_E_INVALID_SHAPE, RF(positions),
                    "positions must be [%zu] (or [1][%zu]) for this input", rq->tokens, rq->tokens);
}

void request_positions_from_mask(model_position_rule rule, const uint8_t *mask, size_t tokens,
                                 int64_t *positions)
{
    int64_t seen = 0; /* cumsum(mask) up to and including t */

    for (size_t t = 0; t < tokens; t++) {
        seen += mask[t];
        switch (rule) {
        case MODEL_POSITIONS_BLOOM: /* build_alibi_tensor */
            positions[t] = (seen - 1) * mask[t];
            break;
        case MODEL_POSITIONS_SLOT: /* MPT's bias: the slot, whatever the mask */
            positions[t] = (int64_t)t;
            break;
        case MODEL_POSITIONS_OPT: /* OPTLearnedPositionalEmbedding: -1 where masked */
            positions[t] = seen * mask[t] - 1;
            break;
        default: /* generate(): cumsum - 1, masked_fill_(mask == 0, 1) */
            positions[t] = mask[t] ? seen - 1 : 1;
            break;
        }
    }
}

void request_positions_from_ids(const int64_t *ids, size_t tokens, int64_t pad, int64_t *positions)
{
    int64_t seen = 0; /* cumsum(ids != pad) */

    for (size_t t = 0; t < tokens; t++) {
        if (!ids) {
            positions[t] = pad + 1 + (int64_t)t;
            continue;
        }
        bool real = ids[t] != pad;
        seen += real;
        positions[t] = real ? seen + pad : pad;
    }
}

static int mask_shape_fail(const request *rq, api_error *err)
{
    if (rq->batched)
        return api_fail(err, API_E_INVALID_SHAPE, RF(attention_mask),
                        "attention_mask must be [%zu] or [%zu][%zu] of 0 and 1 for this input",
                        rq->tokens, rq->batch, rq->tokens);
    return api_fail(err, API_E_INVALID_SHAPE, RF(attention_mask),
                    "attention_mask must be [%zu] (or [1][%zu]) of 0 and 1 for this input",
                    rq->tokens, rq->tokens);
}

/* attention_mask -> rq->mask, one row per batch row ([tokens] is every
 * row's). Anything but 0 and 1 in a list is a 422 invalid_shape, as the
 * contract says, also a fraction or an integer past int64. */
static int decode_mask(request *rq, const json_t *value, api_error *err)
{
    size_t rows = request_rows(rq);
    int_array given;

    const json_span *span = json_doc_array(&rq->doc, value);
    if (span && span->count != rq->tokens && span->count != rows)
        return mask_shape_fail(rq, err);
    if (int_array_from_json(&rq->doc, value, RF(attention_mask), INT64_MIN, INT64_MAX, JSON_E_SHAPE,
                            &given, &err->json)) {
        json_error_kind k = err->json.kind;
        if ((span || json_is_array(value)) && (k == JSON_E_INVALID || k == JSON_E_RANGE))
            err->json.kind = JSON_E_SHAPE;
        return api_json(err, -1);
    }
    bool per_row = given.ndim == 2;
    if ((!per_row && given.dim[0] != rq->tokens) ||
        (per_row && (given.dim[0] != rq->batch || given.dim[1] != rq->tokens))) {
        int_array_free(&given);
        return mask_shape_fail(rq, err);
    }
    size_t n = per_row ? rows : rq->tokens;
    for (size_t i = 0; i < n; i++)
        if (given.data[i] != 0 && given.data[i] != 1) {
            int64_t bad = given.data[i];
            int_array_free(&given);
            if (per_row)
                return api_fail(err, API_E_INVALID_SHAPE, RF(attention_mask),
                                "attention_mask[%zu][%zu] is %" PRId64 "; a mask holds 0 and 1",
                                i / rq->tokens, i % rq->tokens, bad);
            return api_fail(err, API_E_INVALID_SHAPE, RF(attention_mask),
                            "attention_mask[%zu] is %" PRId64 "; a mask holds 0 and 1", i, bad);
        }
    rq->mask = malloc(rows * sizeof *rq->mask);
    if (!rq->mask) {
        int_array_free(&given);
        return api_fail_oom(err);
    }
    for (size_t i = 0; i < rows; i++)
        rq->mask[i] = (uint8_t)given.data[per_row ? i : i % rq->tokens];
    int_array_free(&given);
    return 0;
}

static int decode_given_positions(request *rq, const json_t *positions, api_error *err)
{
    size_t rows = request_rows(rq);
    int_array given;

    /* A list that cannot have the right shape is refused before its
     * integers are read: 32M of them would hold 256 MB for nothing. */
    const json_span *span = json_doc_array(&rq->doc, positions);
    if (span && span->count != rq->tokens && span->count != rows)
        return positions_shape_fail(rq, err);
    if (api_json(err, int_array_from_json(&rq->doc, positions, RF(positions), 0, PE_MAX_POSITION,
                                          JSON_E_TOO_LARGE, &given, &err->json)))
        return -1;
    bool per_row = given.ndim == 2;
    if ((!per_row && given.dim[0] != rq->tokens) ||
        (per_row && (given.dim[0] != rq->batch || given.dim[1] != rq->tokens))) {
        int_array_free(&given);
        return positions_shape_fail(rq, err);
    }
    for (size_t b = 0; b < rq->batch; b++)
        memcpy(rq->positions + b * rq->tokens, given.data + (per_row ? b * rq->tokens : 0),
               rq->tokens * sizeof *rq->positions);
    int_array_free(&given);
    return 0;
}

/* positions, offset, attention_mask and causal. Explicit positions or an
 * offset win; without them the model's own derivation (model.h): from
 * token_ids for RoBERTa, from the mask when one is sent, else 0.. */
static int decode_positions(request *rq, api_error *err)
{
    const json_t *positions = jf_get(rq->doc.root, RF(positions));
    const json_t *mask = jf_get(rq->doc.root, RF(attention_mask));
    model_position_rule rule = rq->model ? rq->model->position_rule : MODEL_POSITIONS_CUMSUM;
    size_t rows = request_rows(rq);
    int64_t offset = 0;
    bool present, has_offset = jf_get(rq->doc.root, RF(offset)) != NULL;

    if (api_json(err, jf_bool(rq->doc.root, "", RF(causal), &present, &rq->causal, &err->json)))
        return -1;
    if (mask && (positions || has_offset))
        return api_fail(err, API_E_INVALID_REQUEST, positions ? RF(positions) : RF(offset),
                        "give attention_mask or %s, not both: with a mask the positions "
                        "come from it",
                        positions ? RF(positions) : RF(offset));
    if (positions && has_offset)
        return api_fail(err, API_E_INVALID_REQUEST, RF(offset),
                        "give offset or positions, not both");
    if (mask && decode_mask(rq, mask, err))
        return -1;
    rq->positions = malloc(rows * sizeof *rq->positions);
    if (!rq->positions)
        return api_fail_oom(err);
    if (positions_nd_wanted(rq, positions)) {
        if (positions_nd_fill(rq, err))
            return -1;
    } else if (positions) {
        rq->pos_field = RF(positions);
        if (decode_given_positions(rq, positions, err))
            return -1;
    } else if (!has_offset && rule == MODEL_POSITIONS_PAD_IDS) {
        rq->pos_field = rq->token_ids ? RF(token_ids) : RF(embeddings);
        for (size_t b = 0; b < rq->batch; b++)
            request_positions_from_ids(rq->token_ids ? rq->token_ids + b * rq->tokens : NULL,
                                       rq->tokens, rq->model->pad_token_id,
                                       rq->positions + b * rq->tokens);
    } else if (mask) {
        rq->pos_field = RF(attention_mask);
        for (size_t b = 0; b < rq->batch; b++)
            request_positions_from_mask(rule, rq->mask + b * rq->tokens, rq->tokens,
                                        rq->positions + b * rq->tokens);
    } else {
        rq->pos_field = RF(offset);
        if (api_json(err, jf_int(&rq->doc, rq->doc.root, "", RF(offset), 0, INT64_MAX, &present,
                                 &offset, &err->json)))
            return -1;
        if ((uint64_t)offset + rq->tokens - 1 > (uint64_t)PE_MAX_POSITION)
            return api_fail(err, API_E_TOO_LARGE, RF(offset),
                            "offset %" PRId64 " with %zu tokens reaches past the largest "
                            "position %" PRId64,
                            offset, rq->tokens, PE_MAX_POSITION);
        for (size_t b = 0; b < rq->batch; b++)
            for (size_t t = 0; t < rq->tokens; t++)
                rq->positions[b * rq->tokens + t] = offset + (int64_t)t;
    }
    /* OPT: the table row of every position (a masked -1 reads row 1) */
    int64_t table_offset = rq->model ? rq->model->table_offset : 0;
    for (size_t i = 0; table_offset && i < rows; i++)
        rq->positions[i] += table_offset;
    rq->max_position = 0;
    for (size_t i = 0; i < rows; i++)
        if (rq->positions[i] > rq->max_position)
            rq->max_position = rq->positions[i];
    if (positions_nd_expand(rq, err))
        return -1;
    if (positions_nd_max(rq) > rq->max_position)
        rq->max_position = positions_nd_max(rq);
    if (rq->max_position > PE_MAX_POSITION)
        return api_fail(err, API_E_TOO_LARGE, rq->pos_field,
                        "the positions from %s reach %" PRId64
                        ", past the largest position %" PRId64,
                        rq->pos_field, rq->max_position, PE_MAX_POSITION);
    return 0;
}

int request_check_output(const api_service *svc, size_t n, const char *what, api_error *err)
{
    if (n > svc->limits.max_output_elements)
        return api_fail(err, API_E_TOO_LARGE, NULL, "%s would have %zu elements; the limit is %zu",
                        what, n, svc->limits.max_output_elements);
    return 0;
}

/* The scheme and its params (decode_scheme), then the service's limits on
 * the heads and head size they ask for. */
static int decode_scheme_in_limits(const api_service *svc, request *rq, api_error *err)
{
    if (decode_scheme(rq, err))
        return -1;
    if (rq->scheme.heads > svc->limits.max_heads)
        return api_fail(err, API_E_TOO_LARGE, "params.heads", "heads %zu exceeds the limit of %zu",
                        rq->scheme.heads, svc->limits.max_heads);
    if (rq->scheme.head_dim > svc->limits.max_dim)
        return api_fail(err, API_E_TOO_LARGE, "params.head_dim",
                        "head_dim %zu exceeds the limit of %zu", rq->scheme.head_dim,
                        svc->limits.max_dim);
    return 0;
}

/* embed_scale and the answer's encoding: what every claim reads. */
static int decode_output_options(request *rq, api_error *err)
{
    static const char *const encodings[] = {"json", "base64", NULL};
    bool present;
    int which = 0;

    if (api_json(err, jf_number(&rq->doc, rq->doc.root, "", RF(embed_scale), false, &present,
                                &rq->embed_scale, &err->json)) ||
        api_json(err, jf_choice(&rq->doc, rq->doc.root, "", RF(encoding), encodings, &present,
                                &which, &err->json)))
        return -1;
    rq->base64 = which == 1;
    return 0;
}

/* Decode scheme/params, shape, embeddings (unless rq->x is already set),
 * limits, embed_scale, encoding and positions. */
static int request_common(const api_service *svc, request *rq, api_error *err)
{
    const json_t *shape = jf_get(rq->doc.root, RF(shape));
    const json_t *embeddings = jf_get(rq->doc.root, RF(embeddings));
    size_t ndim = 0, dim[3] = {0};

    if (decode_scheme_in_limits(svc, rq, err))
        return -1;
    if (!rq->x.data && embeddings) {
        if (request_array(&rq->doc, RF(embeddings), 2, 3, &rq->x, err))
            return -1;
    } else if (!rq->x.data && shape) {
        if (api_json(err,
                     shape_from_json(&rq->doc, shape, RF(shape), 2, 3, &ndim, dim, &err->json)))
            return -1;
    } else if (!rq->x.data) {
        return api_fail(err, API_E_INVALID_REQUEST, RF(shape),
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
    const char *size_field = rq->x.data ? RF(embeddings) : RF(shape);
    if (rq->batch > svc->limits.max_batch)
        return api_fail(err, API_E_TOO_LARGE, size_field, "a batch of %zu exceeds the limit of %zu",
                        rq->batch, svc->limits.max_batch);
    if (mul_size(rq->batch, rq->tokens, &rows) || rows > svc->limits.max_tokens)
        return api_fail(err, API_E_TOO_LARGE, size_field,
                        "%zu x %zu tokens exceed the limit of %zu tokens per request", rq->batch,
                        rq->tokens, svc->limits.max_tokens);
    if (rq->d > svc->limits.max_dim)
        return api_fail(err, API_E_TOO_LARGE, size_field, "d = %zu exceeds the limit of %zu", rq->d,
                        svc->limits.max_dim);
    if (mul_size(rows, rq->d, &elements) || request_check_output(svc, elements, "the input", err) ||
        decode_output_options(rq, err))
        return -1;
    return decode_positions(rq, err);
}

const char *const output_names[] = {"q", "k", "v", "encoded", "bias", "scores", "gate", NULL};

/* Outputs the contract names that posenc does not serve: the DSA indexer's
 * (DeepSeek-V3.2, GLM-5: DeepseekV32Indexer's q and k, their scores) */
static const char *const unserved_outputs[] = {"index_q", "index_k", "index_scores", NULL};

/* return[i] = name: a known name that is not served, or an unknown one. */
static int unknown_output(const char *name, const char *at, api_error *err)
{
    for (int k = 0; name && unserved_outputs[k]; k++)
        if (strcmp(unserved_outputs[k], name) == 0)
            return api_fail(err, API_E_INVALID_REQUEST, at,
                            "%s: '%s' is not served: posenc computes the q, k and v of "
                            "DeepSeek-V3.2's and GLM-5's attention, not their DSA indexer "
                            "(which only masks keys past its top-k)",
                            at, name);
    return api_fail(err, API_E_INVALID_REQUEST, at,
                    "%s must be one of q, k, v, encoded, bias, scores, gate", at);
}

static int parse_outputs(const json_doc *doc, request_outputs *o, api_error *err)
{
    const json_t *list = jf_get(doc->root, RETURN_FIELD);
    const json_t *item;
    size_t i;

    memset(o, 0, sizeof *o);
    if (!list) {
        for (output_id id = OUT_Q; id <= OUT_V; id++) {
            o->order[o->count++] = id;
            o->wanted[id] = true;
        }
        return 0;
    }
    if (!json_is_array(list))
        return api_fail(err, API_E_INVALID_REQUEST, RETURN_FIELD,
                        "return must be a list of strings");
    if (json_doc_array(doc, list)) /* a list of numbers: its first is wrong */
        return api_fail(err, API_E_INVALID_REQUEST, "return[0]",
                        "return[0] must be one of q, k, v, encoded, bias, scores, gate");
    json_array_foreach (list, i, item) {
        jpath at = jpath_index(RETURN_FIELD, i);
        int which = -1;
        const char *name = json_doc_string(doc, item); /* a long one from the body */
        if (json_is_string(item) && !name)
            return api_fail_oom(err);
        for (int k = 0; name && output_names[k]; k++)
            if (strcmp(output_names[k], name) == 0)
                which = k;
        if (which < 0)
            return unknown_output(name, at.s, err);
        if (!o->wanted[which]) {
            o->wanted[which] = true;
            o->order[o->count++] = (output_id)which;
        }
    }
    return 0;
}

/* token_ids -> embeddings rows of the model's token_embedding table. */
static int gather_tokens(const api_service *svc, request *rq, const json_t *ids_value,
                         api_error *err)
{
    const tensor *table = &rq->model->weights[W_TOKEN_EMBEDDING];
    int_array ids;

    if (rq->model->layer > 0)
        return api_fail(err, API_E_MISSING_WEIGHT, RF(token_ids),
                        "model '%s' serves layer %zu, whose input is the hidden state of the "
                        "layer before: send embeddings, not token_ids",
                        rq->model->name, rq->model->layer);
    if (rq->model->token_ids_refusal)
        return api_fail(err, API_E_MISSING_WEIGHT, RF(token_ids),
                        "model '%s' serves layer 0 from embeddings only: %s", rq->model->name,
                        rq->model->token_ids_refusal);
    if (!table->data)
        return api_fail(err, API_E_MISSING_WEIGHT, RF(token_ids),
                        "token_ids need weights.token_embedding, which model '%s' lacks",
                        rq->model->name);
    if (api_json(err,
                 int_array_from_json(&rq->doc, ids_value, RF(token_ids), 0,
                                     (int64_t)table->dim[0] - 1, JSON_E_RANGE, &ids, &err->json)))
        return -1;
    size_t n = ids.dim[0] * (ids.ndim == 2 ? ids.dim[1] : 1), d = table->dim[1];
    /* The token and batch limits, before the gathered rows are allocated
     * (request_common checks them again on the result). */
    if (n > svc->limits.max_tokens || (ids.ndim == 2 && ids.dim[0] > svc->limits.max_batch)) {
        int_array_free(&ids);
        return api_fail(err, API_E_TOO_LARGE, RF(token_ids),
                        "token_ids holds %zu tokens; the limits are %zu tokens and a batch "
                        "of %zu",
                        n, svc->limits.max_tokens, svc->limits.max_batch);
    }
    rq->x.data = malloc(n * d * sizeof *rq->x.data);
    if (!rq->x.data) {
        int_array_free(&ids);
        return api_fail_oom(err);
    }
    for (size_t i = 0; i < n; i++)
        memcpy(rq->x.data + i * d, table->data + (size_t)ids.data[i] * d, d * sizeof(float));
    rq->x.ndim = ids.ndim + 1;
    memcpy(rq->x.dim, ids.dim, ids.ndim * sizeof *ids.dim);
    rq->x.dim[ids.ndim] = d;
    if (rq->model->position_rule == MODEL_POSITIONS_PAD_IDS) { /* its positions come from them */
        rq->token_ids = ids.data;                              /* moved */
        ids.data = NULL;
    }
    int_array_free(&ids);
    return 0;
}

/* Who reads the input, in messages: /apply, or /diagnose's q/k/v. */
typedef struct input_words {
    const char *needs;   /* "<who> need(s)" */
    const char *missing; /* the message when neither input is given */
} input_words;

/* The one input path of /apply and of /diagnose's q/k/v subjects: the
 * model must project, the input is embeddings or token_ids (gathered now),
 * then the common fields (scheme, shapes, limits, positions, mask). */
static int decode_input(const api_service *svc, request *rq, const input_words *words,
                        api_error *err)
{
    const json_t *ids = jf_get(rq->doc.root, RF(token_ids));
    const json_t *embeddings = jf_get(rq->doc.root, RF(embeddings));

    for (weight_id w = W_WQ; w <= W_WV && !rq->model->qkv.w_qkv && !rq->model->mla; w++)
        if (!model_has(rq->model, w))
            return api_fail(err, API_E_MISSING_WEIGHT, RF(model),
                            "%s weights.%s, which model '%s' lacks", words->needs, weight_names[w],
                            rq->model->name);
    if (ids && embeddings)
        return api_fail(err, API_E_INVALID_REQUEST, RF(token_ids),
                        "give embeddings or token_ids, not both");
    if (!ids && !embeddings)
        return api_fail(err, API_E_INVALID_REQUEST, RF(embeddings), "%s", words->missing);
    return (ids && gather_tokens(svc, rq, ids, err)) || request_common(svc, rq, err) ? -1 : 0;
}

/* ---- /diagnose: the claim, around a subject the endpoint decodes ---- */

/* /diagnose reads q/k/v subjects under multimodal rope claims (their
 * input projected and rotated as /apply does); rope2d, which /apply does
 * not serve, is refused by name. */
static int diagnose_refuse_nd(const request *rq, api_error *err)
{
    if (rq->scheme.kind == SCHEME_ROPE2D)
        return api_fail(err, API_E_INVALID_REQUEST, RF(scheme),
                        "/diagnose reads rope2d claims on embeddings + encoded, not on q/k/v "
                        "(/apply does not serve rope2d)");
    return 0;
}

int request_open(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                 unsigned endpoint, bool default_model, request *rq, api_error *err)
{
    return request_parse(svc, budget, body, len, endpoint, rq, err) ||
                   request_model(svc, rq, default_model ? "default" : NULL, err)
               ? -1
               : 0;
}

int request_open_input(const api_service *svc, request *rq, api_error *err)
{
    static const input_words qkv = {"q, k and v need", "q, k and v need the input they came from: "
                                                       "give embeddings or token_ids"};
    return decode_input(svc, rq, &qkv, err) || diagnose_refuse_nd(rq, err) ? -1 : 0;
}

int request_open_claim(const api_service *svc, request *rq, size_t batch, size_t tokens, size_t d,
                       api_error *err)
{
    if (decode_scheme_in_limits(svc, rq, err))
        return -1;
    if (batch * tokens > svc->limits.max_tokens)
        return api_fail(err, API_E_TOO_LARGE, NULL,
                        "%zu tokens exceed the limit of %zu tokens per request", batch * tokens,
                        svc->limits.max_tokens);
    rq->batched = batch > 1;
    rq->batch = batch;
    rq->tokens = tokens;
    rq->d = d;
    return decode_output_options(rq, err) || decode_positions(rq, err) ? -1 : 0;
}

int request_decode(const api_service *svc, const api_budget *budget, request_endpoint which,
                   const char *body, size_t len, request *rq, api_error *err)
{
    static const input_words apply = {"/apply needs", "give embeddings or token_ids"};
    int rc;

    if (which == REQUEST_APPLY)
        rc = request_parse(svc, budget, body, len, RF_APPLY, rq, err) ||
             request_model(svc, rq, "default", err) || decode_input(svc, rq, &apply, err) ||
             parse_outputs(&rq->doc, &rq->outputs, err);
    else
        rc = request_parse(svc, budget, body, len, RF_ENCODE, rq, err) ||
             request_model(svc, rq, NULL, err) || request_common(svc, rq, err);
    if (rc && rq->refused) /* the budget's answer (503 or 422), not the reader's */
        *err = rq->refusal;
    /* decoded: no JSON survives this point (arrays were moved out) */
    json_doc_free(&rq->doc);
    return rc ? -1 : 0;
}

size_t request_held_bytes(const request *rq)
{
    size_t rows = request_rows(rq);
    return (rq->x.data ? rows * rq->d * sizeof(float) : 0) + rows * sizeof *rq->positions +
           (rq->mask ? rows * sizeof *rq->mask : 0) +
           (rq->token_ids ? rows * sizeof *rq->token_ids : 0) +
           (rq->positions_nd ? rows * rq->nd * sizeof *rq->positions_nd : 0);
}

int request_reserve(request *rq, size_t bytes, reservation *held, api_error *err)
{
    /* grown or shrunk in place, never released and taken again: another
     * request cannot take what this one holds in between */
    if (bytes > rq->decoded.bytes &&
        reservation_grow(&rq->decoded, rq->budget, bytes - rq->decoded.bytes, err))
        return -1;
    reservation_shrink(&rq->decoded, rq->decoded.bytes - bytes);
    *held = rq->decoded;
    rq->decoded = (reservation){0};
    return 0;
}

void request_free(request *rq)
{
    if (!rq)
        return;
    reservation_release(&rq->decoded);
    json_doc_free(&rq->doc);
    model_free(rq->owned_model);
    scheme_free(&rq->scheme);
    tensor_free(&rq->x);
    free(rq->positions);
    free(rq->positions_nd);
    free(rq->mask);
    free(rq->token_ids);
    memset(rq, 0, sizeof *rq);
}

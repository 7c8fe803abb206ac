/*
 * diagnose_decode.c - the body of POST /diagnose into a diag_request: which
 * subject it sends (exactly one), its arrays, tolerance, return_map, and
 * the claim through the shared request path (request_open*).
 */
#include <stdlib.h>
#include <string.h>

#include "diagnose_decode.h"
#include "diagnose_batch.h"
#include "diagnose_write.h"
#include "rope2d.h"
#include "json/json_fields.h"

static const char *const tolerance_keys[] = {"atol", "rtol", NULL};
static const char *const axes_names[] = {"...td", "bhtd", NULL};

/* "axes": "...td" (the default) or "bhtd" (embeddings/encoded, q/k/v). */
static int read_axes(diag_request *dr, api_error *err)
{
    const json_doc *doc = &dr->rq.doc;
    bool present;
    int which = 0;

    if (api_json(err,
                 jf_choice(doc, doc->root, "", RF(axes), axes_names, &present, &which, &err->json)))
        return -1;
    dr->bhtd = which == 1;
    if (dr->bhtd && dr->kind != DX_ENCODED && dr->kind != DX_QKV)
        return api_fail(err, API_E_INVALID_REQUEST, "axes",
                        "axes \"bhtd\" goes with embeddings + encoded or q/k/v");
    return 0;
}

/* The subject's kind from the fields present: exactly one kind. */
static int subject_kind(const json_t *root, diag_kind *kind, api_error *err)
{
    bool has_qkv = jf_get(root, "q") || jf_get(root, "k") || jf_get(root, "v");
    bool present[] = {
        [DX_TABLE] = jf_get(root, "table") != NULL,
        [DX_ENCODED] = jf_get(root, "encoded") != NULL,
        [DX_CACHE] = jf_get(root, "cos") || jf_get(root, "sin"),
        [DX_BIAS] = jf_get(root, "bias") != NULL,
        [DX_SLOPES] = jf_get(root, "slopes") != NULL,
        [DX_QKV] = has_qkv,
    };
    static const char *const words[] = {"table",     "embeddings + encoded",
                                        "cos + sin", "bias",
                                        "slopes",    "q/k/v"};
    int found = -1;

    for (int k = DX_TABLE; k <= DX_QKV; k++) {
        if (!present[k])
            continue;
        if (found >= 0)
            return api_fail(err, API_E_INVALID_REQUEST, NULL,
                            "give one subject per request, not both %s and %s", words[found],
                            words[k]);
        found = k;
    }
    if (found < 0)
        return api_fail(err, API_E_INVALID_REQUEST, NULL,
                        "give a subject: table, embeddings + encoded, cos + sin, bias, slopes, "
                        "or q/k/v with token_ids or embeddings");
    if (found == DX_CACHE && !(jf_get(root, "cos") && jf_get(root, "sin")))
        return api_fail(err, API_E_INVALID_REQUEST, jf_get(root, "cos") ? "sin" : "cos",
                        "a RoPE cache subject needs both cos and sin");
    if (found == DX_ENCODED && !jf_get(root, "embeddings"))
        return api_fail(err, API_E_INVALID_REQUEST, "embeddings",
                        "an encoded subject needs the embeddings it was computed from");
    if (found != DX_QKV && found != DX_ENCODED && jf_get(root, "embeddings"))
        return api_fail(err, API_E_INVALID_REQUEST, "embeddings",
                        "embeddings go with encoded or with q/k/v, not with %s", words[found]);
    if (found != DX_QKV && jf_get(root, "token_ids"))
        return api_fail(err, API_E_INVALID_REQUEST, "token_ids",
                        "token_ids go with a q/k/v subject");
    *kind = (diag_kind)found;
    return 0;
}

/* Read the array `name` (shaped by `<name>_shape`: request_array) of rank
 * min..max into slot i; slot 0's shape as sent is kept (sent_dim) before
 * its batch axes are folded. */
static int read_array(diag_request *dr, size_t i, const char *name, const char *alt_shape,
                      size_t min_ndim, size_t max_ndim, api_error *err)
{
    (void)alt_shape;
    if (request_array(&dr->rq.doc, name, min_ndim, max_ndim, &dr->arr[i], err))
        return -1;
    dr->names[i] = name;
    if (i == 0) {
        dr->sent_ndim = dr->arr[0].ndim;
        memcpy(dr->sent_dim, dr->arr[0].dim, sizeof dr->sent_dim);
    }
    return 0;
}

static int read_tolerance(diag_request *dr, api_error *err)
{
    const json_doc *doc = &dr->rq.doc;
    const json_t *tol = jf_get(doc->root, "tolerance");
    bool present;

    dr->tol = (pe_dx_tolerance){.atol = 1e-4, .rtol = 1e-4};
    if (api_json(err, jf_bool(doc->root, "", "return_map", &present, &dr->return_map, &err->json)))
        return -1;
    if (!tol)
        return 0;
    if (api_json(err, jf_check_object(tol, "tolerance", tolerance_keys, &err->json)) ||
        api_json(err, jf_number(doc, tol, "tolerance", "atol", false, &present, &dr->tol.atol,
                                &err->json)) ||
        api_json(err, jf_number(doc, tol, "tolerance", "rtol", false, &present, &dr->tol.rtol,
                                &err->json)))
        return -1;
    if (dr->tol.atol < 0 || dr->tol.rtol < 0)
        return api_fail(err, API_E_OUT_OF_RANGE,
                        dr->tol.atol < 0 ? "tolerance.atol" : "tolerance.rtol",
                        "tolerances must be >= 0");
    return 0;
}

/* Whether an array of the claim is [batch][tokens]: a numeric array is a
 * span of the doc (its `[]` stand-in holds nothing), else a jansson array. */
static bool rows_of_rows(const json_doc *doc, const json_t *v)
{
    const json_span *span = json_doc_array(doc, v);

    if (span)
        return span->ndim >= 2;
    return v && json_is_array(json_array_get(v, 0));
}

/* Whether the claim's positions or attention_mask are per batch row. */
static bool claim_per_row(const json_doc *doc)
{
    return rows_of_rows(doc, jf_get(doc->root, RF(positions))) ||
           rows_of_rows(doc, jf_get(doc->root, RF(attention_mask)));
}

/* embeddings and encoded, folded alike: row by row when the claim is per
 * row or either's rows differ. */
static int read_encoded(diag_request *dr, bool per_row, api_error *err)
{
    request *rq = &dr->rq;

    if (read_array(dr, 0, "encoded", NULL, 2, TENSOR_MAX_NDIM, err) ||
        request_array(&rq->doc, RF(embeddings), 2, TENSOR_MAX_NDIM, &rq->x, err))
        return -1;
    per_row = per_row || diag_batch_rows_differ(&rq->x, 2, dr->bhtd) ||
              diag_batch_rows_differ(&dr->arr[0], 2, dr->bhtd);
    if (diag_fold_batch(&rq->x, "embeddings", 2, dr->bhtd, per_row, &dr->batch, err) ||
        diag_fold_batch(&dr->arr[0], "encoded", 2, dr->bhtd, per_row, &dr->batch, err))
        return -1;
    if (rq->x.dim[0] != dr->arr[0].dim[0] || rq->x.dim[1] != dr->arr[0].dim[1])
        return api_fail(err, API_E_INVALID_SHAPE, "encoded",
                        "encoded is [%zu][%zu] but embeddings are [%zu][%zu]", dr->arr[0].dim[0],
                        dr->arr[0].dim[1], rq->x.dim[0], rq->x.dim[1]);
    return 0;
}

/* cos and sin, folded alike (as read_encoded). */
static int read_cache(diag_request *dr, bool per_row, api_error *err)
{
    if (read_array(dr, 0, "cos", NULL, 2, TENSOR_MAX_NDIM, err) ||
        read_array(dr, 1, "sin", NULL, 2, TENSOR_MAX_NDIM, err))
        return -1;
    per_row = per_row || diag_batch_rows_differ(&dr->arr[0], 2, false) ||
              diag_batch_rows_differ(&dr->arr[1], 2, false);
    if (diag_fold_batch(&dr->arr[0], "cos", 2, false, per_row, &dr->batch, err) ||
        diag_fold_batch(&dr->arr[1], "sin", 2, false, per_row, &dr->batch, err))
        return -1;
    if (dr->arr[0].dim[0] != dr->arr[1].dim[0] || dr->arr[0].dim[1] != dr->arr[1].dim[1])
        return api_fail(err, API_E_INVALID_SHAPE, "sin", "sin is [%zu][%zu] but cos is [%zu][%zu]",
                        dr->arr[1].dim[0], dr->arr[1].dim[1], dr->arr[0].dim[0], dr->arr[0].dim[1]);
    return 0;
}

/* The subject's arrays, and the rows and width the claim reads. */
static int read_subject(const api_service *svc, diag_request *dr, size_t *tokens, size_t *d,
                        api_error *err)
{
    request *rq = &dr->rq;
    bool per_row = claim_per_row(&rq->doc);

    switch (dr->kind) {
    case DX_TABLE:
        if (read_array(dr, 0, "table", NULL, 2, TENSOR_MAX_NDIM, err) ||
            diag_fold_batch(&dr->arr[0], "table", 2, false, per_row, &dr->batch, err))
            return -1;
        break;
    case DX_ENCODED:
        if (read_encoded(dr, per_row, err))
            return -1;
        break;
    case DX_CACHE:
        if (read_cache(dr, per_row, err))
            return -1;
        break;
    case DX_BIAS:
        if (read_array(dr, 0, "bias", NULL, 3, TENSOR_MAX_NDIM, err) ||
            diag_fold_batch(&dr->arr[0], "bias", 3, false, false, &dr->batch, err))
            return -1;
        if (dr->arr[0].dim[1] != dr->arr[0].dim[2])
            return api_fail(err, API_E_INVALID_SHAPE, "bias",
                            "bias must be [heads][tokens][tokens], not [%zu][%zu][%zu]",
                            dr->arr[0].dim[0], dr->arr[0].dim[1], dr->arr[0].dim[2]);
        break;
    case DX_SLOPES:
        if (read_array(dr, 0, "slopes", NULL, 1, 1, err))
            return -1;
        break;
    case DX_QKV: {
        static const char *const qkv[] = {"q", "k", "v"};
        for (size_t i = 0; i < DX_ARRAYS; i++)
            if (jf_get(rq->doc.root, qkv[i]) &&
                (read_array(dr, i, qkv[i], NULL, 2, dr->bhtd ? 4 : 3, err) ||
                 (dr->bhtd &&
                  diag_fold_batch(&dr->arr[i], qkv[i], 3, true, true, &dr->batch, err))))
                return -1;
        return 0;
    }
    }
    const tensor *main = &dr->arr[0];
    size_t heads = dr->kind == DX_BIAS || dr->kind == DX_SLOPES ? main->dim[0] : 0;
    if (heads > svc->limits.max_heads)
        return api_fail(err, API_E_TOO_LARGE, dr->names[0], "%zu heads exceed the limit of %zu",
                        heads, svc->limits.max_heads);
    /* slopes have no token axis: one position (0) stands in for the claim */
    *tokens = dr->kind == DX_SLOPES ? 1 : dr->kind == DX_BIAS ? main->dim[1] : main->dim[0];
    if (dr->kind != DX_QKV && *tokens % dr->batch) /* rows of two arrays stacked differently */
        return api_fail(err, API_E_INVALID_SHAPE, dr->names[0],
                        "the subject's arrays have different batch rows");
    *tokens /= dr->kind == DX_QKV ? 1 : dr->batch;
    *d = dr->kind == DX_BIAS || dr->kind == DX_SLOPES ? 0 : main->dim[1];
    if (*d > svc->limits.max_dim)
        return api_fail(err, API_E_TOO_LARGE, dr->names[0], "d = %zu exceeds the limit of %zu", *d,
                        svc->limits.max_dim);
    return 0;
}

/* rope2d's grid h and w (checked by the claim's decoding), for best. */
static int read_grid_size(diag_request *dr, api_error *err)
{
    const json_doc *doc = &dr->rq.doc;
    const json_t *grid = jf_get(doc->root, RF(grid));
    bool present;

    return grid && (api_json(err, jf_int(doc, grid, RF(grid), "h", 1, INT32_MAX, &present,
                                         &dr->grid_h, &err->json)) ||
                    api_json(err, jf_int(doc, grid, RF(grid), "w", 1, INT32_MAX, &present,
                                         &dr->grid_w, &err->json)))
               ? -1
               : 0;
}

/* An inline model's text, for best (the doc is freed after decoding). */
static int keep_inline_model(diag_request *dr)
{
    strbuf sb = {0};
    json_t *m = json_object_get(dr->rq.doc.root, "model");

    if (!json_is_object(m))
        return 0;
    diag_write_json(&sb, &dr->rq.doc, m);
    strbuf_putc(&sb, '\0');
    dr->model_json = strbuf_detach(&sb, NULL);
    return dr->model_json ? 0 : -1;
}

int diag_decode(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                diag_request *dr, api_error *err)
{
    size_t tokens = 0, d = 0;
    int rc;

    memset(dr, 0, sizeof *dr);
    dr->batch = 1;
    /* a q/k/v subject projects with a model: the default one unless named */
    rc = request_open(svc, budget, body, len, RF_DIAGNOSE, false, &dr->rq, err) ||
         subject_kind(dr->rq.doc.root, &dr->kind, err) || read_tolerance(dr, err) ||
         read_axes(dr, err);
    if (!rc && dr->kind == DX_QKV) {
        if (!dr->rq.model)
            dr->rq.model = service_find_model(svc, "default");
        if (!dr->rq.model)
            dr->rq.model = svc->models[0];
        rc = read_subject(svc, dr, &tokens, &d, err) || request_open_input(svc, &dr->rq, err) ||
             positions_nd_other_rule(&dr->rq, &dr->other_rule3, &dr->other_rule, err);
    } else if (!rc) {
        rc = read_subject(svc, dr, &tokens, &d, err) ||
             request_open_claim(svc, &dr->rq, dr->batch, tokens, d, err) ||
             positions_nd_other_rule(&dr->rq, &dr->other_rule3, &dr->other_rule, err);
        rc = rc || read_grid_size(dr, err);
        /* the search reads the batch's rows as one list of batch*tokens */
        dr->rq.tokens *= dr->batch;
        dr->rq.batch = 1;
        dr->rq.batched = false;
    }
    /* A mask (or causal) gives the claim its positions, as on /encode and
     * /apply. A bias subject is compared value by value against the
     * unmasked formula, so masked keys (-3.4e38) would only hide it:
     * refused, with what to send instead. */
    if (!rc && (dr->kind == DX_BIAS || dr->kind == DX_SLOPES) && dr->rq.causal)
        rc = api_fail(err, API_E_INVALID_REQUEST, "causal",
                      "a bias subject is diagnosed unmasked: send the bias before masking, "
                      "without causal");
    if (rc && dr->rq.refused) /* the budget's answer (503 or 422), not the reader's */
        *err = dr->rq.refusal;
    if (!rc && dr->rq.owned_model && keep_inline_model(dr))
        rc = api_fail_oom(err);
    json_doc_free(&dr->rq.doc);
    return rc ? -1 : 0;
}

void diag_request_free(diag_request *dr)
{
    if (!dr)
        return;
    request_free(&dr->rq);
    free(dr->model_json);
    free(dr->other_rule3);
    for (size_t i = 0; i < DX_ARRAYS; i++)
        tensor_free(&dr->arr[i]);
    memset(dr, 0, sizeof *dr);
}

void diag_claim_of_rope(const rope_plan *rope, pe_dx_variant *claim)
{
    pe_dx_variant_init(claim);
    claim->rope = rope->rope;
    claim->rope.cache = NULL; /* the search computes its own angles */
    claim->rope.cache_rows = 0;
    claim->frequency_dim = claim->rope.rotary_dim;
}

int diag_claim(const api_service *svc, const diag_request *dr, size_t width, size_t fixed_head_dim,
               pe_dx_variant *claim, rope_plan *rope, api_error *err)
{
    const request *rq = &dr->rq;
    const scheme *s = &rq->scheme;

    pe_dx_variant_init(claim);
    switch (s->kind) {
    case SCHEME_SINUSOIDAL:
        claim->base = s->base;
        claim->sin_layout = s->sin_layout;
        claim->embed_scale = rq->embed_scale;
        return 0;
    case SCHEME_ROPE:
        if (s->rope_proportional) /* its variants are not searched: never ignored silently */
            return api_fail(err, API_E_INVALID_REQUEST, "params.rope_type",
                            "/diagnose does not diagnose proportional rope claims");
        if (rope_plan_init(svc, rq, width, fixed_head_dim, rope, err))
            return -1;
        diag_claim_of_rope(rope, claim);
        claim->mrope = s->mrope; /* positions3: set by a search in more than 1-D */
        return 0;
    case SCHEME_ROPE2D:
        if (dr->kind != DX_ENCODED)
            return api_fail(err, API_E_INVALID_REQUEST, RF(scheme),
                            "/diagnose reads rope2d claims on embeddings + encoded");
        if (rope2d_plan(rq, &claim->rope2d, err))
            return -1;
        claim->coords = rq->positions_nd;
        return 0;
    case SCHEME_ALIBI:
        if (s->alibi_rounding.bf16 || s->alibi_rounding.divisor) /* never ignored silently */
            return api_fail(err, API_E_INVALID_REQUEST,
                            s->alibi_rounding.bf16 ? "params.bf16" : "params.bias_divisor",
                            "/diagnose compares alibi claims without Falcon's rounding: "
                            "params.bf16 and params.bias_divisor are not diagnosed");
        claim->alibi_form = s->alibi_form;
        return 0;
    case SCHEME_T5: {
        bias_plan bias;
        if (relative_plan(svc, rq, 0, &bias, err))
            return -1;
        claim->t5 = bias.t5;
        return 0;
    }
    default:
        return api_fail(err, API_E_INVALID_REQUEST, "scheme",
                        "/diagnose checks sinusoidal, rope, rope2d, alibi and t5 claims; scheme %s "
                        "is "
                        "not diagnosed",
                        scheme_names[s->kind]);
    }
}

size_t diag_sent_index(const diag_request *dr, size_t flat, size_t *index)
{
    const size_t *d = dr->sent_dim;
    if (dr->bhtd && dr->kind == DX_ENCODED &&
        dr->sent_ndim == 4) { /* folded [b*t][h*hd] of sent [b][h][t][hd] */
        size_t width = d[1] * d[3], row = flat / width, c = flat % width;
        index[0] = row / d[2];
        index[1] = c / d[3];
        index[2] = row % d[2];
        index[3] = c % d[3];
        return 4;
    }
    /* stacked rows keep the memory order; a row read once is row 0 */
    diag_unflatten(flat, dr->sent_ndim, d, index);
    return dr->sent_ndim;
}

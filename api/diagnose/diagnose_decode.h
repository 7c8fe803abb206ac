/*
 * diagnose_decode.h - a decoded POST /diagnose request (diagnose_decode.c): the body ->
 * one subject + the claim it is compared with, and that claim as
 * pe_diagnose reads it. The numeric search is lib/diagnose/pe_diagnose.h.
 */
#ifndef DIAGNOSE_DECODE_H
#define DIAGNOSE_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "diagnose/pe_diagnose.h"
#include "relative.h"
#include "request.h"

/* The subject kinds of the contract's table. */
typedef enum diag_kind {
    DX_TABLE = 0, /* table */
    DX_ENCODED,   /* embeddings + encoded */
    DX_CACHE,     /* cos + sin */
    DX_BIAS,      /* bias */
    DX_SLOPES,    /* slopes */
    DX_QKV        /* q, k, v (any non-empty set) with token_ids or embeddings */
} diag_kind;

/* Which array of a subject: q, k, v for DX_QKV; cos, sin for DX_CACHE;
 * else the one array in slot 0. */
enum { DX_ARRAYS = 3 };

/* A decoded /diagnose request. */
typedef struct diag_request {
    request rq; /* owned: the claim (scheme, params, model,
                                   positions, embed_scale, encoding); rq.x
                                   holds embeddings when given */
    diag_kind kind;
    tensor arr[DX_ARRAYS];        /* owned: the subject's arrays */
    const char *names[DX_ARRAYS]; /* static: their contract names, NULL if absent */
    pe_dx_tolerance tol;
    bool return_map;
    bool bhtd;              /* axes "bhtd": [batch][heads][tokens][head_dim] */
    size_t batch;           /* rows stacked on the token axis (rq.tokens counts them all) */
    char *model_json;       /* owned: an inline model's JSON text (best carries it) */
    int64_t *other_rule3;   /* owned: with mm_layout, [rows][3] under the
                               other mm_rule (NULL without a layout) */
    const char *other_rule; /* static: its name */
    int64_t grid_h, grid_w; /* rope2d's grid as sent (0: none), for best */
    size_t sent_ndim;       /* the first array's shape as sent, */
    size_t sent_dim[TENSOR_MAX_NDIM]; /* before its batch axes were folded */
} diag_request;

/* Decode the body: exactly one subject, its arrays, the claim. On failure
 * *err says why; diag_request_free(dr) is due either way. */
int diag_decode(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                diag_request *dr, api_error *err);
void diag_request_free(diag_request *dr);

/* The claim as pe_diagnose reads it, for a rope claim of `width` columns
 * (fixed_head_dim: the model's for q/k/v, else 0). *rope is filled for a
 * rope claim (the caller frees it with rope_plan_free). */
int diag_claim(const api_service *svc, const diag_request *dr, size_t width, size_t fixed_head_dim,
               pe_dx_variant *claim, rope_plan *rope, api_error *err);

/* The index, in the first array as sent (dr->sent_dim, every axis), of
 * flat index `flat` of its folded form; returns the number of axes. */
size_t diag_sent_index(const diag_request *dr, size_t flat, size_t *index);

/* A rope claim as pe_diagnose reads it, from a planned rope. */
void diag_claim_of_rope(const rope_plan *rope, pe_dx_variant *claim);

#endif /* DIAGNOSE_DECODE_H */

/*
 * diagnose.h - the pieces of POST /diagnose (api_diagnose in api.h):
 *
 *   diagnose_decode.c  the body -> a subject + a claim (diag_request)
 *   diagnose_write.c   the answer's JSON: errors, findings, params, best
 *   diagnose_qkv.c     q/k/v subjects: /apply's forward pass (forward.h),
 *                      compared; q and k diagnosed from its pre-rotation outputs
 *   diagnose.c         the endpoint: plan, pe_diagnose, answer
 *
 * The numeric search is lib/pe_diagnose.h; nothing here searches.
 */
#ifndef DIAGNOSE_H
#define DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "pe_diagnose.h"
#include "relative.h"
#include "request.h"
#include "json/strbuf.h"

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

/* A rope claim as pe_diagnose reads it, from a planned rope. */
void diag_claim_of_rope(const rope_plan *rope, pe_dx_variant *claim);

/* A learned claim (table or embeddings + encoded subject) answered into
 * *sb: the model's table is compared as is and at small position offsets
 * (diagnose_learned.c; pe_diagnose has no learned claims). */
int diag_diagnose_learned(const api_service *svc, const diag_request *dr, strbuf *sb,
                          api_error *err);

/* ---- writing (diagnose_write.c) -------------------------------------- */

/* A double as JSON: the shortest of %.15g / %.17g that reads back, null
 * when not finite. */
void diag_put_double(strbuf *sb, double x);

/* A value measured on float32 data (errors, got/want, slopes) as the
 * shortest float32 text; null when not finite. */
void diag_put_float(strbuf *sb, double x);

/* params of a variant as the contract's `params` object of its scheme. */
void diag_write_params(strbuf *sb, scheme_kind kind, const pe_dx_variant *v, size_t heads);

/* "claimed":{...}. worst_array names the array the worst value is in (NULL
 * for a one-array subject); index/ndim its index in that array. */
void diag_write_claimed(strbuf *sb, scheme_kind kind, const pe_dx_variant *claim, size_t heads,
                        const pe_dx_errors *e, const char *worst_array, const size_t *index,
                        size_t ndim);

/* One finding of a result, with its evidence (read off r->best), as a JSON
 * object; heads: the subject's (alibi slopes); prefix (may be "") goes
 * before the message. */
void diag_write_finding(strbuf *sb, const pe_dx_result *r, size_t i, scheme_kind kind, size_t heads,
                        const char *prefix);

/* The position fields of `best` ("offset" or "positions") for the claim's
 * positions shifted by `shift`. */
void diag_write_best_positions(strbuf *sb, const int64_t *positions, size_t n, int64_t shift);

/* The flat index of a subject of ndim dims unflattened into index[]. */
void diag_unflatten(size_t flat, size_t ndim, const size_t *dim, size_t *index);

/* An explained verdict whose best does not reproduce the subject finitely
 * (huge finite subjects can drive the lib's fitted factor to overflow)
 * becomes unexplained: `best` must reproduce what it explains. */
void diag_require_finite_best(pe_dx_result *r);

/* got[n] against want[n] as pe_dx_errors (the lib's measure;
 * diagnose_compare.c, as diag_require_finite_best). */
pe_dx_errors diag_compare(const float *got, const float *want, size_t n, pe_dx_tolerance tol);

/* ---- q/k/v (diagnose_qkv.c) ------------------------------------------ */

/* Answer a DX_QKV request into *sb (a complete JSON object). */
int diag_diagnose_qkv(const api_service *svc, diag_request *dr, strbuf *sb, api_error *err);

#endif /* DIAGNOSE_H */

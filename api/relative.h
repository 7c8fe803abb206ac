/*
 * relative.h - the position-dependent pieces both endpoints compute from a
 * decoded request: the absolute table, the RoPE set-up and the ALiBi / T5
 * bias tensors.
 */
#ifndef RELATIVE_H
#define RELATIVE_H

#include <stddef.h>

#include "api_error.h"
#include "posenc.h"
#include "request.h"

/* The absolute encoding a request adds: sinusoidal or learned (checking
 * that the model holds a table of the right width), PE_ABS_NONE for the
 * other schemes. */
int absolute_plan(const api_service *svc, const request *rq, pe_absolute *pe,
                  api_error *err);

/* Turn a failed pe_encode_absolute() into the contract's error. */
int absolute_fail(const request *rq, const pe_absolute *pe, pe_status st,
                  size_t bad, const char *what, api_error *err);

/* A RoPE ready to apply: configuration, frequencies, attention factor. */
typedef struct rope_plan {
    pe_rope rope;
    double *inv_freq; /* owned, [rotary_dim/2] */
    double attention_factor;
} rope_plan;

/* Resolve head_dim and rotary_dim for a width (the embeddings' d for
 * /encode, heads*head_dim for /apply) and compute the frequencies.
 * fixed_head_dim is the model's head size for /apply (params.head_dim must
 * then agree), or 0 for /encode. The cos/sin of the first positions come
 * from the service's shared tables when they fit. */
int rope_plan_init(const api_service *svc, const request *rq, size_t width,
                   size_t fixed_head_dim, rope_plan *plan, api_error *err);
void rope_plan_free(rope_plan *plan);

/* The alibi or t5 bias of the request: bias [batch][heads][t][t] (one block
 * per batch row). fixed_heads is the model's head count for /apply (params
 * must agree), 0 for /encode. *heads_out receives the head count. The
 * caller frees *bias_out. */
int relative_bias(const api_service *svc, const request *rq,
                  size_t fixed_heads, float **bias_out, size_t *heads_out,
                  api_error *err);

#endif /* RELATIVE_H */

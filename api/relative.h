/*
 * relative.h - the position-dependent pieces both endpoints compute from a
 * decoded request: the absolute table, the RoPE set-up and the ALiBi / T5
 * bias tensors.
 */
#ifndef RELATIVE_H
#define RELATIVE_H

#include <float.h>
#include <stddef.h>

#include "api_error.h"
#include "posenc.h"
#include "request.h"

/* The absolute encoding a request adds: sinusoidal or learned (checking
 * that the model holds a table of the right width), PE_ABS_NONE for the
 * other schemes. */
int absolute_plan(const api_service *svc, const request *rq, pe_absolute *pe, api_error *err);

/* Turn a failed pe_encode_absolute() into the contract's error. */
int absolute_fail(const request *rq, const pe_absolute *pe, pe_status st, size_t bad,
                  const char *what, api_error *err);

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
int rope_plan_init(const api_service *svc, const request *rq, size_t width, size_t fixed_head_dim,
                   rope_plan *plan, api_error *err);
void rope_plan_free(rope_plan *plan);

/* The contract: a t5 request needs the model's t5_bias table, whatever it
 * asks to see (t5 changes scores, not q/k/v): the one place of the rule. */
int t5_table_check(const request *rq, api_error *err);

/* The alibi or t5 bias of a request, planned: every check and its size. */
typedef struct bias_plan {
    scheme_kind kind; /* SCHEME_ALIBI or SCHEME_T5 */
    size_t heads;
    size_t per_row, total; /* floats per batch row ([heads][t][t]) and in all */
    pe_alibi_form alibi_form;
    pe_alibi_rounding alibi_rounding;
    pe_t5 t5; /* its table borrowed from the model */
} bias_plan;

/* Check the request's alibi or t5 settings and the bias size: fixed_heads
 * is the model's head count for /apply (params must agree), 0 for /encode.
 * Nothing is allocated. */
int relative_plan(const api_service *svc, const request *rq, size_t fixed_heads, bias_plan *plan,
                  api_error *err);

/* Write the planned bias [batch][heads][t][t] into bias (plan->total
 * floats). Cannot fail. */
void relative_fill(const request *rq, const bias_plan *plan, float *bias);

/* What Hugging Face adds for a key a query may not see (float32's lowest,
 * torch.finfo(torch.float32).min): the value such a key gets in bias and
 * scores instead of its own. */
#define RELATIVE_MASKED_KEY (-FLT_MAX) /* -3.4028235e38 */

/* Every key a query may not see (attention_mask 0, or after the query when
 * causal: request_key_visible) gets RELATIVE_MASKED_KEY in values
 * [batch][heads][t][t]. Nothing changes without a mask and causal. */
void relative_mask_keys(const request *rq, size_t heads, float *values);

#endif /* RELATIVE_H */

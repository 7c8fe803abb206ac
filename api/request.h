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

#include "answer.h"
#include "api_error.h"
#include "models/model.h"
#include "models/scheme.h"
#include "request_fields.h"
#include "service.h"
#include "json/json_doc.h"
#include "json/tensor.h"

/* The arrays /apply can return, in the contract's names (output_names). */
typedef enum output_id {
    OUT_Q,
    OUT_K,
    OUT_V,
    OUT_ENCODED,
    OUT_BIAS,
    OUT_SCORES,
    OUT_GATE, /* gated attention's gate, before the sigmoid (a gated model only) */
    OUT_COUNT
} output_id;
extern const char *const output_names[]; /* NULL-terminated, by output_id */

/* The `return` list of /apply, deduplicated, in the order given. */
typedef struct request_outputs {
    output_id order[OUT_COUNT];
    size_t count;
    bool wanted[OUT_COUNT];
} request_outputs;

typedef enum request_endpoint { REQUEST_ENCODE, REQUEST_APPLY } request_endpoint;

typedef struct request {
    json_doc doc;       /* owned: the parsed body, during request_decode only */
    const model *model; /* borrowed (service) or == owned_model; may be NULL */
    model *owned_model; /* an inline model */
    scheme scheme;      /* owns its arrays */
    tensor x;           /* embeddings, owned; x.data NULL when absent */
    bool batched;
    size_t batch, tokens, d;
    int64_t *positions;    /* owned, [batch * tokens]; with positions_nd,
                              each token's first component */
    int64_t *positions_nd; /* owned, [batch * tokens][nd]: the [t, h, w]
                              of a multimodal rope (nd 3) or the [row, col]
                              of rope2d (nd 2); NULL for 1-D positions */
    size_t nd;
    bool echo_positions;   /* mm_layout: the answer carries the positions */
    const char *pos_field; /* "offset", "positions", "attention_mask" or
                              "token_ids", for messages */
    uint8_t *mask;         /* owned, [batch * tokens] of 0/1; NULL without
                              attention_mask */
    bool causal;           /* keys after the query are masked in bias/scores */
    int64_t *token_ids;    /* owned, [batch * tokens]: kept only when the
                              model derives positions from them */
    int64_t max_position;
    double embed_scale;
    bool base64;
    request_outputs outputs; /* /apply's `return` */
    /* The memory budget (NULL: none) and what decoding holds of it: the
     * numeric arrays' values are charged by the codec while it scans, before
     * it allocates them (limit decode-charge); request_reserve turns it into the
     * request's whole reservation. */
    const api_budget *budget;
    reservation decoded;
    api_error refusal; /* why the codec's charge was refused */
    bool refused;      /* it was: the request's error is refusal, whatever
                          reader met it (a numeric array, a base64 string) */
} request;

/* Decode the body of /encode or /apply into *rq, once: every field the
 * endpoint reads becomes a typed member (the input moved out of the body's
 * parse, not copied), and no JSON is left when it returns. On failure *err
 * says why; request_free(rq) is due either way. */
int request_decode(const api_service *svc, const api_budget *budget, request_endpoint which,
                   const char *body, size_t len, request *rq, api_error *err);

/* /diagnose decodes its subject itself, between these steps, while the
 * body's parse (rq->doc) is alive; it frees the parse with json_doc_free
 * when done. request_open parses the body (the fields of `endpoint`, one
 * RF_ bit of request_fields.h) and resolves `model` (absent: the default
 * model when default_model, else none). Then request_open_input reads the
 * input exactly as /apply does (embeddings or token_ids, scheme,
 * embed_scale, encoding, positions, mask) for a q/k/v subject, or
 * request_open_claim reads the same claim for a subject of `batch` rows of
 * `tokens` tokens of width d that has no input (positions and
 * attention_mask [tokens] or [batch][tokens]). request_free(rq) is due
 * either way. */
int request_open(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                 unsigned endpoint, bool default_model, request *rq, api_error *err);
int request_open_input(const api_service *svc, request *rq, api_error *err);
int request_open_claim(const api_service *svc, request *rq, size_t batch, size_t tokens, size_t d,
                       api_error *err);

void request_free(request *rq);

/* One row's positions from its attention mask (tokens 0/1 values), the
 * way `rule`'s Hugging Face forward pass derives them (model.h): HF's own
 * numbers, before the model's table_offset (OPT's masked tokens are -1
 * here, row 1 of its table once offset). The MODEL_POSITIONS_PAD_IDS rule
 * does not read a mask: see request_positions_from_ids. Also for
 * /diagnose's claim. */
void request_positions_from_mask(model_position_rule rule, const uint8_t *mask, size_t tokens,
                                 int64_t *positions);

/* RoBERTa's create_position_ids_from_input_ids for one row:
 * cumsum(ids != pad) * (ids != pad) + pad; with ids NULL (embeddings in),
 * create_position_ids_from_inputs_embeds: pad + 1 .. pad + tokens. */
void request_positions_from_ids(const int64_t *ids, size_t tokens, int64_t pad, int64_t *positions);

/* Whether query slot i of a row may see key slot j (mask NULL: every key
 * is real). Causal masking follows the slot order, whatever the positions
 * (contract 1.2: Hugging Face's causal mask compares slot indices). */
static inline bool request_key_visible(const uint8_t *mask, bool causal, size_t i, size_t j)
{
    return (!mask || mask[j]) && (!causal || j <= i);
}

/* Bytes the decoded request holds (input and positions), for the budget. */
size_t request_held_bytes(const request *rq);

/* Reserve the request's whole share of its budget, `bytes` (which counts
 * the decoded input again), in place of what decoding holds: 0, or -1 with
 * *err as reservation_take words it. *held is then due a release. */
int request_reserve(request *rq, size_t bytes, reservation *held, api_error *err);

/* ---- positions in more than one dimension (defined in positions_nd.c) --- */

/* Whether request_decode's positions go through positions_nd_fill: the
 * scheme is rope2d, or has mrope and positions are given, or the body has
 * mm_layout (merge, mm_rule), grid, positions_shape, base64 positions or
 * positions (the body's, or NULL) that are not plain integer lists. Otherwise the 1-D reader
 * fills rq->positions (and positions_nd_expand makes them triples). */
bool positions_nd_wanted(const request *rq, const json_t *positions);

/* Fill rq->positions (rows, allocated by the caller) and, for mrope and
 * rope2d, rq->positions_nd (new) with rq->nd, from positions, mm_layout
 * (over the kept slots of rq->mask, already decoded) or grid. Without
 * mrope a triple must have t == h == w (else 422 naming it): the
 * positions are then 1-D. */
int positions_nd_fill(request *rq, api_error *err);

/* With params.mrope and 1-D positions (offset, attention_mask): each
 * position p as the triple [p, p, p] in rq->positions_nd (new). */
int positions_nd_expand(request *rq, api_error *err);

/* With mm_layout and params.mrope: the positions ([rows][3], new, into
 * *out) the layout gives under the other mm_rule, and its name (static);
 * *out NULL without a layout. For /diagnose, while rq->doc is alive. */
int positions_nd_other_rule(request *rq, int64_t **out, const char **rule, api_error *err);

/* The largest component of rq->positions_nd (0 when NULL). */
int64_t positions_nd_max(const request *rq);

/* Rows of the flattened input: batch * tokens. */
static inline size_t request_rows(const request *rq)
{
    return rq->batch * rq->tokens;
}

/* -1 with 422 too_large when an output of n elements passes the limit. */
int request_check_output(const api_service *svc, size_t n, const char *what, api_error *err);

#endif /* REQUEST_H */

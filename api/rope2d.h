/*
 * rope2d.h - /encode's scheme rope2d (contract 1.3, "2-D RoPE of vision
 * encoders"): the configuration a request asks for, checked before any
 * arithmetic. Positions are rq->positions_nd ([row, col] pairs,
 * positions_nd.h).
 */
#ifndef API_ROPE2D_H
#define API_ROPE2D_H

#include "api_error.h"
#include "posenc.h"
#include "request.h"

/* The variant, base and head size (params.head_dim, default the whole
 * vector) of rq's rope2d: 0, or -1 with a 422 naming params.head_dim when
 * it is not a multiple of 4 that divides d. */
int rope2d_plan(const request *rq, pe_rope2d *out, api_error *err);

#endif /* API_ROPE2D_H */

/*
 * positions_nd.h - positions in more than one dimension (contract 1.3):
 * the [t, h, w] triples of a multimodal rope (params.mrope), from
 * `positions` (entries an integer p = [p, p, p] or a triple; JSON or
 * base64 with positions_shape), an offset, an attention_mask or an
 * mm_layout; and the [row, col] pairs of rope2d (from positions or grid).
 * Also base64 positions of any scheme.
 */
#ifndef POSITIONS_ND_H
#define POSITIONS_ND_H

#include <stdbool.h>

#include "api_error.h"
#include "request.h"
#include "json/strbuf.h"

/* Whether request_decode's positions go through positions_nd_fill: the
 * scheme is rope2d, or has mrope and positions are given, or the body has
 * mm_layout (merge, mm_rule), grid, positions_shape, base64 positions or
 * positions that are not plain integer lists. Otherwise the 1-D reader
 * fills rq->positions (and positions_nd_expand makes them triples). */
bool positions_nd_wanted(const request *rq);

/* Fill rq->positions (rows, allocated by the caller) and, for mrope and
 * rope2d, rq->positions_nd (new) with rq->nd, from positions, mm_layout
 * (over the kept slots of rq->mask, already decoded) or grid. Without
 * mrope a triple must have t == h == w (else 422 naming it): the
 * positions are then 1-D. */
int positions_nd_fill(request *rq, api_error *err);

/* With params.mrope and 1-D positions (offset, attention_mask): each
 * position p as the triple [p, p, p] in rq->positions_nd (new). */
int positions_nd_expand(request *rq, api_error *err);

/* The largest component of rq->positions_nd (0 when NULL). */
int64_t positions_nd_max(const request *rq);

/* The answer's `"positions"` member (with its leading comma) when the
 * request had mm_layout: [tokens][3] integers, [batch][tokens][3] for a
 * batched input (the rows differ when a mask pads them). Nothing else. */
void positions_nd_write(strbuf *sb, const request *rq);

#endif /* POSITIONS_ND_H */

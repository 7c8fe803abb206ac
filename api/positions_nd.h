/*
 * positions_nd.h - positions in more than one dimension (contract 1.3):
 * the [t, h, w] triples of a multimodal rope (params.mrope), from
 * `positions` (entries an integer p = [p, p, p] or a triple; JSON or
 * base64 with positions_shape), an offset, an attention_mask or an
 * mm_layout; and the [row, col] pairs of rope2d (from positions or grid).
 * Also base64 positions of any scheme. Decoding them is part of
 * request_decode (request.h declares the steps, positions_nd.c defines
 * them); this header gives what endpoints write of them.
 */
#ifndef POSITIONS_ND_H
#define POSITIONS_ND_H

#include <stdbool.h>

#include "api_error.h"
#include "request.h"
#include "json/strbuf.h"

/* The answer's `"positions"` member (with its leading comma) when the
 * request had mm_layout: [tokens][3] integers, the one row every batch row
 * has; [batch][tokens][3] when the rows differ (a mask pads them
 * differently). Nothing else. */
void positions_nd_write(strbuf *sb, const request *rq);

#endif /* POSITIONS_ND_H */

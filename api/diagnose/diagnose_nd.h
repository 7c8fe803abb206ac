/*
 * diagnose_nd.h - what /diagnose writes of claims in more than one
 * dimension (contract 1.3): multimodal rope with vision triples or an
 * mm_layout, and vision 2-D rope. The search is pe_diagnose_nd
 * (lib/diagnose/pe_diagnose.h); the rest of the answer is diagnose.c's.
 */
#ifndef DIAGNOSE_ND_H
#define DIAGNOSE_ND_H

#include <stdbool.h>

#include "diagnose_decode.h"
#include "diagnose_write.h"
#include "json/strbuf.h"

/* Whether the claim goes to pe_diagnose_nd: scheme rope2d, or params.mrope
 * with mm_layout or a token whose t, h and w differ (text triples are 1-D
 * rope, bit for bit, and take the 1-D search). */
bool diag_nd_claim(const diag_request *dr);

/* best's positions ("positions": triples or [row, col] pairs, per row when
 * the batch rows differ; "grid" for Llama 4's class token; 1-D for a
 * variant that turns every token as text), for a pe_diagnose_nd result of
 * `batch` rows of `tokens`. */
void diag_write_nd_positions(strbuf *sb, const diag_request *dr, const pe_dx_result *r,
                             size_t batch, size_t tokens);

/* Whether finding i of a pe_diagnose_nd result has evidence of its own
 * (mrope_mismatch, rope2d_variant, a rope2d base_mismatch, the other
 * mm_rule's positions_mismatch): then diag_write_nd_finding writes it. */
bool diag_nd_finding(const diag_request *dr, const pe_dx_result *r, size_t i);
void diag_write_nd_finding(strbuf *sb, const diag_request *dr, const pe_dx_result *r, size_t i,
                           size_t batch, size_t tokens, const char *prefix, const diag_rows *rows);

#endif /* DIAGNOSE_ND_H */

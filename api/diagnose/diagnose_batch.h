/*
 * diagnose_batch.h - leading batch axes of a /diagnose subject (diagnose_batch.c):
 * folded onto the token axis, and best's positions written per row.
 */
#ifndef DIAGNOSE_BATCH_H
#define DIAGNOSE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api_error.h"
#include "diagnose/pe_diagnose.h"
#include "diagnose_write.h"
#include "json/strbuf.h"
#include "json/tensor.h"

/* t ([..., inner axes]) folded to `inner` axes (diagnose_batch.c); bhtd:
 * t is [b][h][t][hd], read as [b][t][h*hd] first. Equal batch rows fold
 * to one (*batch 1) unless per_row (the claim's positions or mask are per
 * row); else the rows are stacked on the token axis (*batch rows). A bias
 * (inner 3) with rows that differ is refused (422 naming `name`). */
int diag_fold_batch(tensor *t, const char *name, size_t inner, bool bhtd, bool per_row,
                    size_t *batch, api_error *err);

/* An array read with axes "bhtd" ([b][t][h*hd] after diag_fold_batch)
 * given back in the axes it was sent in, [b][h][t][hd]: new (the caller
 * frees) or NULL. */
float *diag_heads_first(const float *in, size_t b, size_t t, size_t h, size_t hd);

/* Whether t's batch rows (the axes before its last `inner`; bhtd: its
 * first axis) are not all equal: then every array of the subject is read
 * row by row (diag_fold_batch's per_row), so that two arrays of one
 * subject fold alike. */
bool diag_batch_rows_differ(const tensor *t, size_t inner, bool bhtd);

/* best's positions for `batch` rows of `tokens` (positions shifted by
 * shift): as one row when every row is the same, else [batch][tokens]
 * (diagnose_batch.c). */
void diag_write_batch_positions(strbuf *sb, const int64_t *positions, size_t batch, size_t tokens,
                                int64_t shift);

/* For a subject of `batch` rows stacked on the token axis (batch > 1),
 * the rows in which the claim's prediction differs from the subject beyond
 * tol: rows->differs (new, the caller frees it) and, as a JSON array, json
 * (NUL-terminated; rows->json points into it: evidence.rows, the rows the
 * findings concern); both stay empty for batch 1. -1 when out of memory. */
int diag_rows_differing(const pe_dx_subject *subj, const pe_dx_variant *claim, size_t batch,
                        pe_dx_tolerance tol, diag_rows *rows, strbuf *json);

#endif /* DIAGNOSE_BATCH_H */

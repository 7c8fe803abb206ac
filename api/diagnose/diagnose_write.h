/*
 * diagnose_write.h - the JSON of a /diagnose answer (diagnose_write.c): numbers,
 * params, the claimed errors, findings, best's positions.
 */
#ifndef DIAGNOSE_WRITE_H
#define DIAGNOSE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diagnose/pe_diagnose.h"
#include "json/strbuf.h"
#include "models/scheme.h"
#include "request.h"

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

/* The batch rows of a subject stacked on its token axis that the claim
 * gets wrong (diagnose_batch.c fills it): evidence.rows, and the rows of
 * positions_mismatch's evidence.positions. */
typedef struct diag_rows {
    size_t batch, tokens;   /* batch rows of `tokens` each */
    const int64_t *claimed; /* borrowed: the claim's [batch*tokens] positions */
    bool *differs;          /* owned: [batch], the rows named */
    const char *json;       /* borrowed: differs as a JSON array */
} diag_rows;

/* A finding's opening: {"code":..,"message": prefix + message,"evidence":
 * (the caller writes the evidence and closes the object). */
void diag_write_finding_head(strbuf *sb, const pe_dx_finding *f, const char *prefix);

/* One finding of a result, with its evidence (read off r->best), as a JSON
 * object; heads: the subject's (alibi slopes); prefix (may be "") goes
 * before the message; rows (NULL: one row) gives evidence.rows and
 * positions_mismatch's positions and pattern per row. */
void diag_write_finding(strbuf *sb, const pe_dx_result *r, size_t i, scheme_kind kind, size_t heads,
                        const char *prefix, const diag_rows *rows);

/* The position fields of `best` ("offset" or "positions") for the claim's
 * positions shifted by `shift`. */
void diag_write_best_positions(strbuf *sb, const int64_t *positions, size_t n, int64_t shift);

/* v as JSON text: numeric arrays and long strings taken out of the body
 * (json_doc.h) are written from the body's own text. */
void diag_write_json(strbuf *sb, const json_doc *doc, json_t *v);

/* "model": in best: the loaded model's name, or for an inline model
 * inline_model, its JSON text as the request sent it (diag_write_json). */
void diag_write_best_model(strbuf *sb, const request *rq, const char *inline_model);

/* The flat index of a subject of ndim dims unflattened into index[]. */
void diag_unflatten(size_t flat, size_t ndim, const size_t *dim, size_t *index);

#endif /* DIAGNOSE_WRITE_H */

/*
 * diagnose_nd.c - the parts of a /diagnose answer that claims in more than
 * one dimension have of their own (diagnose_nd.h): best's triples or
 * pairs, and the evidence of mrope_mismatch, rope2d_variant and the other
 * mm_rule.
 */
#include "diagnose_nd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "diagnose_batch.h"

bool diag_nd_claim(const diag_request *dr)
{
    const request *rq = &dr->rq;

    if (rq->scheme.kind == SCHEME_ROPE2D)
        return true;
    if (rq->scheme.kind != SCHEME_ROPE || rq->scheme.mrope.style == PE_MROPE_NONE ||
        !rq->positions_nd || rq->nd != 3)
        return false;
    if (rq->echo_positions) /* from mm_layout */
        return true;
    for (size_t i = 0; i < request_rows(rq); i++) {
        const int64_t *p = rq->positions_nd + 3 * i;
        if (p[1] != p[0] || p[2] != p[0])
            return true;
    }
    return false;
}

/* Whether the batch rows of a [batch][tokens][k] list are all equal. */
static bool rows_alike(const int64_t *v, size_t batch, size_t row)
{
    for (size_t b = 1; b < batch; b++)
        if (memcmp(v + b * row, v, row * sizeof *v) != 0)
            return false;
    return true;
}

/* Row b of a [batch][tokens][k] list of positions; an unturned pair is
 * written [0, 0] (the same angles under every variant but Llama 4's). */
static void put_row(strbuf *sb, const int64_t *v, size_t tokens, size_t k)
{
    strbuf_putc(sb, '[');
    for (size_t t = 0; t < tokens; t++) {
        const int64_t *p = v + t * k;
        strbuf_puts(sb, t ? ",[" : "[");
        for (size_t c = 0; c < k; c++)
            strbuf_printf(sb, "%s%" PRId64, c ? "," : "", p[c] == PE_ROPE2D_UNTURNED ? 0 : p[c]);
        strbuf_putc(sb, ']');
    }
    strbuf_putc(sb, ']');
}

/* [tokens][k], or [batch][tokens][k] when the rows differ; `only` (may be
 * NULL) names the rows written. */
static void put_rows(strbuf *sb, const int64_t *v, size_t batch, size_t tokens, size_t k,
                     const bool *only)
{
    if (!only && rows_alike(v, batch, tokens * k)) {
        put_row(sb, v, tokens, k);
        return;
    }
    strbuf_putc(sb, '[');
    for (size_t b = 0, named = 0; b < batch; b++)
        if (!only || only[b]) {
            strbuf_puts(sb, named++ ? "," : "");
            put_row(sb, v + b * tokens * k, tokens, k);
        }
    strbuf_putc(sb, ']');
}

void diag_write_nd_positions(strbuf *sb, const diag_request *dr, const pe_dx_result *r,
                             size_t batch, size_t tokens)
{
    const pe_dx_variant *b = &r->best;

    if (b->rope2d.head_dim) {
        /* Llama 4's class token has no [row, col]: its grid says it */
        bool unturned = false;
        for (size_t i = 0; i < batch * tokens && b->coords; i++)
            unturned = unturned || b->coords[2 * i] == PE_ROPE2D_UNTURNED;
        if (unturned && b->rope2d.variant == PE_ROPE2D_LLAMA4 && dr->grid_h) {
            strbuf_printf(sb, "\"grid\":{\"h\":%" PRId64 ",\"w\":%" PRId64 "}", dr->grid_h,
                          dr->grid_w);
            return;
        }
        strbuf_puts(sb, "\"positions\":");
        put_rows(sb, b->coords, batch, tokens, 2, NULL);
        return;
    }
    if (b->mrope.style != PE_MROPE_NONE && b->positions3) {
        strbuf_puts(sb, "\"positions\":");
        put_rows(sb, b->positions3, batch, tokens, 3, NULL);
        return;
    }
    diag_write_batch_positions(sb, b->positions ? b->positions : dr->rq.positions, batch, tokens,
                               b->offset);
}

bool diag_nd_finding(const diag_request *dr, const pe_dx_result *r, size_t i)
{
    pe_dx_code code = r->findings[i].code;

    return code == PE_DX_MROPE_MISMATCH || code == PE_DX_ROPE2D_VARIANT ||
           (code == PE_DX_BASE_MISMATCH && dr->rq.scheme.kind == SCHEME_ROPE2D) ||
           (code == PE_DX_POSITIONS_MISMATCH && (r->other_rule || r->triples_found));
}

/* The evidence of one of diag_nd_finding's codes, its own members. */
static void write_own_evidence(strbuf *sb, const diag_request *dr, const pe_dx_result *r,
                               pe_dx_code code, size_t batch, size_t tokens, const diag_rows *rows)
{
    const pe_dx_variant *b = &r->best;
    const bool *only = rows ? rows->differs : NULL;

    switch (code) {
    case PE_DX_MROPE_MISMATCH:
        strbuf_puts(sb, "\"style\":");
        strbuf_put_json_string(sb, b->mrope.style == PE_MROPE_NONE
                                       ? "text"
                                       : scheme_mrope_styles[b->mrope.style - PE_MROPE_CHUNKED]);
        if (b->mrope.style == PE_MROPE_NONE) { /* text: the 1-D positions, per row */
            strbuf_puts(sb, ",\"positions\":[");
            for (size_t row = 0, named = 0; b->positions && row < batch; row++)
                if (!only || only[row]) {
                    strbuf_puts(sb, named++ ? ",[" : "[");
                    for (size_t t = 0; t < tokens; t++)
                        strbuf_printf(sb, "%s%" PRId64, t ? "," : "",
                                      b->positions[row * tokens + t] + b->offset);
                    strbuf_putc(sb, ']');
                }
            strbuf_putc(sb, ']');
        } else {
            strbuf_printf(sb, ",\"section\":[%zu,%zu,%zu]", b->mrope.section[0],
                          b->mrope.section[1], b->mrope.section[2]);
        }
        break;
    case PE_DX_ROPE2D_VARIANT:
        strbuf_puts(sb, "\"variant\":");
        strbuf_put_json_string(sb, scheme_rope2d_variants[b->rope2d.variant]);
        break;
    case PE_DX_BASE_MISMATCH:
        strbuf_puts(sb, "\"base\":");
        diag_put_double(sb, b->rope2d.base);
        break;
    default: /* positions_mismatch: the other mm_rule's triples, or those read */
        strbuf_puts(sb, "\"positions\":[");
        for (size_t row = 0, named = 0; row < batch; row++)
            if (!only || only[row]) {
                strbuf_puts(sb, named++ ? "," : "");
                put_row(sb, b->positions3 + row * tokens * 3, tokens, 3);
            }
        if (!r->other_rule) { /* triples read off the phases */
            strbuf_puts(sb, "],\"pattern\":\"other\"");
            break;
        }
        strbuf_puts(sb, "],\"pattern\":\"mm_rule\",\"mm_rule\":");
        strbuf_put_json_string(sb, dr->other_rule ? dr->other_rule : "");
        break;
    }
}

void diag_write_nd_finding(strbuf *sb, const diag_request *dr, const pe_dx_result *r, size_t i,
                           size_t batch, size_t tokens, const char *prefix, const diag_rows *rows)
{
    const pe_dx_finding *f = &r->findings[i];

    diag_write_finding_head(sb, f, prefix);
    strbuf_putc(sb, '{');
    write_own_evidence(sb, dr, r, f->code, batch, tokens, rows);
    strbuf_puts(sb, ",\"error_before\":");
    diag_put_float(sb, r->claimed.max_abs);
    strbuf_puts(sb, ",\"error_after\":");
    diag_put_float(sb, pe_dx_error_after(r));
    if (r->truncated)
        strbuf_puts(sb, ",\"truncated\":true");
    if (rows) {
        strbuf_puts(sb, ",\"rows\":");
        strbuf_puts(sb, rows->json);
    }
    strbuf_puts(sb, "}}");
}

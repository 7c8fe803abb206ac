/*
 * diagnose_write.c - the JSON of a /diagnose answer: a variant's params,
 * the claim's errors, findings with their evidence, best's positions.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_write.h"
#include "json/float_text.h"

void diag_put_double(strbuf *sb, double x)
{
    char text[40];

    if (!isfinite(x)) { /* never reached: claims are checked finite first */
#ifdef POSENC_NON_FINITE_TEXT_ABORTS
        abort(); /* the fuzzer's build: a non-finite value reached an answer */
#endif
        strbuf_puts(sb, "null");
        return;
    }
    snprintf(text, sizeof text, "%.15g", x);
    if (strtod(text, NULL) != x)
        snprintf(text, sizeof text, "%.17g", x);
    strbuf_puts(sb, text);
}

void diag_put_float(strbuf *sb, double x)
{
    char text[FLOAT_TEXT_MAX];

    if (!isfinite((float)x)) { /* past float32's range: the double's text */
        diag_put_double(sb, x);
        return;
    }
    float_to_text((float)x, text);
    strbuf_puts(sb, text);
}

static void put_key(strbuf *sb, bool *first, const char *key)
{
    strbuf_puts(sb, *first ? "" : ",");
    strbuf_put_json_string(sb, key);
    strbuf_putc(sb, ':');
    *first = false;
}

static void put_number(strbuf *sb, bool *first, const char *key, double x)
{
    put_key(sb, first, key);
    diag_put_double(sb, x);
}

static const char *const scaling_names[] = {"default", "linear", "dynamic",
                                            "yarn",    "llama3", "longrope"};

static void put_list(strbuf *sb, const double *v, size_t n)
{
    strbuf_putc(sb, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            strbuf_putc(sb, ',');
        diag_put_double(sb, v[i]);
    }
    strbuf_putc(sb, ']');
}

/* params.scaling as the request would send it; n = rotary_dim/2 for the
 * longrope lists. */
static void write_scaling(strbuf *sb, const pe_rope_scaling *sc, size_t n)
{
    bool first = true;
    pe_rope_scaling_type t = sc->type;

    strbuf_putc(sb, '{');
    put_key(sb, &first, "type");
    strbuf_put_json_string(sb, scaling_names[t]);
    if (t != PE_ROPE_SCALING_LONGROPE || sc->has_factor)
        put_number(sb, &first, "factor", sc->factor);
    if (t != PE_ROPE_SCALING_LINEAR)
        put_number(sb, &first, "original_max_position_embeddings",
                   sc->original_max_position_embeddings);
    if (t == PE_ROPE_SCALING_YARN) { /* the betas the frequencies used (0: the default) */
        put_number(sb, &first, "beta_fast", sc->beta_fast > 0 ? sc->beta_fast : 32.0);
        put_number(sb, &first, "beta_slow", sc->beta_slow > 0 ? sc->beta_slow : 1.0);
        if (sc->has_mscale)
            put_number(sb, &first, "mscale", sc->mscale);
        if (sc->has_mscale_all_dim)
            put_number(sb, &first, "mscale_all_dim", sc->mscale_all_dim);
        put_key(sb, &first, "truncate");
        strbuf_puts(sb, sc->truncate ? "true" : "false");
    }
    if ((t == PE_ROPE_SCALING_YARN || t == PE_ROPE_SCALING_LONGROPE) && sc->has_attention_factor)
        put_number(sb, &first, "attention_factor", sc->attention_factor);
    if (t == PE_ROPE_SCALING_LLAMA3) {
        put_number(sb, &first, "low_freq_factor", sc->low_freq_factor);
        put_number(sb, &first, "high_freq_factor", sc->high_freq_factor);
    }
    if (t == PE_ROPE_SCALING_LONGROPE && sc->short_factor && sc->long_factor) {
        put_key(sb, &first, "short_factor");
        put_list(sb, sc->short_factor, n);
        put_key(sb, &first, "long_factor");
        put_list(sb, sc->long_factor, n);
    }
    strbuf_putc(sb, '}');
}

void diag_write_params(strbuf *sb, scheme_kind kind, const pe_dx_variant *v, size_t heads)
{
    bool first = true;

    strbuf_putc(sb, '{');
    switch (kind) {
    case SCHEME_SINUSOIDAL:
        put_number(sb, &first, "base", v->base);
        put_key(sb, &first, "layout");
        strbuf_puts(sb, v->sin_layout == PE_SIN_SPLIT ? "\"split\"" : "\"interleaved\"");
        break;
    case SCHEME_ROPE:
        put_number(sb, &first, "base", v->rope.base);
        put_number(sb, &first, "head_dim", (double)v->rope.head_dim);
        put_number(sb, &first, "rotary_dim", (double)v->rope.rotary_dim);
        put_key(sb, &first, "layout");
        strbuf_puts(sb, v->rope.layout == PE_ROPE_INTERLEAVED ? "\"interleaved\"" : "\"half\"");
        if (v->rope.scaling.type != PE_ROPE_SCALING_NONE) {
            put_key(sb, &first, "scaling");
            write_scaling(sb, &v->rope.scaling, v->rope.rotary_dim / 2);
        }
        if (v->mrope.style != PE_MROPE_NONE &&
            pe_mrope_check(&v->mrope, v->rope.rotary_dim / 2) == PE_OK) {
            put_key(sb, &first, "mrope");
            strbuf_printf(sb, "{\"style\":\"%s\",\"section\":[%zu,%zu,%zu]}",
                          scheme_mrope_styles[v->mrope.style - PE_MROPE_CHUNKED],
                          v->mrope.section[0], v->mrope.section[1], v->mrope.section[2]);
        }
        break;
    case SCHEME_ROPE2D:
        put_key(sb, &first, "variant");
        strbuf_put_json_string(sb, scheme_rope2d_variants[v->rope2d.variant]);
        put_number(sb, &first, "head_dim", (double)v->rope2d.head_dim);
        put_number(sb, &first, "base", v->rope2d.base);
        break;
    case SCHEME_ALIBI:
        put_number(sb, &first, "heads", (double)heads);
        put_key(sb, &first, "form");
        strbuf_put_json_string(sb, pe_dx_alibi_form_name(v->alibi_form));
        break;
    case SCHEME_T5:
        put_number(sb, &first, "num_buckets", (double)v->t5.num_buckets);
        put_number(sb, &first, "max_distance", (double)v->t5.max_distance);
        put_key(sb, &first, "bidirectional");
        strbuf_puts(sb, v->t5.bidirectional ? "true" : "false");
        break;
    default:
        break;
    }
    strbuf_putc(sb, '}');
}

void diag_unflatten(size_t flat, size_t ndim, const size_t *dim, size_t *index)
{
    for (size_t i = ndim; i-- > 0;) {
        index[i] = dim[i] ? flat % dim[i] : 0;
        flat = dim[i] ? flat / dim[i] : 0;
    }
}

void diag_write_claimed(strbuf *sb, scheme_kind kind, const pe_dx_variant *claim, size_t heads,
                        const pe_dx_errors *e, const char *worst_array, const size_t *index,
                        size_t ndim)
{
    strbuf_puts(sb, "\"claimed\":{\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[kind]);
    strbuf_puts(sb, ",\"params\":");
    diag_write_params(sb, kind, claim, heads);
    strbuf_puts(sb, ",\"max_abs_error\":");
    diag_put_float(sb, e->max_abs);
    strbuf_puts(sb, ",\"max_rel_error\":");
    diag_put_float(sb, e->max_rel);
    strbuf_puts(sb, ",\"mismatched\":");
    diag_put_float(sb, e->mismatched);
    strbuf_puts(sb, ",\"worst\":{");
    if (worst_array) {
        strbuf_puts(sb, "\"array\":");
        strbuf_put_json_string(sb, worst_array);
        strbuf_putc(sb, ',');
    }
    strbuf_puts(sb, "\"index\":[");
    for (size_t i = 0; i < ndim; i++)
        strbuf_printf(sb, "%s%zu", i ? "," : "", index[i]);
    strbuf_puts(sb, "],\"got\":");
    diag_put_float(sb, e->got);
    strbuf_puts(sb, ",\"want\":");
    diag_put_float(sb, e->want);
    strbuf_puts(sb, "}}");
}

/* The evidence fields of a code about angles (sinusoidal and rope), read
 * off b; other codes write nothing here. */
static void write_angle_evidence(strbuf *sb, const pe_dx_variant *b, pe_dx_code code,
                                 scheme_kind kind, bool *first)
{
    switch (code) {
    case PE_DX_LAYOUT_SWAPPED:
        put_key(sb, first, "layout");
        if (kind == SCHEME_ROPE)
            strbuf_puts(sb, b->rope.layout == PE_ROPE_INTERLEAVED ? "\"interleaved\"" : "\"half\"");
        else
            strbuf_puts(sb, b->sin_layout == PE_SIN_SPLIT ? "\"split\"" : "\"interleaved\"");
        break;
    case PE_DX_POSITION_OFFSET:
        put_number(sb, first, "offset", (double)b->offset);
        break;
    case PE_DX_FREQUENCY_FORMULA:
        put_key(sb, first, "formula");
        strbuf_put_json_string(sb, pe_dx_formula_words(b->formula));
        put_number(sb, first, "base", kind == SCHEME_ROPE ? b->rope.base : b->base);
        break;
    case PE_DX_BASE_MISMATCH:
        put_number(sb, first, "base", kind == SCHEME_ROPE ? b->rope.base : b->base);
        break;
    case PE_DX_ROTARY_DIM_MISMATCH:
        put_number(sb, first, "rotary_dim", (double)b->rope.rotary_dim);
        put_number(sb, first, "frequency_dim", (double)b->frequency_dim);
        break;
    case PE_DX_HEAD_DIM_MISMATCH:
        put_number(sb, first, "head_dim", (double)b->rope.head_dim);
        break;
    case PE_DX_SCALING_MISMATCH:
        put_key(sb, first, "scaling");
        if (b->rope.scaling.type == PE_ROPE_SCALING_NONE)
            strbuf_puts(sb, "null");
        else
            write_scaling(sb, &b->rope.scaling, b->rope.rotary_dim / 2);
        break;
    case PE_DX_ATTENTION_FACTOR:
        put_number(sb, first, "factor", b->attention_factor);
        break;
    case PE_DX_EMBED_SCALE:
        put_number(sb, first, "embed_scale", b->embed_scale);
        break;
    case PE_DX_LOW_PRECISION:
        put_key(sb, first, "precision");
        strbuf_put_json_string(sb, pe_dx_precision_name(b->precision));
        put_key(sb, first, "stage");
        strbuf_put_json_string(sb, pe_dx_stage_name(b->stage));
        break;
    default:
        break;
    }
}

/* alibi_slopes evidence: the heads whose slopes differ, and the slopes found. */
static void write_slopes_evidence(strbuf *sb, const pe_dx_result *r, size_t n_heads, bool *first)
{
    const pe_dx_variant *b = &r->best;
    size_t heads = 0;
    put_key(sb, first, "heads");
    strbuf_putc(sb, '[');
    for (size_t h = 0; r->slopes_differ && b->slopes && h < n_heads; h++)
        if (r->slopes_differ[h])
            strbuf_printf(sb, "%s%zu", heads++ ? "," : "", h);
    strbuf_putc(sb, ']');
    put_key(sb, first, "slopes");
    for (size_t h = 0; b->slopes && h < n_heads; h++) {
        strbuf_putc(sb, h ? ',' : '[');
        diag_put_float(sb, b->slopes[h]);
    }
    if (b->slopes)
        strbuf_putc(sb, ']');
    else
        strbuf_puts(sb, "null");
}

/* positions_mismatch evidence: the positions found, one list per batch
 * row named (one row when there are no batch rows), and the pattern of
 * each, a string when those rows share one, else a list. */
static void write_positions_evidence(strbuf *sb, const pe_dx_result *r, const diag_rows *rows,
                                     bool *first)
{
    const pe_dx_variant *b = &r->best;
    size_t batch = rows ? rows->batch : 1, n = rows ? rows->tokens : r->n_positions;
    bool one = true;
    pe_dx_pattern shared = r->positions_pattern;

    put_key(sb, first, "positions");
    strbuf_putc(sb, '[');
    for (size_t row = 0, named = 0; b->positions && row < batch; row++) {
        if (rows && !rows->differs[row])
            continue;
        strbuf_puts(sb, named ? ",[" : "[");
        for (size_t t = 0; t < n; t++)
            strbuf_printf(sb, "%s%" PRId64, t ? "," : "", b->positions[row * n + t] + b->offset);
        strbuf_putc(sb, ']');
        if (rows) {
            pe_dx_pattern at = pe_dx_row_pattern(b->positions + row * n, rows->claimed + row * n,
                                                 n);
            one = one && (named == 0 || at == shared);
            shared = at;
        }
        named++;
    }
    strbuf_putc(sb, ']');
    put_key(sb, first, "pattern");
    if (one) {
        strbuf_put_json_string(sb, pe_dx_pattern_name(shared));
        return;
    }
    strbuf_putc(sb, '[');
    for (size_t row = 0, named = 0; row < batch; row++)
        if (rows->differs[row]) {
            strbuf_puts(sb, named++ ? "," : "");
            strbuf_put_json_string(sb, pe_dx_pattern_name(pe_dx_row_pattern(b->positions + row * n,
                                                                            rows->claimed + row * n,
                                                                            n)));
        }
    strbuf_putc(sb, ']');
}

/* The evidence of one code, read off best as pe_diagnose.h documents. */
static void write_evidence(strbuf *sb, const pe_dx_result *r, pe_dx_code code, scheme_kind kind,
                           size_t n_heads, const diag_rows *rows)
{
    const pe_dx_variant *b = &r->best;
    bool first = true;

    strbuf_putc(sb, '{');
    switch (code) {
    case PE_DX_ALIBI_SLOPES:
        write_slopes_evidence(sb, r, n_heads, &first);
        break;
    case PE_DX_ALIBI_FORM:
        put_key(sb, &first, "form");
        strbuf_put_json_string(sb, pe_dx_alibi_form_name(b->alibi_form));
        put_number(sb, &first, "sign", b->alibi_sign);
        break;
    case PE_DX_POSITIONS_MISMATCH: /* per row: one row for a [tokens][n] subject */
        write_positions_evidence(sb, r, rows, &first);
        break;
    case PE_DX_SCALING_MISMATCH: /* beside base_mismatch: the other reading */
        if (r->dynamic_alternative.type != PE_ROPE_SCALING_DYNAMIC) {
            write_angle_evidence(sb, b, code, kind, &first);
            break;
        }
        put_key(sb, &first, "scaling");
        write_scaling(sb, &r->dynamic_alternative, b->rope.rotary_dim / 2);
        put_number(sb, &first, "base", b->rope.base);
        break;
    case PE_DX_T5_BUCKETS:
        put_number(sb, &first, "num_buckets", (double)b->t5.num_buckets);
        put_number(sb, &first, "max_distance", (double)b->t5.max_distance);
        put_key(sb, &first, "bidirectional");
        strbuf_puts(sb, b->t5.bidirectional ? "true" : "false");
        break;
    default: /* angle codes; sin_cos_swapped, rotation_reversed, transposed,
              * t5_direction have none */
        write_angle_evidence(sb, b, code, kind, &first);
        break;
    }
    /* every finding: the maximum error under the claim, and what best
     * leaves (the findings together; the error the messages quote) */
    put_key(sb, &first, "error_before");
    diag_put_float(sb, r->claimed.max_abs);
    put_key(sb, &first, "error_after");
    diag_put_float(sb, pe_dx_error_after(r));
    if (r->truncated) { /* the budget ran out before the search was done */
        put_key(sb, &first, "truncated");
        strbuf_puts(sb, "true");
    }
    if (rows) { /* a batched subject: the rows the claim gets wrong */
        put_key(sb, &first, "rows");
        strbuf_puts(sb, rows->json);
    }
    strbuf_putc(sb, '}');
}

void diag_write_finding_head(strbuf *sb, const pe_dx_finding *f, const char *prefix)
{
    char message[400];

    snprintf(message, sizeof message, "%s%s", prefix, f->message);
    strbuf_puts(sb, "{\"code\":");
    strbuf_put_json_string(sb, pe_dx_code_name(f->code));
    strbuf_puts(sb, ",\"message\":");
    strbuf_put_json_string(sb, message);
    strbuf_puts(sb, ",\"evidence\":");
}

void diag_write_finding(strbuf *sb, const pe_dx_result *r, size_t i, scheme_kind kind, size_t heads,
                        const char *prefix, const diag_rows *rows)
{
    const pe_dx_finding *f = &r->findings[i];

    diag_write_finding_head(sb, f, prefix);
    write_evidence(sb, r, f->code, kind, heads, rows);
    strbuf_putc(sb, '}');
}

void diag_write_best_positions(strbuf *sb, const int64_t *positions, size_t n, int64_t shift)
{
    bool consecutive = true;

    for (size_t i = 1; i < n && consecutive; i++)
        consecutive = positions[i] == positions[0] + (int64_t)i;
    if (consecutive && positions[0] + shift >= 0) {
        strbuf_printf(sb, "\"offset\":%" PRId64, positions[0] + shift);
        return;
    }
    strbuf_puts(sb, "\"positions\":[");
    for (size_t i = 0; i < n; i++)
        strbuf_printf(sb, "%s%" PRId64, i ? "," : "", positions[i] + shift);
    strbuf_putc(sb, ']');
}

void diag_write_json(strbuf *sb, const json_doc *doc, json_t *v)
{
    const json_span *span = json_doc_array(doc, v);
    size_t len = 0;
    const char *key;
    json_t *item;
    size_t i;

    if (span) {
        strbuf_put(sb, doc->text + span->start, span->end - span->start);
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        strbuf_putc(sb, '{');
        i = 0;
        json_object_foreach (v, key, item) {
            strbuf_puts(sb, i++ ? "," : "");
            strbuf_put_json_string(sb, key);
            strbuf_putc(sb, ':');
            diag_write_json(sb, doc, item);
        }
        strbuf_putc(sb, '}');
        break;
    case JSON_ARRAY:
        strbuf_putc(sb, '[');
        json_array_foreach (v, i, item) {
            strbuf_puts(sb, i ? "," : "");
            diag_write_json(sb, doc, item);
        }
        strbuf_putc(sb, ']');
        break;
    case JSON_STRING: {
        const char *text = json_doc_string_text(doc, v, &len);
        if (text && len >= JSON_STRING_SPAN_MIN && !memchr(text, '"', len) &&
            !memchr(text, '\\', len)) { /* a long string: printable, no escapes */
            strbuf_putc(sb, '"');
            strbuf_put(sb, text, len);
            strbuf_putc(sb, '"');
        } else {
            const char *s = json_doc_string(doc, v);
            strbuf_put_json_string(sb, s ? s : "");
        }
        break;
    }
    case JSON_INTEGER:
        strbuf_printf(sb, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        diag_put_double(sb, json_real_value(v));
        break;
    case JSON_TRUE:
        strbuf_puts(sb, "true");
        break;
    case JSON_FALSE:
        strbuf_puts(sb, "false");
        break;
    case JSON_NULL:
        strbuf_puts(sb, "null");
        break;
    }
}

void diag_write_best_model(strbuf *sb, const request *rq, const char *inline_model)
{
    strbuf_puts(sb, "\"model\":");
    if (rq->owned_model && inline_model)
        strbuf_puts(sb, inline_model);
    else if (rq->model)
        strbuf_put_json_string(sb, rq->model->name);
    else
        strbuf_puts(sb, "null");
}

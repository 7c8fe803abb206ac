/*
 * positions_nd.c - reading positions of more than one component (see
 * positions_nd.h). A position list is read into a flat [rows][k] array
 * (k components a token: 3 for mrope; 1-D positions are read as triples
 * and collapsed); its layout is told by its shape, the contract's way:
 * [tokens] (one per token, every row), [batch][tokens] (per row),
 * [tokens][k], [batch][tokens][k], with [batch][tokens] winning when both
 * fit (batch = tokens = k), or a list of entries that are integers or
 * k-lists.
 */
#include "positions_nd.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"
#include "mm_layout.h"

/* Components a token of the request's scheme has. */
static size_t scheme_nd(const request *rq)
{
    if (rq->scheme.kind == SCHEME_ROPE2D)
        return 2;
    return rq->scheme.kind == SCHEME_ROPE && rq->scheme.mrope.style != PE_MROPE_NONE ? 3 : 0;
}

/* Whether the body has mm_layout, merge, mm_rule, grid or
 * positions_shape: one pass over its few keys, cheaper on every request
 * than a hash lookup for each name. */
static bool has_nd_field(const json_t *root)
{
    static const int fields[] = {RF_mm_layout, RF_merge, RF_mm_rule, RF_grid, RF_positions_shape};
    const char *key;
    json_t *v;

    json_object_foreach ((json_t *)(uintptr_t)root, key, v)
        for (size_t i = 0; !json_is_null(v) && i < sizeof fields / sizeof *fields; i++)
            if (strcmp(key, request_fields[fields[i]].name) == 0)
                return true;
    return false;
}

bool positions_nd_wanted(const request *rq, const json_t *pos)
{
    if (scheme_nd(rq) == 2 || has_nd_field(rq->doc.root))
        return true;
    if (!pos)
        return false;
    if (scheme_nd(rq) == 3)
        return true;
    const json_span *span = json_doc_array(&rq->doc, pos);
    /* a rectangular list of up to two levels stays on the 1-D reader */
    return span ? span->ndim > 2 || (span->ndim == 2 && span->dim[1] == 3 &&
                                     !(span->dim[0] == rq->batch && span->dim[1] == rq->tokens))
                : json_is_string(pos) || (json_is_array(pos) && json_array_size(pos) > 0);
}

static int shape_fail(const request *rq, size_t k, api_error *err)
{
    if (k == 2)
        return api_fail(err, API_E_INVALID_SHAPE, RF(positions),
                        "positions must be [row, col] pairs: [%zu][2] or [%zu][%zu][2]", rq->tokens,
                        rq->batch, rq->tokens);
    return api_fail(err, API_E_INVALID_SHAPE, RF(positions),
                    "positions must be [%zu], [%zu][%zu] or, as triples [t, h, w], [%zu][%zu] or "
                    "[%zu][%zu][%zu]",
                    rq->tokens, rq->batch, rq->tokens, rq->tokens, k, rq->batch, rq->tokens, k);
}

/* One position value at path: an integer in [0, PE_MAX_POSITION]. */
static int check_value(int64_t v, const char *path, api_error *err)
{
    if (v < 0)
        return api_fail(err, API_E_OUT_OF_RANGE, path, "%s = %" PRId64 " must be >= 0", path, v);
    if (v > PE_MAX_POSITION)
        return api_fail(err, API_E_TOO_LARGE, path,
                        "%s = %" PRId64 " is past the largest "
                        "position %" PRId64,
                        path, v, PE_MAX_POSITION);
    return 0;
}

/* A jansson integer (in a list the scanner did not take out). */
static int read_int(const json_t *v, const char *path, int64_t *out, api_error *err)
{
    if (!json_is_integer(v))
        return api_fail(err, API_E_INVALID_REQUEST, path, "%s must be an integer", path);
    *out = (int64_t)json_integer_value(v);
    return check_value(*out, path, err);
}

/* path + "[i][j]..." of the flat index i of a rectangular list. */
static jpath flat_path(const char *path, const json_span *span, size_t i)
{
    size_t idx[JSON_ARRAY_MAX_NDIM];
    jpath at = jpath_key("", path);

    for (size_t d = span->ndim; d-- > 0;) {
        idx[d] = i % span->dim[d];
        i /= span->dim[d];
    }
    for (size_t d = 0; d < span->ndim; d++)
        at = jpath_index(at.s, idx[d]);
    return at;
}

/* A rectangular list's integers, flat, into out[span->count]. */
static int read_span(const json_doc *doc, const json_span *span, const char *path, int64_t *out,
                     api_error *err)
{
    size_t bad = 0;
    json_read_status rs = json_span_int64s(span, doc->text, out, &bad);
    size_t n = rs == JSON_READ_OK ? span->count : bad;

    for (size_t i = 0; i < n; i++)
        if (out[i] < 0 || out[i] > PE_MAX_POSITION) {
            jpath at = flat_path(path, span, i);
            return check_value(out[i], at.s, err);
        }
    if (rs == JSON_READ_OK)
        return 0;
    jpath at = flat_path(path, span, bad);
    if (rs == JSON_READ_NOT_INTEGER)
        return api_fail(err, API_E_INVALID_REQUEST, at.s, "%s must be an integer", at.s);
    return api_fail(err, API_E_TOO_LARGE, at.s, "%s is past the largest position %" PRId64, at.s,
                    PE_MAX_POSITION);
}

/* One entry of a list: an integer p (k copies) or a list of k integers. */
static int read_entry(const json_doc *doc, const json_t *v, const char *path, size_t k,
                      int64_t *out, api_error *err)
{
    const json_span *span = json_doc_array(doc, v);

    if (json_is_integer(v) && k == 3) {
        if (read_int(v, path, out, err))
            return -1;
        for (size_t c = 1; c < k; c++)
            out[c] = out[0];
        return 0;
    }
    if (span && span->ndim == 1 && span->count == k)
        return read_span(doc, span, path, out, err);
    if (json_is_array(v) && !span && json_array_size(v) == k) {
        for (size_t c = 0; c < k; c++) {
            jpath at = jpath_index(path, c);
            if (read_int(json_array_get(v, c), at.s, &out[c], err))
                return -1;
        }
        return 0;
    }
    return api_fail(err, API_E_INVALID_REQUEST, path,
                    k == 2 ? "%s must be a pair [row, col] of integers"
                           : "%s must be an integer or a triple [t, h, w] of integers",
                    path);
}

/* The length of a list (rectangular or not), 0 when v is not one. */
static size_t list_len(const json_doc *doc, const json_t *v)
{
    const json_span *span = json_doc_array(doc, v);
    return span ? span->dim[0] : json_is_array(v) ? json_array_size(v) : 0;
}

/* A flat [n] of the dims given, placed into rows: [tokens] or [tokens][k]
 * for every row, [batch][tokens] or [batch][tokens][k] per row. */
static int place_flat(request *rq, size_t k, size_t ndim, const size_t *dim, const int64_t *flat,
                      int64_t *out, api_error *err)
{
    size_t t = rq->tokens, b = rq->batch;
    bool rows_ok = ndim >= 2 && dim[0] == b && dim[1] == t && (rq->batched || b == 1);
    bool per_row_ints = ndim == 2 && rows_ok && k == 3; /* rope2d has no integer entries */
    bool shared_k = ndim == 2 && !per_row_ints && dim[0] == t && dim[1] == k;
    bool per_row_k = ndim == 3 && rows_ok && dim[2] == k;

    if (!(ndim == 1 && dim[0] == t && k == 3) && !per_row_ints && !shared_k && !per_row_k)
        return shape_fail(rq, k, err);
    for (size_t r = 0; r < b; r++)
        for (size_t i = 0; i < t; i++)
            for (size_t c = 0; c < k; c++) {
                size_t row = per_row_ints || per_row_k ? r : 0;
                size_t at = ndim == 1 || per_row_ints ? row * t + i : (row * t + i) * k + c;
                out[(r * t + i) * k + c] = flat[at];
            }
    return 0;
}

/* Base64 positions: float32 values that must be whole and >= 0. */
static int read_base64(request *rq, size_t k, int64_t *out, api_error *err)
{
    tensor x;
    int rc = -1;
    int64_t *flat = NULL;

    if (request_array(&rq->doc, RF(positions), 1, 3, &x, err))
        return -1;
    size_t n = tensor_count(&x);
    flat = malloc(n * sizeof *flat);
    if (!flat) {
        api_fail_oom(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        jpath at = jpath_index(RF(positions), i);
        if (x.data[i] != floorf(x.data[i])) {
            api_fail(err, API_E_INVALID_REQUEST, at.s, "%s = %g must be an integer", at.s,
                     (double)x.data[i]);
            goto out;
        }
        if (x.data[i] < 0 || x.data[i] > (float)PE_MAX_POSITION) {
            api_fail(err, x.data[i] < 0 ? API_E_OUT_OF_RANGE : API_E_TOO_LARGE, at.s,
                     "%s = %g is outside [0, %" PRId64 "]", at.s, (double)x.data[i],
                     PE_MAX_POSITION);
            goto out;
        }
        flat[i] = (int64_t)x.data[i];
    }
    rc = place_flat(rq, k, x.ndim, x.dim, flat, out, err);
out:
    free(flat);
    tensor_free(&x);
    return rc;
}

/* One row's list of `tokens` entries into out[tokens][k]. */
static int read_row(request *rq, const json_t *v, const char *path, size_t k, int64_t *out,
                    api_error *err)
{
    if (list_len(&rq->doc, v) != rq->tokens || json_doc_array(&rq->doc, v))
        return shape_fail(rq, k, err);
    for (size_t i = 0; i < rq->tokens; i++) {
        jpath at = jpath_index(path, i);
        if (read_entry(&rq->doc, json_array_get(v, i), at.s, k, out + i * k, err))
            return -1;
    }
    return 0;
}

/* A list that is not rectangular: per row when it has a list of `tokens`
 * entries for each batch row, else one row's entries for every row. */
static int read_mixed(request *rq, const json_t *v, size_t k, int64_t *out, api_error *err)
{
    size_t n = json_array_size(v), t = rq->tokens;
    bool per_row = n == rq->batch && (rq->batched || n == 1);

    for (size_t r = 0; per_row && r < n; r++)
        per_row = list_len(&rq->doc, json_array_get(v, r)) == t;
    if (!per_row) {
        if (read_row(rq, v, RF(positions), k, out, err))
            return -1;
        for (size_t r = 1; r < rq->batch; r++)
            memcpy(out + r * t * k, out, t * k * sizeof *out);
        return 0;
    }
    for (size_t r = 0; r < n; r++) {
        const json_t *row = json_array_get(v, r);
        jpath at = jpath_index(RF(positions), r);
        const json_span *span = json_doc_array(&rq->doc, row);
        if (span) { /* a rectangular row: [tokens] or [tokens][k] */
            int64_t *flat = malloc(span->count * sizeof *flat);
            if (!flat)
                return api_fail_oom(err);
            request one = *rq;
            one.batch = 1;
            one.batched = false;
            int rc = read_span(&rq->doc, span, at.s, flat, err) ||
                     place_flat(&one, k, span->ndim, span->dim, flat, out + r * t * k, err);
            free(flat);
            if (rc)
                return -1;
        } else if (read_row(rq, row, at.s, k, out + r * t * k, err)) {
            return -1;
        }
    }
    return 0;
}

/* `positions` as sent, into out[rows][k]. */
static int read_positions(request *rq, const json_t *v, size_t k, int64_t *out, api_error *err)
{
    const json_span *span = json_doc_array(&rq->doc, v);

    if (json_is_string(v))
        return read_base64(rq, k, out, err);
    if (jf_get(rq->doc.root, RF(positions_shape)))
        return api_fail(err, API_E_INVALID_REQUEST, RF(positions_shape),
                        "positions_shape goes with base64 positions only");
    if (span) {
        int64_t *flat = malloc(span->count * sizeof *flat);
        if (!flat)
            return api_fail_oom(err);
        int rc = read_span(&rq->doc, span, RF(positions), flat, err) ||
                 place_flat(rq, k, span->ndim, span->dim, flat, out, err);
        free(flat);
        return rc ? -1 : 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return api_fail(err, API_E_INVALID_REQUEST, RF(positions),
                        "positions must be a list of integers or [t, h, w] triples");
    return read_mixed(rq, v, k, out, err);
}

/* mm_layout (its conflicts first): every row from the layout, over the
 * kept slots of its mask; under mm_rule `rule` (-1: the body's), the
 * body's rule echoed in answers. */
static int layout_rows(request *rq, int rule, int64_t *out, api_error *err)
{
    const json_t *root = rq->doc.root;
    mm_layout l;
    int rc = -1;

    if (jf_get(root, RF(offset)))
        return api_fail(err, API_E_INVALID_REQUEST, RF(offset),
                        "give mm_layout or offset, not both: the layout gives the positions");
    memset(&l, 0, sizeof l);
    double tps = rq->scheme.tokens_per_second > 0 ? rq->scheme.tokens_per_second : 2.0;
    if (scheme_nd(rq) != 3) {
        api_fail(err, API_E_INVALID_SHAPE, RF(mm_layout),
                 "mm_layout gives positions [t, h, w]: it needs a rope scheme with params.mrope");
        goto out;
    }
    if (mm_layout_decode(&rq->doc, tps, rq->tokens, &l, err))
        goto out;
    if (rule >= 0)
        l.rule = (mm_rule)rule;
    for (size_t b = 0; b < rq->batch; b++) {
        const uint8_t *mask = rq->mask ? rq->mask + b * rq->tokens : NULL;
        size_t kept = rq->tokens;
        for (size_t t = 0; mask && t < rq->tokens; t++)
            kept -= !mask[t];
        if (kept != l.tokens) {
            api_fail(err, API_E_INVALID_SHAPE, RF(mm_layout),
                     "mm_layout describes %zu tokens; row %zu has %zu%s", l.tokens, b, kept,
                     mask ? " kept by attention_mask" : "");
            goto out;
        }
        mm_layout_row(&l, mask, rq->tokens, out + b * rq->tokens * 3);
    }
    rq->echo_positions = rq->echo_positions || rule < 0;
    rc = 0;
out:
    mm_layout_free(&l);
    return rc;
}

/* Without mrope a triple must be text (t == h == w): then 1-D. */
static int collapse(request *rq, const int64_t *pos3, api_error *err)
{
    const char *field = rq->echo_positions ? RF(mm_layout) : RF(positions);

    for (size_t i = 0; i < request_rows(rq); i++) {
        const int64_t *p = pos3 + 3 * i;
        if (p[0] != p[1] || p[0] != p[2])
            return api_fail(err, API_E_INVALID_SHAPE, field,
                            "%s gives token %zu of row %zu the position [%" PRId64 ", %" PRId64
                            ", %" PRId64 "]: positions in more than one dimension need a rope "
                            "scheme with params.mrope",
                            field, i % rq->tokens, i / rq->tokens, p[0], p[1], p[2]);
        rq->positions[i] = p[0];
    }
    return 0;
}

/* rope2d's grid: the h x w patches in the variant's own order (qwen_vit:
 * block-major over merge x merge blocks; the others row-major), then
 * llama4_vision's class token, not turned. */
static int from_grid(request *rq, const json_t *grid, int64_t *out, api_error *err)
{
    static const char *const keys[] = {"h", "w", "merge", NULL};
    pe_rope2d_variant variant = rq->scheme.rope2d_variant;
    int64_t h = 0, w = 0, m = 1;
    bool present;

    if (api_json(err, jf_check_object(grid, RF(grid), keys, &err->json)) ||
        api_json(err,
                 jf_int(&rq->doc, grid, RF(grid), "h", 1, INT32_MAX, &present, &h, &err->json)) ||
        (!present && api_fail(err, API_E_INVALID_REQUEST, "grid.h", "missing field 'grid.h'")) ||
        api_json(err,
                 jf_int(&rq->doc, grid, RF(grid), "w", 1, INT32_MAX, &present, &w, &err->json)) ||
        (!present && api_fail(err, API_E_INVALID_REQUEST, "grid.w", "missing field 'grid.w'")) ||
        api_json(err,
                 jf_int(&rq->doc, grid, RF(grid), "merge", 1, INT32_MAX, &present, &m, &err->json)))
        return -1;
    if (m != 1 && variant != PE_ROPE2D_QWEN_VIT)
        return api_fail(err, API_E_INVALID_SHAPE, "grid.merge",
                        "grid.merge orders qwen_vit's patches; %s's are row-major (merge 1)",
                        variant == PE_ROPE2D_PIXTRAL  ? "pixtral"
                        : variant == PE_ROPE2D_LLAMA4 ? "llama4_vision"
                                                      : "gemma4_vision");
    if (h % m || w % m)
        return api_fail(err, API_E_INVALID_SHAPE, "grid.merge",
                        "grid.merge %" PRId64 " must divide h = %" PRId64 " and w = %" PRId64, m, h,
                        w);
    uint64_t count = (uint64_t)h * (uint64_t)w + (variant == PE_ROPE2D_LLAMA4);
    if (count != rq->tokens)
        return api_fail(err, API_E_INVALID_SHAPE, RF(grid),
                        "grid %" PRId64 " x %" PRId64 " has %" PRIu64
                        " tokens%s; the input has %zu",
                        h, w, count, variant == PE_ROPE2D_LLAMA4 ? " (with the class token)" : "",
                        rq->tokens);
    int64_t *c = out;
    for (int64_t bh = 0; bh < h / m; bh++)
        for (int64_t bw = 0; bw < w / m; bw++)
            for (int64_t ih = 0; ih < m; ih++)
                for (int64_t iw = 0; iw < m; iw++, c += 2) {
                    c[0] = bh * m + ih;
                    c[1] = bw * m + iw;
                }
    if (variant == PE_ROPE2D_LLAMA4)
        c[0] = c[1] = PE_ROPE2D_UNTURNED;
    for (size_t b = 1; b < rq->batch; b++)
        memcpy(out + b * rq->tokens * 2, out, rq->tokens * 2 * sizeof *out);
    return 0;
}

/* rope2d: [row, col] pairs from positions or grid, nothing else. */
static int fill_pairs(request *rq, api_error *err)
{
    const json_t *root = rq->doc.root, *pos = jf_get(root, RF(positions));
    const json_t *grid = jf_get(root, RF(grid));
    static const int others[] = {RF_offset, RF_attention_mask, RF_mm_layout};
    int64_t *pairs = NULL; /* owned until moved to rq */

    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (jf_get(root, request_fields[others[i]].name))
            return api_fail(err, API_E_INVALID_REQUEST, request_fields[others[i]].name,
                            "scheme rope2d takes positions ([row, col] pairs) or grid, not %s",
                            request_fields[others[i]].name);
    if (!pos == !grid)
        return api_fail(err, API_E_INVALID_REQUEST, pos ? RF(grid) : RF(positions),
                        "scheme rope2d takes positions ([row, col] pairs) or grid: %s",
                        pos ? "not both" : "give one");
    pairs = malloc(request_rows(rq) * 2 * sizeof *pairs);
    if (!pairs)
        return api_fail_oom(err);
    rq->pos_field = pos ? RF(positions) : RF(grid);
    if (pos ? read_positions(rq, pos, 2, pairs, err) : from_grid(rq, grid, pairs, err)) {
        free(pairs);
        return -1;
    }
    for (size_t i = 0; i < request_rows(rq); i++)
        rq->positions[i] = pairs[2 * i] > 0 ? pairs[2 * i] : 0;
    rq->positions_nd = pairs;
    rq->nd = 2;
    return 0;
}

int positions_nd_fill(request *rq, api_error *err)
{
    const json_t *root = rq->doc.root, *pos = jf_get(root, RF(positions));
    size_t rows = request_rows(rq);
    int64_t *pos3 = NULL; /* owned until moved to rq */
    int rc = -1;

    if (scheme_nd(rq) == 2)
        return fill_pairs(rq, err);
    if (jf_get(root, RF(grid)))
        return api_fail(err, API_E_INVALID_REQUEST, RF(grid), "grid goes with scheme rope2d");
    if (!jf_get(root, RF(mm_layout)) && (jf_get(root, RF(merge)) || jf_get(root, RF(mm_rule))))
        return api_fail(err, API_E_INVALID_REQUEST,
                        jf_get(root, RF(merge)) ? RF(merge) : RF(mm_rule), "%s goes with mm_layout",
                        jf_get(root, RF(merge)) ? RF(merge) : RF(mm_rule));
    if (pos && jf_get(root, RF(mm_layout)))
        return api_fail(err, API_E_INVALID_REQUEST, RF(positions),
                        "give mm_layout or positions, not both: the layout gives the positions");
    if (!pos && !jf_get(root, RF(mm_layout)))
        return api_fail(err, API_E_INVALID_REQUEST, RF(positions_shape),
                        "positions_shape goes with base64 positions only");
    pos3 = malloc(rows * 3 * sizeof *pos3);
    if (!pos3)
        return api_fail_oom(err);
    rq->pos_field = pos ? RF(positions) : RF(mm_layout);
    if (pos ? read_positions(rq, pos, 3, pos3, err) : layout_rows(rq, -1, pos3, err))
        goto out;
    if (!scheme_nd(rq)) {
        rc = collapse(rq, pos3, err);
        goto out;
    }
    for (size_t i = 0; i < rows; i++)
        rq->positions[i] = pos3[3 * i];
    rq->positions_nd = pos3;
    rq->nd = 3;
    pos3 = NULL;
    rc = 0;
out:
    free(pos3);
    return rc;
}

int64_t positions_nd_max(const request *rq)
{
    int64_t top = 0;

    for (size_t i = 0; rq->positions_nd && i < request_rows(rq) * rq->nd; i++)
        top = rq->positions_nd[i] > top ? rq->positions_nd[i] : top;
    return top;
}

void positions_nd_write(strbuf *sb, const request *rq)
{
    size_t row = rq->tokens * 3;

    if (!rq->echo_positions || !rq->positions_nd)
        return;
    /* one [tokens][3] stands for every row unless a mask made them differ */
    bool per_row = false;
    for (size_t b = 1; b < rq->batch && !per_row; b++)
        per_row = memcmp(rq->positions_nd + b * row, rq->positions_nd,
                         row * sizeof *rq->positions_nd) != 0;
    strbuf_puts(sb, ",\"positions\":");
    if (per_row)
        strbuf_putc(sb, '[');
    for (size_t b = 0; b < (per_row ? rq->batch : 1); b++) {
        strbuf_puts(sb, b ? ",[" : "[");
        for (size_t t = 0; t < rq->tokens; t++) {
            const int64_t *p = rq->positions_nd + 3 * (b * rq->tokens + t);
            strbuf_printf(sb, "%s[%" PRId64 ",%" PRId64 ",%" PRId64 "]", t ? "," : "", p[0], p[1],
                          p[2]);
        }
        strbuf_putc(sb, ']');
    }
    if (per_row)
        strbuf_putc(sb, ']');
}

int positions_nd_expand(request *rq, api_error *err)
{
    size_t rows = request_rows(rq);

    if (scheme_nd(rq) != 3 || rq->positions_nd)
        return 0;
    rq->positions_nd = malloc(rows * 3 * sizeof *rq->positions_nd);
    if (!rq->positions_nd)
        return api_fail_oom(err);
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < 3; c++)
            rq->positions_nd[3 * i + c] = rq->positions[i];
    rq->nd = 3;
    return 0;
}

int positions_nd_other_rule(request *rq, int64_t **out, const char **rule, api_error *err)
{
    static const char *const rules[] = {"qwen", "hf", NULL};
    bool present;
    int sent = 0;

    *out = NULL;
    if (scheme_nd(rq) != 3 || !jf_get(rq->doc.root, RF(mm_layout)))
        return 0;
    if (api_json(err, jf_choice(&rq->doc, rq->doc.root, "", RF(mm_rule), rules, &present, &sent,
                                &err->json)))
        return -1;
    int64_t *pos3 = malloc(request_rows(rq) * 3 * sizeof *pos3); /* owned until moved to *out */
    if (!pos3)
        return api_fail_oom(err);
    if (layout_rows(rq, 1 - sent, pos3, err)) {
        free(pos3);
        return -1;
    }
    *out = pos3;
    *rule = rules[1 - sent];
    return 0;
}

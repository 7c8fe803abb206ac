/*
 * mm_layout.c - [t, h, w] positions from text/image/video segments (see
 * mm_layout.h).
 */
#include "mm_layout.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"
#include "json/tensor.h"
#include "posenc.h"
#include "request_fields.h"

/* [t, h, w] of a vision segment: three positive integers, h and w
 * multiples of merge. */
static int read_grid(const json_doc *doc, const json_t *v, const char *path, int64_t merge,
                     int64_t grid[3], api_error *err)
{
    int_array a;

    if (api_json(err,
                 int_array_from_json(doc, v, path, 1, INT32_MAX, JSON_E_TOO_LARGE, &a, &err->json)))
        return -1;
    bool three = a.ndim == 1 && a.dim[0] == 3;
    if (three)
        memcpy(grid, a.data, 3 * sizeof *grid);
    int_array_free(&a);
    if (!three)
        return api_fail(err, API_E_INVALID_SHAPE, path, "%s must be [t, h, w]", path);
    if (grid[1] % merge || grid[2] % merge)
        return api_fail(err, API_E_INVALID_SHAPE, path,
                        "%s = [%" PRId64 ", %" PRId64 ", %" PRId64 "]: h and w must be multiples "
                        "of merge %" PRId64,
                        path, grid[0], grid[1], grid[2], merge);
    return 0;
}

/* One segment: {"text": n}, {"image": [t, h, w]} or {"video": [t, h, w],
 * "seconds_per_grid": s}. */
static int read_segment(const json_doc *doc, const json_t *v, const char *path, int64_t merge,
                        double tokens_per_second, mm_segment *seg, api_error *err)
{
    static const char *const kinds[] = {"text", "image", "video", NULL};
    static const char *const video_keys[] = {"video", "seconds_per_grid", NULL};
    const char *kind = NULL;
    bool present;
    int64_t n;
    double spg = 0;

    for (size_t k = 0; kinds[k]; k++)
        if (jf_get(v, kinds[k]))
            kind = kind ? "" : kinds[k];
    if (!json_is_object(v) || !kind || !kind[0])
        return api_fail(err, API_E_INVALID_REQUEST, path,
                        "%s must be an object with one of text, image or video", path);
    const char *const one[] = {kind, NULL};
    if (api_json(err,
                 jf_check_object(v, path, strcmp(kind, "video") ? one : video_keys, &err->json)))
        return -1;
    memset(seg, 0, sizeof *seg);
    if (strcmp(kind, "text") == 0) {
        if (api_json(err, jf_int(doc, v, path, "text", 1, INT32_MAX, &present, &n, &err->json)))
            return -1;
        seg->text = (size_t)n;
        return 0;
    }
    jpath at = jpath_key(path, kind);
    if (read_grid(doc, jf_get(v, kind), at.s, merge, seg->grid, err) ||
        api_json(err,
                 jf_number(doc, v, path, "seconds_per_grid", false, &present, &spg, &err->json)))
        return -1;
    if (present && spg < 0) {
        jpath sp = jpath_key(path, "seconds_per_grid");
        return api_fail(err, API_E_OUT_OF_RANGE, sp.s, "%s = %g must be >= 0", sp.s, spg);
    }
    /* transformers <= 5.16: tokens_per_second * int(second_per_grid) */
    double interval = present ? tokens_per_second * trunc(spg) : 1.0;
    if (interval > (double)PE_MAX_POSITION) {
        jpath sp = jpath_key(path, "seconds_per_grid");
        return api_fail(err, API_E_TOO_LARGE, sp.s,
                        "%s = %g frames %g apart on t reach past the largest position", sp.s, spg,
                        interval);
    }
    seg->interval = (int64_t)interval;
    return 0;
}

/* The tokens of a segment, or SIZE_MAX when they overflow. */
static size_t segment_tokens(const mm_layout *l, const mm_segment *s)
{
    size_t n;

    if (s->text)
        return s->text;
    if (mul_size((size_t)s->grid[0], (size_t)(s->grid[1] / l->merge), &n) ||
        mul_size(n, (size_t)(s->grid[2] / l->merge), &n))
        return SIZE_MAX;
    return n;
}

/* The largest position the layout reaches, in double (no int64
 * arithmetic can overflow before it is checked): the rule's starts and
 * each vision block's last frame, row and column. */
static double layout_extent(const mm_layout *l)
{
    double start = 0, top = -1;

    for (size_t i = 0; i < l->n; i++) {
        const mm_segment *s = &l->seg[i];
        if (l->rule == MM_RULE_QWEN)
            start = top + 1;
        if (s->text) {
            top = fmax(top, start + (double)s->text - 1);
            start += (double)s->text;
            continue;
        }
        double t = start + (double)(s->grid[0] - 1) * (double)s->interval;
        double side = (double)((s->grid[1] > s->grid[2] ? s->grid[1] : s->grid[2]) / l->merge);
        top = fmax(top, fmax(t, start + side - 1));
        start += side;
    }
    return top;
}

int mm_layout_decode(const json_doc *doc, double tokens_per_second, size_t max_tokens,
                     mm_layout *out, api_error *err)
{
    static const char *const rules[] = {"qwen", "hf", NULL};
    const json_t *list = jf_get(doc->root, RF(mm_layout));
    bool present;
    int rule = 0;
    int64_t merge = 2;
    size_t i;
    const json_t *item;

    memset(out, 0, sizeof *out);
    if (api_json(err,
                 jf_int(doc, doc->root, "", RF(merge), 1, 1024, &present, &merge, &err->json)) ||
        api_json(err,
                 jf_choice(doc, doc->root, "", RF(mm_rule), rules, &present, &rule, &err->json)))
        return -1;
    if (!present)
        return api_fail(err, API_E_INVALID_REQUEST, RF(mm_rule),
                        "mm_layout needs mm_rule: \"qwen\" (Qwen's get_rope_index, transformers "
                        "<= 5.2) or \"hf\" (transformers >= 5.3)");
    if (!json_is_array(list) || json_array_size(list) == 0 || json_doc_array(doc, list))
        return api_fail(err, API_E_INVALID_REQUEST, RF(mm_layout),
                        "mm_layout must be a non-empty list of segments");
    out->merge = merge;
    out->rule = (mm_rule)rule;
    out->seg = calloc(json_array_size(list), sizeof *out->seg);
    if (!out->seg)
        return api_fail_oom(err);
    json_array_foreach (list, i, item) {
        jpath at = jpath_index(RF(mm_layout), i);
        if (read_segment(doc, item, at.s, merge, tokens_per_second, &out->seg[i], err))
            return -1;
        out->n++;
        size_t n = segment_tokens(out, &out->seg[i]);
        if (n > max_tokens || out->tokens + n > max_tokens)
            return api_fail(err, API_E_TOO_LARGE, RF(mm_layout),
                            "mm_layout holds more than the input's %zu tokens", max_tokens);
        out->tokens += n;
    }
    if (layout_extent(out) > (double)PE_MAX_POSITION)
        return api_fail(err, API_E_TOO_LARGE, RF(mm_layout),
                        "mm_layout's positions reach past the largest position %" PRId64,
                        PE_MAX_POSITION);
    return 0;
}

/* The positions of a vision segment from start s, in its merged grid's
 * row-major order; returns the largest value written. */
static int64_t vision_block(const mm_layout *l, const mm_segment *seg, int64_t s, int64_t **out)
{
    int64_t gh = seg->grid[1] / l->merge, gw = seg->grid[2] / l->merge, top = s;

    for (int64_t t = 0; t < seg->grid[0]; t++)
        for (int64_t r = 0; r < gh; r++)
            for (int64_t c = 0; c < gw; c++) {
                int64_t *p = *out;
                p[0] = s + t * seg->interval;
                p[1] = s + r;
                p[2] = s + c;
                for (int k = 0; k < 3; k++)
                    top = p[k] > top ? p[k] : top;
                *out += 3;
            }
    return top;
}

void mm_layout_row(const mm_layout *l, const uint8_t *mask, size_t tokens, int64_t *pos3)
{
    int64_t *seq = pos3, start = 0, top = -1; /* top: the largest position so far */

    for (size_t i = 0; i < l->n; i++) {
        const mm_segment *seg = &l->seg[i];
        if (l->rule == MM_RULE_QWEN)
            start = top + 1;
        if (seg->text) {
            for (size_t k = 0; k < seg->text; k++, seq += 3)
                seq[0] = seq[1] = seq[2] = start + (int64_t)k;
            top = start + (int64_t)seg->text - 1 > top ? start + (int64_t)seg->text - 1 : top;
            start += (int64_t)seg->text;
            continue;
        }
        int64_t high = vision_block(l, seg, start, &seq);
        top = high > top ? high : top;
        int64_t side = seg->grid[1] > seg->grid[2] ? seg->grid[1] : seg->grid[2];
        start += side / l->merge;
    }
    if (!mask)
        return;
    /* spread the kept slots' positions over the row, from its end */
    size_t kept = l->tokens;
    for (size_t t = tokens; t-- > 0;) {
        if (mask[t]) {
            kept--;
            memmove(pos3 + 3 * t, pos3 + 3 * kept, 3 * sizeof *pos3);
        } else {
            pos3[3 * t] = pos3[3 * t + 1] = pos3[3 * t + 2] = 0;
        }
    }
}

void mm_layout_free(mm_layout *l)
{
    if (!l)
        return;
    free(l->seg);
    l->seg = NULL;
    l->n = 0;
}

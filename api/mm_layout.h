/*
 * mm_layout.h - a multimodal sequence described by its segments (contract
 * 1.3, "Positions from a layout"): text runs, images and videos, turned
 * into [t, h, w] positions the way Qwen's get_rope_index does ("qwen":
 * each segment starts one past the largest position so far; transformers
 * <= 5.2) or transformers >= 5.3 does ("hf": after a vision block the
 * start advances by max(h, w) / merge).
 */
#ifndef MM_LAYOUT_H
#define MM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "api_error.h"
#include "json/json_doc.h"

typedef enum mm_rule { MM_RULE_QWEN = 0, MM_RULE_HF } mm_rule;

typedef struct mm_segment {
    size_t text;      /* a text run of this many tokens; 0 for vision */
    int64_t grid[3];  /* vision: [t, h, w] before the spatial merge */
    int64_t interval; /* vision: t-step between frames */
} mm_segment;

typedef struct mm_layout {
    mm_segment *seg; /* owned, n of them */
    size_t n;
    int64_t merge;
    mm_rule rule;
    size_t tokens; /* what the segments hold */
} mm_layout;

/* The body's mm_layout, merge and mm_rule into *out (its segments new;
 * mm_layout_free is due either way). tokens_per_second spaces the frames
 * of a video that gives seconds_per_grid. Errors name the field: 400 for
 * types, unknown keys or a missing mm_rule, 422 for a side that merge
 * does not divide or a count past the limits. */
int mm_layout_decode(const json_doc *doc, double tokens_per_second, size_t max_tokens,
                     mm_layout *out, api_error *err);

/* The positions of one row of `tokens` slots ([tokens][3]): the layout's
 * tokens fill the slots whose mask is 1 (mask NULL: every slot), in order;
 * a masked slot gets [0, 0, 0]. The caller has checked that the kept slots
 * number l->tokens. */
void mm_layout_row(const mm_layout *l, const uint8_t *mask, size_t tokens, int64_t *pos3);

void mm_layout_free(mm_layout *l);

#endif /* MM_LAYOUT_H */

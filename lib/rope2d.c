/*
 * rope2d.c - the 2-D RoPE of vision encoders (posenc.h pe_rope2d): each
 * variant is a list of D/2 slots, a slot being a pair of channels, its
 * frequency and the coordinate (plus a shift) that turns it. The cos/sin
 * and the rotation are 1-D RoPE's (rope_rotate.h).
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "rope_rotate.h"

/* Group g (0: slots k < D/4, 1: the rest) of a variant: its pairs are
 * pairs first .. first + D/4 - 1 of a rotation with `layout` and `half`
 * over the channels from `at` of the head, turned by coordinate `axis`
 * (0 row, 1 col) plus `shift`. */
typedef struct group_map {
    pe_rope_layout layout;
    size_t half, at, first;
    unsigned axis;
    int64_t shift;
} group_map;

static group_map group_of(const pe_rope2d *r, size_t g)
{
    size_t q = r->head_dim / 4;

    switch (r->variant) {
    case PE_ROPE2D_LLAMA4: /* complex pairs: col first, 1-based */
        return (group_map){PE_ROPE_INTERLEAVED, 0, 0, g * q, g ? 0u : 1u, 1};
    case PE_ROPE2D_GEMMA4: /* two rotate-half heads of D/2: col, then row */
        return (group_map){PE_ROPE_HALF, q, g * 2 * q, 0, g ? 0u : 1u, 0};
    case PE_ROPE2D_QWEN_VIT:
    case PE_ROPE2D_PIXTRAL:
        break;
    }
    return (group_map){PE_ROPE_HALF, 2 * q, 0, g * q, g ? 1u : 0u, 0}; /* row, then col */
}

/* The frequency of slot k. */
static double slot_freq(const pe_rope2d *r, size_t k)
{
    size_t q = r->head_dim / 4, j = k % q;

    if (r->variant == PE_ROPE2D_PIXTRAL) /* one ladder over D: rows even, cols odd */
        return pe_inv_freq(r->base, 2 * j + (k >= q), r->head_dim);
    return pe_inv_freq(r->base, j, r->head_dim / 2);
}

/* One row: the two groups of D/4 slots, each with its own pairs. */
static void rope2d_row(const pe_rope2d *r, const double *freq, const int64_t *coord, size_t width,
                       const float *x, float *out)
{
    size_t hd = r->head_dim, q = hd / 4;
    bool unturned = coord[0] == PE_ROPE2D_UNTURNED && coord[1] == PE_ROPE2D_UNTURNED;
    double c[PE_PAIR_CHUNK], s[PE_PAIR_CHUNK];

    for (size_t g = 0; g < 2; g++) {
        group_map map = group_of(r, g);
        double p = unturned ? 0.0 : (double)(coord[map.axis] + map.shift);
        for (size_t i0 = 0; i0 < q; i0 += PE_PAIR_CHUNK) {
            size_t m = q - i0 < PE_PAIR_CHUNK ? q - i0 : PE_PAIR_CHUNK;
            pe_cos_sin(freq + g * q + i0, m, 1.0, p, c, s);
            for (size_t h0 = map.at; h0 + hd <= width + map.at; h0 += hd)
                pe_rotate_pairs(map.layout, map.half, map.first + i0, m, c, s, x ? x + h0 : NULL,
                                out + h0);
        }
    }
}

pe_status pe_rope2d_apply(const pe_rope2d *r, const int64_t *coords, size_t n, size_t width,
                          const float *x, float *out)
{
    size_t hd = r->head_dim;

    if (hd == 0 || hd % 4 != 0 || width % hd != 0 || !(r->base > 0) || !isfinite(r->base))
        return PE_EINVAL;
    double *freq = malloc(hd / 2 * sizeof *freq); /* owned: slot k's frequency */
    if (!freq)
        return PE_ENOMEM;
    for (size_t k = 0; k < hd / 2; k++)
        freq[k] = slot_freq(r, k);
#pragma omp parallel for schedule(static) if (n * width >= PE_PARALLEL_MIN_WORK)
    for (size_t i = 0; i < n; i++)
        rope2d_row(r, freq, coords + 2 * i, width, x ? x + i * width : NULL, out + i * width);
    free(freq);
    return PE_OK;
}

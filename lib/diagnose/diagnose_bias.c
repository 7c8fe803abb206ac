/*
 * diagnose_bias.c - the searches for relative biases.
 *
 * ALiBi: every head's bias is one slope times a fixed pattern, -|p_i-p_j|
 * (symmetric), p_j (bloom) or p_j - p_last (mpt), so a least-squares slope per head and form
 * is exact; the form is the one that leaves the smaller residual, a
 * negative slope is a flipped sign, and the slopes found are snapped to
 * the paper's or to a known wrong formula when every head agrees with it.
 * T5: the bias is table[bucket(rel)][h]; a fixed list of bucket settings
 * (direction x num_buckets x max_distance x bidirectional) is scored on one
 * sample per relative distance (row 0 and column 0), and the best rendered.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_common.h"

/* The slope sets clients get wrong: the paper's, the power-of-two formula
 * used for any head count, and the paper's for the next power of two. */
static void slope_set(size_t heads, int which, double *out)
{
    if (which == 0) {
        pe_alibi_slopes(heads, out);
        return;
    }
    if (which == 1) {
        for (size_t h = 0; h < heads; h++)
            out[h] = pow(2.0, -8.0 * (double)(h + 1) / (double)heads);
        return;
    }
    size_t p2 = 1;
    while (p2 < heads && p2 < ((size_t)1 << 30))
        p2 *= 2;
    for (size_t h = 0; h < heads; h++)
        out[h] = pow(2.0, -8.0 * (double)(h + 1) / (double)p2);
}

static bool close_rel(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fmax(fabs(a), fabs(b));
}

/* ALiBi's fixed pattern between positions pi and pj, with plast the last
 * token's: -|pi - pj| (symmetric), pj (bloom) or pj - plast (mpt). The
 * form index is the pe_alibi_form value. */
static double alibi_pattern(int form, double pi, double pj, double plast)
{
    return form == PE_ALIBI_SYMMETRIC ? -fabs(pi - pj) : form == PE_ALIBI_BLOOM ? pj : pj - plast;
}

#define DX_ALIBI_FORMS 3

/* The least-squares slope of head h's bias for one form (0 when none is
 * finite); its squared residual is added to *res. */
static double fit_head_slope(const pe_dx_subject *s, size_t h, int form, double *res)
{
    size_t T = s->rows;
    const float *b = s->a + h * T * T;
    double num = 0, den = 0;
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < T; j++) {
            double pat = alibi_pattern(form, (double)s->positions[i], (double)s->positions[j],
                                       (double)s->positions[T - 1]);
            num += b[i * T + j] * pat;
            den += pat * pat;
        }
    double sl = den > 0 ? num / den : 0;
    sl = isfinite(sl) ? sl : 0;
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < T; j++) {
            double pat = alibi_pattern(form, (double)s->positions[i], (double)s->positions[j],
                                       (double)s->positions[T - 1]);
            double e = b[i * T + j] - sl * pat;
            *res += e * e;
        }
    return sl;
}

/* Bias subject: the slopes per head (into found; cand is scratch of
 * DX_ALIBI_FORMS * H) of the form that leaves the smallest residual (the
 * claim's unless another halves it), and the sign most of them share,
 * folded in; the form and sign go to best. */
static void fit_bias_slopes(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_variant *best,
                            double *found, double *cand)
{
    size_t H = s->heads;
    double res[DX_ALIBI_FORMS] = {0};
    for (int form = 0; form < DX_ALIBI_FORMS; form++)
        for (size_t h = 0; h < H; h++)
            cand[form * H + h] = fit_head_slope(s, h, form, &res[form]);
    int form = (int)claim->alibi_form;
    for (int f = 0; f < DX_ALIBI_FORMS; f++)
        if (f != form && (res[f] < 0.5 * res[form] || !isfinite(res[form])) && isfinite(res[f]))
            form = f;
    memcpy(found, cand + form * H, H * sizeof *found);
    best->alibi_form = (pe_alibi_form)form;
    size_t neg = 0;
    for (size_t h = 0; h < H; h++)
        neg += found[h] < 0;
    best->alibi_sign = 2 * neg > H ? -1.0 : 1.0;
    for (size_t h = 0; h < H; h++)
        found[h] *= best->alibi_sign;
}

/* snap: found becomes a whole known set when every head agrees with it
 * (cand: scratch of H) */
static void snap_to_known_set(size_t H, double *found, double *cand)
{
    for (int which = 0; which < 3; which++) {
        slope_set(H, which, cand);
        bool all = true;
        for (size_t h = 0; h < H && all; h++)
            all = close_rel(found[h], cand[h], 1e-5);
        if (all) {
            memcpy(found, cand, H * sizeof *found);
            return;
        }
    }
}

/* Whether any head of found differs from the paper's slopes (cand: scratch
 * of H). */
static bool differs_from_paper(size_t H, const double *found, double *cand)
{
    pe_alibi_slopes(H, cand);
    bool any = false;
    for (size_t h = 0; h < H; h++)
        any = any || !pe_dx_float32_equal(found[h], cand[h]);
    return any;
}

pe_status pe_dx_search_alibi(const pe_dx_subject *s, const pe_dx_variant *claim,
                             pe_dx_variant *best, double **slopes_out)
{
    size_t H = s->heads;
    double *found = malloc(H * sizeof *found);                /* moves to *slopes_out */
    double *cand = malloc(DX_ALIBI_FORMS * H * sizeof *cand); /* owned */

    *best = *claim;
    if (!found || !cand) {
        free(found);
        free(cand);
        return PE_ENOMEM;
    }
    if (s->kind == PE_DX_SUBJ_ALIBI_SLOPES) {
        for (size_t h = 0; h < H; h++)
            found[h] = s->a[h];
    } else {
        fit_bias_slopes(s, claim, best, found, cand);
    }
    snap_to_known_set(H, found, cand);
    bool any = differs_from_paper(H, found, cand);
    free(cand);
    if (!any) {
        free(found);
        return PE_OK; /* the paper's slopes: best.slopes stays NULL */
    }
    *slopes_out = found;
    best->slopes = found;
    return PE_OK;
}

pe_status pe_dx_search_t5(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_variant *best)
{
    size_t H = s->heads, T = s->rows;
    const pe_t5 *c = &claim->t5;
    size_t nbs[5] = {c->num_buckets, 32, 16, 64, 128};
    int64_t mds[9] = {c->max_distance, 128, 256, 64, 512, 1024, 32, 16, 2048};
    double best_err = INFINITY;

    *best = *claim;
    for (int rev = 0; rev < 2; rev++)
        for (int bi = 0; bi < 2; bi++)
            for (size_t a = 0; a < 5; a++)
                for (size_t b = 0; b < 9; b++) {
                    size_t nb = nbs[a];
                    int64_t md = mds[b];
                    bool bidir = bi ? !c->bidirectional : c->bidirectional;
                    if (nb > c->num_buckets || nb < (bidir ? 4u : 2u) ||
                        md <= (int64_t)(bidir ? nb / 4 : nb / 2) || (a > 0 && nb == nbs[0]) ||
                        (b > 0 && md == mds[0]))
                        continue;
                    /* one sample per relative distance: row 0, column 0 */
                    double err = 0;
                    for (size_t k = 0; k < 2 * T - 1 && isfinite(err); k++) {
                        size_t i = k < T ? 0 : k - T + 1, j = k < T ? k : 0;
                        int64_t rel = s->positions[j] - s->positions[i];
                        if (rev)
                            rel = -rel;
                        size_t bucket = pe_t5_bucket(rel, bidir, nb, md);
                        for (size_t h = 0; h < H; h++) {
                            double e = fabs((double)s->a[(h * T + i) * T + j] -
                                            c->table[bucket * c->heads + h]);
                            err = isnan(e) ? INFINITY : fmax(err, e);
                        }
                    }
                    if (err < best_err - 1e-9) {
                        best_err = err;
                        best->t5_reversed = rev;
                        best->t5.num_buckets = nb;
                        best->t5.max_distance = md;
                        best->t5.bidirectional = bidir;
                    }
                }
    return PE_OK;
}

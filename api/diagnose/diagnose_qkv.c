/*
 * diagnose_qkv.c - /diagnose for a q/k/v subject. posenc runs the one
 * forward pass of /apply (forward.h) on the client's input and compares:
 *   - a subject within tolerance of /apply's own q, k and v is a match;
 *   - v carries no position: if it differs, the projection differs
 *     (projection_mismatch, always unexplained);
 *   - under a rope claim, q and k are diagnosed as rotated vectors: x =
 *     the pass's q/k as the rotation sees them (forward_result.pre; for
 *     MLA only each head's rope channels, the others must match as they
 *     are), a = the client's (pe_diagnose, kind ROPE_ENCODED). When that
 *     explains nothing, x permuted by the Meta <-> Hugging Face
 *     permutation of the rotary dimensions is tried (either direction):
 *     if that explains it, the finding is weights_permuted;
 *   - under a rope claim, a v that differs but keeps posenc's head norms
 *     is searched as a rotated vector too: a port that rotated v as it
 *     rotates k is value_rotated, not a projection_mismatch;
 *   - under other claims q/k/v carry no rotation: any difference is a
 *     projection_mismatch.
 * Nothing here projects, normalises or rotates: the search re-encodes
 * from the pass's outputs only.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose_qkv.h"
#include "diagnose_qk_norm.h"
#include "diagnose_batch.h"
#include "diagnose_compare.h"
#include "diagnose_decode.h"
#include "diagnose_nd.h"
#include "diagnose_transposed.h"
#include "diagnose_write.h"
#include "forward.h"
#include "json/array_writer.h"

enum { Q = 0, K = 1, V = 2 };

/* Everything computed for the answer; all buffers owned. */
typedef struct qkv_work {
    size_t rows, cols[DX_ARRAYS];
    size_t rot_head;                    /* width of a head's rotated channels */
    forward_result pass;                /* /apply's forward pass, pre kept */
    float *want[DX_ARRAYS];             /* dense q, k, v as /apply returns them */
    float *x[DX_ARRAYS], *a[DX_ARRAYS]; /* the rotated channels of pre and of the subject */
    size_t rot_cols[DX_ARRAYS];         /* their width */
    pe_dx_errors claimed[DX_ARRAYS];
    pe_dx_result res[DX_ARRAYS]; /* under rope: q, k, and v when it may be rotated */
    bool diagnosed[DX_ARRAYS], permuted[2];
    bool unrotated_off[DX_ARRAYS]; /* channels the rope leaves differ */
    bool off[DX_ARRAYS];           /* differs before any rotation: projection_mismatch */
    bool v_rotated;                /* v is posenc's v turned by position (value_rotated) */
    float *permuted_x;             /* scratch for the permuted trial */
    double budget_s;               /* each pe_diagnose's bound: half the request's (q, k) */
    diag_transposed tr;            /* the x.W-for-x.W^T trial */
    diag_qk_norm qn;               /* the q/k norm trial */
} qkv_work;

static void work_free(qkv_work *w)
{
    forward_result_free(&w->pass);
    free(w->permuted_x);
    for (int i = 0; i < DX_ARRAYS; i++)
        free(w->want[i]);
    for (int i = 0; i < DX_ARRAYS; i++) {
        free(w->x[i]);
        free(w->a[i]);
        pe_dx_result_free(&w->res[i]);
    }
}

/* Heads of a [rows][cols] array (head_dim wide) with a value outside tol. */
static void write_heads_differing(strbuf *sb, const float *got, const float *want, size_t rows,
                                  size_t cols, size_t head_dim, pe_dx_tolerance tol)
{
    size_t listed = 0;

    strbuf_putc(sb, '[');
    for (size_t h = 0; h < cols / head_dim; h++) {
        bool differs = false;
        for (size_t t = 0; t < rows && !differs; t++)
            for (size_t j = h * head_dim; j < (h + 1) * head_dim && !differs; j++) {
                double g = got[t * cols + j], wv = want[t * cols + j];
                differs = fabs(g - wv) > tol.atol + tol.rtol * fabs(wv);
            }
        if (differs)
            strbuf_printf(sb, "%s%zu", listed++ ? "," : "", h);
    }
    strbuf_putc(sb, ']');
}

/* Meta <-> HF permutation of the first `rotary` dims of every head:
 * to_hf moves Meta's pair (2i, 2i+1) to (i, i + rotary/2). */
static void permute_heads(const float *in, float *out, size_t rows, size_t cols, size_t head_dim,
                          size_t rotary, bool to_hf)
{
    memcpy(out, in, rows * cols * sizeof *out);
    for (size_t t = 0; t < rows; t++)
        for (size_t h = 0; h < cols / head_dim; h++) {
            const float *src = in + t * cols + h * head_dim;
            float *dst = out + t * cols + h * head_dim;
            for (size_t i = 0; i < rotary / 2; i++)
                for (size_t c = 0; c < 2; c++) {
                    if (to_hf)
                        dst[c * (rotary / 2) + i] = src[2 * i + c];
                    else
                        dst[2 * i + c] = src[c * (rotary / 2) + i];
                }
        }
}

/* Column block i (q, k or v) of a [rows][width] pass array, dense. */
static float *dense_block(const float *all, const forward_plan *p, int i, size_t rows)
{
    size_t at = i == Q ? 0 : i == K ? p->qd : p->qd + p->kvd;
    size_t cols = i == Q ? p->qd : i == K ? p->kvd : p->vd;
    float *out = malloc(rows * cols * sizeof *out); /* the caller's */

    if (out)
        for (size_t t = 0; t < rows; t++)
            memcpy(out + t * cols, all + t * p->width + at, cols * sizeof *out);
    return out;
}

/* Channels [offset, offset + width) of every head of a dense
 * [rows][heads * head_dim] array into out [rows][heads * width]. */
static void gather_rotated(const float *in, size_t rows, size_t heads, size_t head_dim,
                           size_t offset, size_t width, float *out)
{
    for (size_t t = 0; t < rows; t++)
        for (size_t h = 0; h < heads; h++)
            memcpy(out + (t * heads + h) * width, in + (t * heads + h) * head_dim + offset,
                   width * sizeof *out);
}

/* Whether the channels outside [offset, offset + width) of any head of
 * got[n] and want[n] differ beyond tol. */
static bool unrotated_differ(const float *got, const float *want, size_t n, size_t head_dim,
                             size_t offset, size_t width, pe_dx_tolerance tol)
{
    for (size_t j = 0; j < n; j++) {
        size_t c = j % head_dim;
        if (c >= offset && c < offset + width)
            continue;
        double g = got[j], wv = want[j];
        if (!(fabs(g - wv) <= tol.atol + tol.rtol * fabs(wv)))
            return true;
    }
    return false;
}

/* What the rotation search reads for q (i = Q), k or v: the pass's
 * array as the rotation sees it and the client's, restricted to the
 * rotated channels of each head (all of them but for MLA and a partial
 * rotation). */
static int rotated_views(const diag_request *dr, const forward_plan *p, qkv_work *w, int i)
{
    const model *m = dr->rq.model;
    size_t head_dim = m->head_dim, heads = w->cols[i] / head_dim;
    float *pre = dense_block(w->pass.pre, p, i, w->rows);

    w->rot_cols[i] = heads * p->rot_width;
    if (!pre)
        return -1;
    if (p->rot_width == head_dim) {
        w->x[i] = pre;
        return 0;
    }
    w->x[i] = malloc(w->rows * w->rot_cols[i] * sizeof(float));
    w->a[i] = malloc(w->rows * w->rot_cols[i] * sizeof(float));
    if (!w->x[i] || !w->a[i]) {
        free(pre);
        return -1;
    }
    gather_rotated(pre, w->rows, heads, head_dim, p->rot_offset, p->rot_width, w->x[i]);
    gather_rotated(dr->arr[i].data, w->rows, heads, head_dim, p->rot_offset, p->rot_width, w->a[i]);
    w->unrotated_off[i] = unrotated_differ(dr->arr[i].data, w->want[i], w->rows * w->cols[i],
                                           head_dim, p->rot_offset, p->rot_width, dr->tol);
    free(pre);
    return 0;
}

/* /apply's q, k and v for the client's input, dense. */
static int run_pass(const diag_request *dr, const forward_plan *p, qkv_work *w, api_error *err)
{
    if (forward_run(&dr->rq, p, true, &w->pass, err))
        return -1;
    for (int i = 0; i < DX_ARRAYS; i++)
        if (!(w->want[i] = dense_block(w->pass.qkv, p, i, w->rows)))
            return api_fail_oom(err);
    return 0;
}

/* pe_diagnose of the client's q (i = Q) or k against posenc's before
 * rotation; then the permuted trials when that explains nothing. */
static int diagnose_rotation(const diag_request *dr, const pe_dx_variant *claim, qkv_work *w, int i,
                             api_error *err)
{
    const request *rq = &dr->rq;
    pe_dx_subject subj = {.kind = PE_DX_SUBJ_ROPE_ENCODED,
                          .rows = w->rows,
                          .cols = w->rot_cols[i],
                          .x = w->x[i],
                          .a = w->a[i] ? w->a[i] : dr->arr[i].data,
                          .positions = rq->positions,
                          .batch = rq->batched ? rq->batch : 1,
                          .budget_s = w->budget_s};
    bool nd = claim->positions3 != NULL; /* vision triples: pe_diagnose_nd's search */
    pe_status st = nd ? pe_diagnose_nd(&subj, claim, dr->other_rule3, dr->tol, &w->res[i])
                      : pe_diagnose(&subj, claim, dr->tol, &w->res[i]);
    if (st == PE_OK)
        diag_require_finite_best(&w->res[i]);

    w->diagnosed[i] = true;
    for (int to_hf = 1;
         st == PE_OK && !nd && i != V && w->res[i].verdict == PE_DX_UNEXPLAINED && to_hf >= 0;
         to_hf--) {
        pe_dx_result trial = {0};
        /* q comes first and is the wider: its scratch serves k too */
        if (!w->permuted_x && !(w->permuted_x = malloc(w->rows * w->rot_cols[i] * sizeof(float))))
            return api_fail_oom(err);
        permute_heads(w->x[i], w->permuted_x, w->rows, w->rot_cols[i], claim->rope.head_dim,
                      claim->rope.rotary_dim, to_hf);
        subj.x = w->permuted_x;
        st = pe_diagnose(&subj, claim, dr->tol, &trial);
        if (st == PE_OK)
            diag_require_finite_best(&trial);
        if (st == PE_OK && trial.verdict != PE_DX_UNEXPLAINED) {
            pe_dx_result_free(&w->res[i]);
            w->res[i] = trial;
            w->permuted[i] = true;
        } else {
            pe_dx_result_free(&trial);
        }
    }
    if (st == PE_EINVAL)
        return api_fail(err, API_E_INVALID_SHAPE, dr->names[i],
                        "%s cannot be read under the claim (positions must lie in [0, 2^40])",
                        dr->names[i]);
    return st == PE_OK ? 0 : api_fail_oom(err);
}

static bool v_differs(const diag_request *dr, const qkv_work *w, int i)
{
    return dr->arr[i].data && w->claimed[i].mismatched > 0;
}

/* Whether a [rows][cols] differs from x before any rotation: a rotation
 * (with one constant factor) keeps |a_h| / |x_h| the same for every row
 * and head of head_dim. */
static bool norms_differ(const float *x, const float *a, size_t rows, size_t cols, size_t head_dim,
                         pe_dx_tolerance tol)
{
    double ratio = -1, slack = tol.atol * sqrt((double)head_dim);

    for (size_t t = 0; t < rows; t++)
        for (size_t h = 0; h < cols / head_dim; h++) {
            double nx = 0, na = 0;
            for (size_t j = h * head_dim; j < (h + 1) * head_dim; j++) {
                nx += (double)x[t * cols + j] * x[t * cols + j];
                na += (double)a[t * cols + j] * a[t * cols + j];
            }
            nx = sqrt(nx);
            na = sqrt(na);
            if (nx <= slack) {
                if (na > 2 * slack)
                    return true;
                continue;
            }
            if (ratio < 0)
                ratio = na / nx;
            else if (fabs(na / nx - ratio) > 1e-3 * ratio + slack / nx)
                return true;
        }
    return false;
}

/* Whether the search of v as a rotated vector is worth running: under
 * rope, v differs, its heads are as wide as k's and rotated from their
 * first channel (not MLA's), and every head keeps posenc's norm (what a
 * rotation leaves). */
static bool v_may_be_rotated(const diag_request *dr, const forward_plan *p, const qkv_work *w)
{
    size_t head_dim = dr->rq.model->head_dim;

    return dr->rq.scheme.kind == SCHEME_ROPE && v_differs(dr, w, V) && p->vd == p->kvd &&
           p->rot_offset == 0 && head_dim > 0 && p->vd % head_dim == 0 &&
           !norms_differ(w->want[V], dr->arr[V].data, w->rows, w->cols[V], head_dim, dr->tol);
}

/* Whether v was found rotated: its search explains it, the channels the
 * rotation leaves are posenc's, and some row turns (all at position 0 is
 * v unrotated, perhaps scaled: a projection difference). */
static bool v_found_rotated(const diag_request *dr, const qkv_work *w)
{
    const pe_dx_variant *b = &w->res[V].best;

    if (!w->diagnosed[V] || w->res[V].verdict == PE_DX_UNEXPLAINED || w->unrotated_off[V])
        return false;
    if (b->positions3) /* vision triples */
        return true;
    for (size_t t = 0; t < w->rows; t++)
        if ((b->positions ? b->positions[t] : dr->rq.positions[t]) + b->offset != 0)
            return true;
    return false;
}

/* Which arrays differ in their projection: v (it carries no position)
 * unless it was found rotated, q/k under a claim without rotation, and
 * q/k under rope when nothing explains them and their head norms differ
 * from posenc's. */
static void mark_projection(const diag_request *dr, qkv_work *w, bool rotation)
{
    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!rotation || i == V)
            w->off[i] = v_differs(dr, w, i) && !(i == V && w->v_rotated);
        else
            w->off[i] = w->unrotated_off[i] ||
                        (w->diagnosed[i] && w->res[i].verdict == PE_DX_UNEXPLAINED &&
                         !w->permuted[i] &&
                         norms_differ(w->x[i], w->a[i] ? w->a[i] : dr->arr[i].data, w->rows,
                                      w->rot_cols[i], w->rot_head, dr->tol));
    }
}

/* Arrays the transposed trial reproduces (explains), or whose error it
 * cuts at least tenfold (the contract's significance rule). */
static bool transposed_helps(const qkv_work *w, int i)
{
    return w->tr.flipped[i] &&
           (w->tr.explains || 10 * w->tr.errors[i].max_abs <= w->claimed[i].max_abs);
}

static bool write_transposed(strbuf *sb, const qkv_work *w)
{
    static const char *const names[] = {"q", "k", "v"};
    char message[400], outputs[32] = "";
    bool any = false;
    double before = 0, after = 0;

    for (int i = 0; i < DX_ARRAYS; i++)
        if (transposed_helps(w, i)) {
            size_t used = strlen(outputs);
            snprintf(outputs + used, sizeof outputs - used, "%s\"%s\"", any ? "," : "", names[i]);
            before = before > w->claimed[i].max_abs ? before : w->claimed[i].max_abs;
            after = after > w->tr.errors[i].max_abs ? after : w->tr.errors[i].max_abs;
            any = true;
        }
    if (!any)
        return false;
    snprintf(message, sizeof message,
             "%s computed as x.W with W stored [out][in] where x.W^T was meant (a transposed "
             "projection matrix); with the transpose the maximum error drops from %.3g to %.3g",
             outputs, before, after);
    strbuf_puts(sb, "{\"code\":\"weights_transposed\",\"message\":");
    strbuf_put_json_string(sb, message);
    strbuf_printf(sb, ",\"evidence\":{\"outputs\":[%s],\"error_before\":", outputs);
    diag_put_float(sb, before);
    strbuf_puts(sb, ",\"error_after\":");
    diag_put_float(sb, after);
    strbuf_puts(sb, "}}");
    return true;
}

static void write_qk_norm(strbuf *sb, const diag_request *dr, const qkv_work *w)
{
    static const char *const what[] =
        {[DIAG_QK_MISSING] = "without the model's q/k norm",
         [DIAG_QK_AFTER_ROPE] = "with their norm applied after the rotation instead of before",
         [DIAG_QK_WHOLE_PROJECTION] = "with their norm taken over the whole projection instead "
                                      "of each head",
         [DIAG_QK_BEFORE_ROPE] = "with their norm applied before the rotation instead of after"};
    double before = 0, after = 0;
    char message[400];

    for (int i = Q; i <= K; i++)
        if (dr->arr[i].data) {
            before = fmax(before, w->claimed[i].max_abs);
            after = fmax(after, w->qn.errors[i].max_abs);
        }
    snprintf(message, sizeof message,
             "q and k were computed %s; with the norm where model '%s' has it the maximum error "
             "drops from %.3g to %.3g",
             what[w->qn.where], dr->rq.model->name, before, after);
    strbuf_puts(sb, "{\"code\":\"qk_norm_mismatch\",\"message\":");
    strbuf_put_json_string(sb, message);
    strbuf_puts(sb, ",\"evidence\":{\"where\":");
    strbuf_put_json_string(sb, diag_qk_where_name(w->qn.where));
    strbuf_puts(sb, ",\"error_before\":");
    diag_put_float(sb, before);
    strbuf_puts(sb, ",\"error_after\":");
    diag_put_float(sb, after);
    strbuf_puts(sb, "}}");
}

/* v rotated by position as k is: /apply (and attention) leaves v as
 * projected. */
static void write_value_rotated(strbuf *sb, const qkv_work *w)
{
    char message[400];
    double before = w->claimed[V].max_abs, after = w->res[V].best_errors.max_abs;

    snprintf(message, sizeof message,
             "v is turned by position as RoPE turns q and k: posenc's v rotated %s reproduces it "
             "(the maximum error of v drops from %.3g to %.3g); RoPE turns only q and k, leave v "
             "as projected",
             w->res[V].verdict == PE_DX_MATCH ? "by the claimed rope"
                                              : "by the rotation the findings name",
             before, after);
    strbuf_puts(sb, "{\"code\":\"value_rotated\",\"message\":");
    strbuf_put_json_string(sb, message);
    strbuf_puts(sb, ",\"evidence\":{\"outputs\":[\"v\"],\"error_before\":");
    diag_put_float(sb, before);
    strbuf_puts(sb, ",\"error_after\":");
    diag_put_float(sb, after);
    strbuf_puts(sb, "}}");
}

static void write_findings(strbuf *sb, const diag_request *dr, const qkv_work *w, bool rotation,
                           bool projection)
{
    static const char *const names[] = {"q", "k", "v"};
    bool seen[PE_DX_CODE_COUNT] = {false}, first = true;
    const model *m = dr->rq.model;

    strbuf_puts(sb, ",\"findings\":[");
    if (w->qn.explains) {
        write_qk_norm(sb, dr, w);
        strbuf_putc(sb, ']');
        return;
    }
    if (write_transposed(sb, w)) {
        if (w->tr.explains) {
            strbuf_putc(sb, ']');
            return;
        }
        strbuf_putc(sb, ',');
    }
    if (projection) {
        char message[600] = "";
        for (int i = 0; i < DX_ARRAYS; i++)
            if (w->off[i]) {
                size_t used = strlen(message);
                snprintf(message + used, sizeof message - used,
                         "%s%s differs from posenc's projection (max error %.3g in %.3g%% of its "
                         "values) %s: the weights, norm or input differ, not the encoding.",
                         used ? " " : "", names[i], w->claimed[i].max_abs,
                         100 * w->claimed[i].mismatched,
                         i == V || !rotation ? "although it carries no position"
                                             : "before any rotation (its head norms differ)");
            }
        strbuf_puts(sb, "{\"code\":\"projection_mismatch\",\"message\":");
        strbuf_put_json_string(sb, message);
        strbuf_puts(sb, ",\"evidence\":{\"outputs\":[");
        bool any = false;
        for (int i = 0; i < DX_ARRAYS; i++)
            if (w->off[i]) {
                strbuf_printf(sb, "%s\"%s\"", any ? "," : "", names[i]);
                any = true;
            }
        strbuf_puts(sb, "],\"heads\":");
        int shown = w->off[V] ? V : w->off[Q] ? Q : K;
        write_heads_differing(sb, dr->arr[shown].data, w->want[shown], w->rows, w->cols[shown],
                              m->head_dim, dr->tol);
        strbuf_puts(sb, "}}");
        first = false;
    }
    if (rotation && (w->permuted[Q] || w->permuted[K])) {
        strbuf_printf(sb, "%s{\"code\":\"weights_permuted\",\"message\":", first ? "" : ",");
        strbuf_put_json_string(
            sb, w->permuted[Q] && w->permuted[K]
                    ? "q and k match once the rotary rows of Wq and Wk are permuted between the "
                      "Meta (pairs 2i, 2i+1) and Hugging Face (pairs i, i + rotary_dim/2) order: "
                      "the checkpoint's weights were converted for the other layout; convert them "
                      "(or use the rotation they were converted for)"
                : w->permuted[Q] ? "q matches once the rotary rows of Wq are permuted between "
                                   "the Meta and Hugging Face order"
                                 : "k matches once the rotary rows of Wk are permuted between "
                                   "the Meta and Hugging Face order");
        strbuf_puts(sb, ",\"evidence\":{}}");
        first = false;
    }
    if (rotation && w->v_rotated) {
        strbuf_puts(sb, first ? "" : ",");
        write_value_rotated(sb, w);
        first = false;
    }
    for (int i = Q; rotation && i <= V; i++) {
        if (!w->diagnosed[i] || (i == V && !w->v_rotated))
            continue;
        char prefix[8];
        snprintf(prefix, sizeof prefix, "%s: ", names[i]);
        for (size_t f = 0; f < w->res[i].n_findings; f++) {
            pe_dx_code code = w->res[i].findings[f].code;
            if (seen[code])
                continue;
            seen[code] = true;
            strbuf_puts(sb, first ? "" : ",");
            if (diag_nd_finding(dr, &w->res[i], f))
                diag_write_nd_finding(sb, dr, &w->res[i], f, dr->rq.batch, dr->rq.tokens, prefix,
                                      NULL);
            else
                diag_write_finding(sb, &w->res[i], f, SCHEME_ROPE, 0, prefix, NULL);
            first = false;
        }
    }
    strbuf_putc(sb, ']');
}

/* One map per array, in the axes the array was sent in: bhtd arrays,
 * read as [batch][tokens][heads*head_dim], are given back as
 * [batch][heads][tokens][head_dim]. */
static int write_error_maps(strbuf *sb, const diag_request *dr, qkv_work *w, api_error *err)
{
    bool first = true;
    size_t hd = dr->rq.model->head_dim;

    strbuf_puts(sb, ",\"error_map\":{");
    for (int i = 0; i < DX_ARRAYS; i++) {
        const tensor *a = &dr->arr[i];
        if (!a->data)
            continue;
        size_t n = w->rows * w->cols[i], dim[4] = {a->dim[0], a->dim[1], a->dim[2], 0}, ndim;
        /* the claim's buffer becomes the map: it is not read again */
        diag_error_map(a->data, w->want[i], n);
        ndim = a->ndim;
        if (dr->bhtd && a->ndim == 3 && hd > 0) {
            float *sent = diag_heads_first(w->want[i], a->dim[0], a->dim[1], a->dim[2] / hd, hd);
            if (!sent)
                return api_fail_oom(err);
            free(w->want[i]);
            w->want[i] = sent; /* new, w's */
            ndim = 4;
            dim[1] = a->dim[2] / hd;
            dim[2] = a->dim[1];
            dim[3] = hd;
        }
        array_view v = array_dense(w->want[i], ndim, dim);
        strbuf_puts(sb, first ? "" : ",");
        array_write(sb, dr->names[i], &v, dr->rq.base64);
        first = false;
    }
    strbuf_putc(sb, '}');
    return 0;
}

/* The index of flat value `flat` of array i as the client sent it: axes
 * bhtd were folded to [batch][tokens][heads*head_dim] on reading, and are
 * given back as [batch][head][token][channel]. Returns the axes. */
static size_t worst_index(const diag_request *dr, int i, size_t flat, size_t *index)
{
    const tensor *a = &dr->arr[i];
    size_t hd = dr->rq.model->head_dim;

    if (!dr->bhtd || a->ndim != 3 || hd == 0) {
        diag_unflatten(flat, a->ndim, a->dim, index);
        return a->ndim;
    }
    size_t row = flat / a->dim[2], c = flat % a->dim[2];
    index[0] = row / a->dim[1];
    index[1] = c / hd;
    index[2] = row % a->dim[1];
    index[3] = c % hd;
    return 4;
}

static void write_answer(strbuf *sb, const diag_request *dr, const pe_dx_variant *claim,
                         qkv_work *w)
{
    const request *rq = &dr->rq;
    scheme_kind kind = rq->scheme.kind;
    bool rotation = kind == SCHEME_ROPE;
    mark_projection(dr, w, rotation);
    bool projection = !w->tr.explains && !w->qn.explains && (w->off[Q] || w->off[K] || w->off[V]);
    pe_dx_verdict verdict = PE_DX_MATCH;
    int worst = -1, from = w->diagnosed[Q] ? Q : K;
    double total = 0, bad = 0, best_abs = 0, best_rel = 0;

    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!dr->arr[i].data)
            continue;
        if (worst < 0 || w->claimed[i].max_abs > w->claimed[worst].max_abs)
            worst = i;
        double n = (double)(w->rows * w->cols[i]);
        total += n;
        bad += n * w->claimed[i].mismatched;
        bool searched = rotation && w->diagnosed[i] && (i != V || w->v_rotated);
        const pe_dx_errors *be = searched ? &w->res[i].best_errors : &w->claimed[i];
        best_abs = fmax(best_abs, be->max_abs);
        best_rel = fmax(best_rel, be->max_rel);
        if (searched && w->res[i].verdict > verdict)
            verdict = w->res[i].verdict;
        /* a permutation or a rotated v is structural: never a match */
        if (searched && (i == V || w->permuted[i]) && verdict == PE_DX_MATCH)
            verdict = PE_DX_EXPLAINED;
        if ((!rotation || (i == V && !searched)) && w->claimed[i].mismatched > 0)
            verdict = PE_DX_UNEXPLAINED;
    }
    if (projection)
        verdict = PE_DX_UNEXPLAINED;
    if (w->tr.explains || w->qn.explains) { /* a trial pass reproduces every array */
        const pe_dx_errors *te = w->tr.explains ? w->tr.errors : w->qn.errors;
        verdict = PE_DX_EXPLAINED;
        best_abs = best_rel = 0;
        for (int i = 0; i < DX_ARRAYS; i++)
            if (dr->arr[i].data) {
                best_abs = fmax(best_abs, te[i].max_abs);
                best_rel = fmax(best_rel, te[i].max_rel);
            }
    }
    pe_dx_errors all = w->claimed[worst];
    all.mismatched = total > 0 ? bad / total : 0;
    size_t index[4], ndim = worst_index(dr, worst, all.worst, index);

    bool truncated = (w->diagnosed[Q] && w->res[Q].truncated) ||
                     (w->diagnosed[K] && w->res[K].truncated);
    strbuf_puts(sb, "{\"verdict\":");
    strbuf_put_json_string(sb, pe_dx_verdict_name(verdict));
    strbuf_puts(sb, truncated ? ",\"truncated\":true," : ",");
    diag_write_claimed(sb, kind, claim, 0, &all, dr->names[worst], index, ndim);
    write_findings(sb, dr, w, rotation, projection);
    /* best: an /apply request with the same model */
    const pe_dx_variant *best = rotation && w->diagnosed[from] ? &w->res[from].best : claim;
    strbuf_puts(sb, ",\"best\":{");
    diag_write_best_model(sb, rq, dr->model_json);
    strbuf_puts(sb, ",\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[kind]);
    strbuf_puts(sb, ",\"params\":");
    diag_write_params(sb, kind, best, rq->model->heads); /* alibi: the model's heads */
    strbuf_putc(sb, ',');
    /* the positions found (positions_mismatch), else the claim's */
    if (claim->positions3 && rotation && w->diagnosed[from])
        diag_write_nd_positions(sb, dr, &w->res[from], rq->batch, rq->tokens);
    else
        diag_write_batch_positions(sb, best->positions ? best->positions : rq->positions, rq->batch,
                                   rq->tokens, best->offset);
    if (scheme_is_absolute(kind)) {
        strbuf_puts(sb, ",\"embed_scale\":");
        diag_put_double(sb, rq->embed_scale);
    }
    strbuf_puts(sb, ",\"max_abs_error\":");
    diag_put_float(sb, best_abs);
    strbuf_puts(sb, ",\"max_rel_error\":");
    diag_put_float(sb, best_rel);
    strbuf_putc(sb, '}');
}

/* Each array of the subject must be shaped as /apply returns it. */
static int check_shapes(const diag_request *dr, const qkv_work *w, api_error *err)
{
    static const char *const names[] = {"q", "k", "v"};
    const request *rq = &dr->rq;

    for (int i = 0; i < DX_ARRAYS; i++) {
        const tensor *a = &dr->arr[i];
        bool fits = rq->batched ? a->ndim == 3 && a->dim[0] == rq->batch && a->dim[1] == rq->tokens
                                : a->ndim == 2 && a->dim[0] == rq->tokens;
        if (!a->data || (fits && a->dim[a->ndim - 1] == w->cols[i]))
            continue;
        if (rq->batched)
            return api_fail(err, API_E_INVALID_SHAPE, names[i],
                            "%s must be [%zu][%zu][%zu] for this input and model '%s'", names[i],
                            rq->batch, rq->tokens, w->cols[i], rq->model->name);
        return api_fail(err, API_E_INVALID_SHAPE, names[i],
                        "%s must be [%zu][%zu] for this input and model '%s'", names[i], rq->tokens,
                        w->cols[i], rq->model->name);
    }
    return 0;
}

/* The claim as the search reads it: the pass's rope (MLA: over the rope
 * channels of a head), or the scheme's settings for the others. */
static void claim_of(const diag_request *dr, const forward_plan *p, pe_dx_variant *claim)
{
    const request *rq = &dr->rq;

    if (rq->scheme.kind == SCHEME_ROPE) {
        diag_claim_of_rope(&p->rope, claim);
        claim->mrope = rq->scheme.mrope;
        if (diag_nd_claim(dr)) /* vision triples or a layout */
            claim->positions3 = rq->positions_nd;
        return;
    }
    pe_dx_variant_init(claim);
    claim->base = rq->scheme.base;
    claim->sin_layout = rq->scheme.sin_layout;
    claim->embed_scale = rq->embed_scale;
}

int diag_diagnose_qkv(const api_service *svc, diag_request *dr, strbuf *sb, api_error *err)
{
    const request *rq = &dr->rq;
    qkv_work w = {0};
    forward_plan plan = {0};
    pe_dx_variant claim;
    int rc = -1;

    if (forward_plan_init(svc, rq, false, false, &plan, err))
        goto done;
    w.rows = plan.rows;
    w.cols[Q] = plan.qd;
    w.cols[K] = plan.kvd;
    w.cols[V] = plan.vd;
    w.rot_head = plan.rot_width;
    if (check_shapes(dr, &w, err) || run_pass(dr, &plan, &w, err))
        goto done;
    claim_of(dr, &plan, &claim);
    /* the model fixes the head size: never searched here (head_dim_free) */
    claim.head_dim_free = false;
    w.budget_s = (double)svc->limits.diagnose_ms / 2000.0;
    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!dr->arr[i].data)
            continue;
        size_t n = w.rows * w.cols[i];
        if (diag_check_claim_finite(dr->arr[i].data, w.want[i], n, dr->names[i], dr->arr[i].ndim,
                                    dr->arr[i].dim, err))
            goto done;
        w.claimed[i] = diag_compare(dr->arr[i].data, w.want[i], n, dr->tol);
    }
    if (diag_transposed_trial(dr, &plan, w.claimed, &w.tr, err) ||
        (!w.tr.explains && diag_qk_norm_trial(dr, &plan, w.claimed, &w.qn, err)))
        goto done;
    /* /apply's own answer is a match: the search runs only on a difference
     * (and not when the transposed projection reproduces the subject) */
    for (int i = Q; rq->scheme.kind == SCHEME_ROPE && !w.tr.explains && !w.qn.explains && i <= K;
         i++) {
        if (!dr->arr[i].data || w.claimed[i].mismatched == 0)
            continue;
        /* the search rotates pre as is: a weighted norm after the rotation
         * does not commute with it (a match needs no search) */
        if (model_post_rope_weighted(rq->model)) {
            api_fail(err, API_E_INVALID_REQUEST, "model",
                     "/diagnose cannot search the q/k of a model whose q/k norm after the "
                     "rotation has weights (HunYuan): only /apply's own answer is a match");
            goto done;
        }
        if (rotated_views(dr, &plan, &w, i)) {
            api_fail_oom(err);
            goto done;
        }
        if (diagnose_rotation(dr, &claim, &w, i, err))
            goto done;
    }
    /* a v rotated as k is: searched as k is */
    if (!w.tr.explains && !w.qn.explains && v_may_be_rotated(dr, &plan, &w)) {
        if (rotated_views(dr, &plan, &w, V)) {
            api_fail_oom(err);
            goto done;
        }
        if (diagnose_rotation(dr, &claim, &w, V, err))
            goto done;
        w.v_rotated = v_found_rotated(dr, &w);
    }
    write_answer(sb, dr, &claim, &w);
    if (dr->return_map && write_error_maps(sb, dr, &w, err))
        goto done;
    strbuf_putc(sb, '}');
    rc = 0;
done:
    work_free(&w);
    forward_plan_free(&plan);
    return rc;
}

/*
 * diagnose_qk_norm.c - qk_norm_mismatch (contract 1.3, "/diagnose
 * evidence, settled"): the forward pass of /apply (forward.h) re-run on
 * the client's input with the model's q/k norm as a port may have
 * misplaced it, each compared with the subject:
 *   missing           the projection rotated without its norm;
 *   after_rope        the norm (weights and all) applied to the rotated q/k;
 *   whole_projection  a per-head norm (RMS or LayerNorm) taken over the
 *                     whole projection of q (k), its head weight (and
 *                     bias) repeated for every head, or its per-head
 *                     weights read as one (Cohere's [heads][head_dim]);
 *   before_rope       a norm the model applies after the rotation (with
 *                     weights: HunYuan's) applied before it.
 * A variant counts only when it reproduces every array the client sent.
 */
#include <stdlib.h>
#include <string.h>

#include "diagnose_qk_norm.h"
#include "diagnose_compare.h"

const char *diag_qk_where_name(diag_qk_where where)
{
    switch (where) {
    case DIAG_QK_MISSING:
        return "missing";
    case DIAG_QK_AFTER_ROPE:
        return "after_rope";
    case DIAG_QK_WHOLE_PROJECTION:
        return "whole_projection";
    case DIAG_QK_BEFORE_ROPE:
        return "before_rope";
    case DIAG_QK_WHERE_COUNT:
        break;
    }
    return "?";
}

/* weight[group] repeated `times` times (new; NULL when out of memory). */
static float *tiled(const float *weight, size_t group, size_t times)
{
    float *out = malloc(group * times * sizeof *out); /* the caller's */
    for (size_t k = 0; out && k < times; k++)
        memcpy(out + k * group, weight, group * sizeof *out);
    return out;
}

/* A per-head norm's weights (and biases) over the whole projection: the
 * head's repeated for every head (tiled, new), or the per-head weights as
 * they are (Cohere's [heads][head_dim], borrowed: NULL in tiled). */
typedef struct whole_weights {
    float *w[4];     /* q weight, k weight, q bias, k bias (bias NULL: none);
                        borrowed, only read */
    float *tiled[4]; /* owned: what w points to when tiled */
} whole_weights;

static void whole_weights_free(whole_weights *ww)
{
    for (int i = 0; i < 4; i++)
        free(ww->tiled[i]);
}

/* 0, or -1 when out of memory. */
static int whole_weights_init(const model *m, whole_weights *ww)
{
    static const weight_id ids[4] = {W_Q_NORM_WEIGHT, W_K_NORM_WEIGHT, W_Q_NORM_BIAS,
                                     W_K_NORM_BIAS};
    memset(ww, 0, sizeof *ww);
    for (int i = 0; i < 4; i++) {
        float *src = m->weights[ids[i]].data;
        size_t heads = i % 2 ? m->kv_heads : m->heads;
        if (!src || m->qk_norm == MODEL_QK_NORM_HEAD_WEIGHTS) {
            ww->w[i] = src; /* none, or already one weight per channel */
            continue;
        }
        if (!(ww->tiled[i] = tiled(src, m->head_dim, heads)))
            return -1;
        ww->w[i] = ww->tiled[i];
    }
    return 0;
}

/* The subject's arrays against a pass's q|k|v; true when all are within
 * tolerance. scratch holds the widest block. */
static bool compare_pass(const diag_request *dr, const forward_plan *p, const float *qkv,
                         pe_dx_errors errors[DX_ARRAYS], float *scratch)
{
    const size_t at[DX_ARRAYS] = {0, p->qd, p->qd + p->kvd},
                 cols[DX_ARRAYS] = {p->qd, p->kvd, p->vd};
    bool all = true;

    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!dr->arr[i].data)
            continue;
        for (size_t r = 0; r < p->rows; r++)
            memcpy(scratch + r * cols[i], qkv + r * p->width + at[i], cols[i] * sizeof(float));
        errors[i] = diag_compare(dr->arr[i].data, scratch, p->rows * cols[i], dr->tol);
        all = all && errors[i].mismatched == 0;
    }
    return all;
}

/* One variant's pass into *r (zeroed before; the caller frees it). */
static int run_variant(const diag_request *dr, const forward_plan *p, diag_qk_where where,
                       const whole_weights *ww, forward_result *r, api_error *err)
{
    const model *m = dr->rq.model;
    model trial = *m;    /* borrows m's buffers; only the norm's settings differ */
    request rq = dr->rq; /* borrows everything: only read */

    rq.model = &trial;
    trial.qk_norm = where == DIAG_QK_WHOLE_PROJECTION ? MODEL_QK_NORM_WIDTH : MODEL_QK_NORM_NONE;
    if (where == DIAG_QK_WHOLE_PROJECTION) {
        static const weight_id ids[4] = {W_Q_NORM_WEIGHT, W_K_NORM_WEIGHT, W_Q_NORM_BIAS,
                                         W_K_NORM_BIAS};
        for (int i = 0; i < 4; i++)
            trial.weights[ids[i]].data = ww->w[i];
    }
    if (where == DIAG_QK_MISSING || where == DIAG_QK_BEFORE_ROPE)
        trial.post_rope_qk_norm = false;
    if (where == DIAG_QK_BEFORE_ROPE) { /* HunYuan's weighted RMS norm, per head */
        trial.qk_norm = MODEL_QK_NORM_PER_HEAD;
        trial.qk_norm_type = PE_NORM_RMS;
        trial.qk_norm_eps = m->post_rope_qk_norm_eps;
    }
    if (forward_run(&rq, p, false, r, err))
        return -1;
    if (where == DIAG_QK_AFTER_ROPE) /* the model's own norm, on the rotated q/k */
        model_apply_qk_norm(m, p->rows, r->qkv);
    return 0;
}

/* Whether variant `where` applies to m: the moves of a norm before the
 * rotation, or of one after it (before_rope only with weights). */
static bool variant_applies(const model *m, diag_qk_where where)
{
    bool pre = m->qk_norm != MODEL_QK_NORM_NONE, post = !pre && m->post_rope_qk_norm;
    switch (where) {
    case DIAG_QK_MISSING:
        return pre || post;
    case DIAG_QK_AFTER_ROPE:
        return pre;
    case DIAG_QK_WHOLE_PROJECTION:
        return pre && m->qk_norm != MODEL_QK_NORM_WIDTH;
    case DIAG_QK_BEFORE_ROPE:
        return post && model_post_rope_weighted(m);
    case DIAG_QK_WHERE_COUNT:
        break;
    }
    return false;
}

int diag_qk_norm_trial(const diag_request *dr, const forward_plan *p,
                       const pe_dx_errors claimed[DX_ARRAYS], diag_qk_norm *out, api_error *err)
{
    const model *m = dr->rq.model;
    float *scratch = NULL; /* owned */
    whole_weights ww = {0};
    int rc = -1;

    memset(out, 0, sizeof *out);
    bool differs = (dr->arr[0].data && claimed[0].mismatched > 0) ||
                   (dr->arr[1].data && claimed[1].mismatched > 0);
    if (!differs || m->mla || !variant_applies(m, DIAG_QK_MISSING) ||
        dr->rq.scheme.kind != SCHEME_ROPE || p->rot_width != m->head_dim)
        return 0;
    if (!(scratch = malloc(p->rows * p->qd * sizeof *scratch)) ||
        (variant_applies(m, DIAG_QK_WHOLE_PROJECTION) && whole_weights_init(m, &ww))) {
        api_fail_oom(err);
        goto done;
    }
    for (int w = 0; w < DIAG_QK_WHERE_COUNT && !out->explains; w++) {
        if (!variant_applies(m, (diag_qk_where)w))
            continue;
        forward_result r = {0};
        if (run_variant(dr, p, (diag_qk_where)w, &ww, &r, err)) {
            forward_result_free(&r);
            goto done;
        }
        pe_dx_errors errors[DX_ARRAYS] = {{0}};
        if (compare_pass(dr, p, r.qkv, errors, scratch)) {
            out->explains = true;
            out->where = (diag_qk_where)w;
            memcpy(out->errors, errors, sizeof errors);
        }
        forward_result_free(&r);
    }
    rc = 0;
done:
    free(scratch);
    whole_weights_free(&ww);
    return rc;
}

/*
 * diagnose_qk_norm.c - qk_norm_mismatch (contract 1.3, "/diagnose
 * evidence, settled"): the forward pass of /apply (forward.h) re-run on
 * the client's input with the model's q/k norm as a port may have
 * misplaced it, each compared with the subject:
 *   missing           the projection rotated without its norm;
 *   after_rope        the norm (weights and all) applied to the rotated q/k;
 *   whole_projection  a per-head RMS norm taken over the whole projection
 *                     of q (k), its head weight repeated for every head.
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
                       float *tiled_q, float *tiled_k, forward_result *r, api_error *err)
{
    const model *m = dr->rq.model;
    model trial = *m;    /* borrows m's buffers; only the norm's settings differ */
    request rq = dr->rq; /* borrows everything: only read */

    rq.model = &trial;
    trial.qk_norm = where == DIAG_QK_WHOLE_PROJECTION ? MODEL_QK_NORM_WIDTH : MODEL_QK_NORM_NONE;
    if (where == DIAG_QK_WHOLE_PROJECTION) {
        trial.weights[W_Q_NORM_WEIGHT].data = tiled_q;
        trial.weights[W_K_NORM_WEIGHT].data = tiled_k;
    }
    if (forward_run(&rq, p, false, r, err))
        return -1;
    if (where == DIAG_QK_AFTER_ROPE) /* the model's own norm, on the rotated q/k */
        model_apply_qk_norm(m, p->rows, r->qkv);
    return 0;
}

int diag_qk_norm_trial(const diag_request *dr, const forward_plan *p,
                       const pe_dx_errors claimed[DX_ARRAYS], diag_qk_norm *out, api_error *err)
{
    const model *m = dr->rq.model;
    float *scratch = NULL, *tq = NULL, *tk = NULL; /* owned */
    int rc = -1;

    memset(out, 0, sizeof *out);
    bool differs = (dr->arr[0].data && claimed[0].mismatched > 0) ||
                   (dr->arr[1].data && claimed[1].mismatched > 0);
    if (!differs || m->mla || m->qk_norm == MODEL_QK_NORM_NONE ||
        dr->rq.scheme.kind != SCHEME_ROPE || p->rot_width != m->head_dim)
        return 0;
    bool per_head_rms = m->qk_norm == MODEL_QK_NORM_PER_HEAD && m->qk_norm_type == PE_NORM_RMS;
    if (!(scratch = malloc(p->rows * p->qd * sizeof *scratch)) ||
        (per_head_rms &&
         (!(tq = tiled(m->weights[W_Q_NORM_WEIGHT].data, m->head_dim, m->heads)) ||
          !(tk = tiled(m->weights[W_K_NORM_WEIGHT].data, m->head_dim, m->kv_heads))))) {
        api_fail_oom(err);
        goto done;
    }
    for (int w = 0; w < DIAG_QK_WHERE_COUNT && !out->explains; w++) {
        if (w == DIAG_QK_WHOLE_PROJECTION && !per_head_rms)
            continue;
        forward_result r = {0};
        if (run_variant(dr, p, (diag_qk_where)w, tq, tk, &r, err)) {
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
    free(tq);
    free(tk);
    return rc;
}

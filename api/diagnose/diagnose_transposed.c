/*
 * diagnose_transposed.c - weights_transposed (contract 1.2): a client that
 * stores a projection as Hugging Face does, W [out][in], and computes x.W
 * instead of x.W^T gets a product that only exists when W is square
 * (out == d_model). posenc's fused matrix holds W^T ([d_model][out]), so
 * the client's product is x times the transpose of posenc's block: the
 * trial builds those weights and runs /apply's own forward pass with them
 * (norms, rotation and the steps after it included), so that a subject
 * rotated after the wrong product is recognised whole.
 */
#include <stdlib.h>
#include <string.h>

#include "diagnose_transposed.h"
#include "diagnose_compare.h"

enum { Q = 0, K = 1, V = 2 };

/* Block i of the fused [d][width] matrix as a dense [d][cols] matrix,
 * transposed (as a [cols][d] read) when flip; NULL when out of memory. */
static float *block_of(const pe_qkv_weights *w, size_t at, size_t cols, bool flip)
{
    size_t d = w->d_model, width = pe_qkv_width(w);
    float *out = malloc(d * cols * sizeof *out); /* the caller's */

    if (!out)
        return NULL;
    for (size_t r = 0; r < d; r++)
        for (size_t c = 0; c < cols; c++)
            out[r * cols + c] = flip ? w->w_qkv[c * width + at + r] : w->w_qkv[r * width + at + c];
    return out;
}

/* The fused weights with the flipped blocks transposed, biases kept. */
static pe_status flipped_weights(const pe_qkv_weights *w, const size_t at[DX_ARRAYS],
                                 const size_t cols[DX_ARRAYS], const bool flip[DX_ARRAYS],
                                 pe_qkv_weights *out)
{
    float *blocks[DX_ARRAYS] = {NULL}, *bias[DX_ARRAYS] = {NULL};
    pe_status st = PE_ENOMEM;

    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!(blocks[i] = block_of(w, at[i], cols[i], flip[i])))
            goto done;
        if (w->b_qkv) {
            if (!(bias[i] = malloc(cols[i] * sizeof(float))))
                goto done;
            memcpy(bias[i], w->b_qkv + at[i], cols[i] * sizeof(float));
        }
    }
    st = pe_qkv_weights_init(out, w->d_model, w->heads, w->kv_heads, w->head_dim, blocks[Q],
                             blocks[K], blocks[V], bias[Q], bias[K], bias[V]);
done:
    for (int i = 0; i < DX_ARRAYS; i++) {
        free(blocks[i]);
        free(bias[i]);
    }
    return st;
}

/* The subject's arrays against the trial pass's q|k|v. */
static void compare_with(const diag_request *dr, const forward_plan *p, const float *qkv,
                         const size_t at[DX_ARRAYS], const size_t cols[DX_ARRAYS],
                         diag_transposed *t, float *scratch)
{
    t->explains = true;
    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!dr->arr[i].data)
            continue;
        for (size_t r = 0; r < p->rows; r++)
            memcpy(scratch + r * cols[i], qkv + r * p->width + at[i], cols[i] * sizeof(float));
        t->errors[i] = diag_compare(dr->arr[i].data, scratch, p->rows * cols[i], dr->tol);
        t->explains = t->explains && t->errors[i].mismatched == 0;
    }
}

int diag_transposed_trial(const diag_request *dr, const forward_plan *p,
                          const pe_dx_errors claimed[DX_ARRAYS], diag_transposed *t, api_error *err)
{
    const model *m = dr->rq.model;
    const size_t at[DX_ARRAYS] = {0, p->qd, p->qd + p->kvd},
                 cols[DX_ARRAYS] = {p->qd, p->kvd, p->vd};
    pe_qkv_weights flipped = {0};
    forward_result r = {0};
    float *scratch = NULL;
    int rc = -1;

    memset(t, 0, sizeof *t);
    if (m->mla || !m->qkv.w_qkv)
        return 0;
    for (int i = 0; i < DX_ARRAYS; i++) {
        t->flipped[i] = dr->arr[i].data && claimed[i].mismatched > 0 && cols[i] == m->d_model;
        t->tried = t->tried || t->flipped[i];
    }
    if (!t->tried)
        return 0;
    if (flipped_weights(&m->qkv, at, cols, t->flipped, &flipped) != PE_OK ||
        !(scratch = malloc(p->rows * p->qd * sizeof *scratch) /* q is the widest */)) {
        api_fail_oom(err);
        goto done;
    }
    model trial_model = *m; /* borrows m's buffers; only .qkv is the trial's */
    trial_model.qkv = flipped;
    request trial_request = dr->rq; /* borrows everything: only read */
    trial_request.model = &trial_model;
    if (forward_run(&trial_request, p, false, &r, err))
        goto done;
    compare_with(dr, p, r.qkv, at, cols, t, scratch);
    rc = 0;
done:
    free(scratch);
    forward_result_free(&r);
    pe_qkv_weights_free(&flipped);
    return rc;
}

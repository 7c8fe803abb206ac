/*
 * diagnose_qk_norm.h - the qk_norm_mismatch trial of a q/k/v subject
 * (diagnose_qk_norm.c): a model with q/k norms (Qwen3, OLMo 2, Gemma 3,
 * Cohere, ...) whose port normalised q and k otherwise.
 */
#ifndef DIAGNOSE_QK_NORM_H
#define DIAGNOSE_QK_NORM_H

#include <stdbool.h>
#include <stddef.h>

#include "api_error.h"
#include "diagnose_decode.h"
#include "forward.h"

/* Where the subject's q/k norm is (evidence.where). */
typedef enum diag_qk_where {
    DIAG_QK_MISSING = 0,      /* no q/k norm at all */
    DIAG_QK_AFTER_ROPE,       /* the norm after the rotation, not before */
    DIAG_QK_WHOLE_PROJECTION, /* over the whole projection, not per head */
    DIAG_QK_BEFORE_ROPE,      /* the norm before the rotation, not after */
    DIAG_QK_WHERE_COUNT
} diag_qk_where;

/* "missing", "after_rope", "whole_projection", "before_rope". */
const char *diag_qk_where_name(diag_qk_where where);

/* What the trial found. */
typedef struct diag_qk_norm {
    bool explains;                  /* a variant reproduces every given array */
    diag_qk_where where;            /* that variant */
    pe_dx_errors errors[DX_ARRAYS]; /* each given array against it */
} diag_qk_norm;

/* For a rope claim on a model with q/k norms whose q or k differs
 * (claimed[i].mismatched > 0): re-run /apply's forward pass p with the norm
 * left out, moved after the rotation, and (per-head norms, RMS or
 * LayerNorm) taken over the whole projection; for a norm after the
 * rotation (Llama 4, HunYuan), left out, and (when it has weights) moved
 * before it. Compare the subject with each. A weightless norm after the
 * rotation gives the same values before it: that move is not tried.
 * Nothing is tried for MLA, a partial rotation or a model without q/k
 * norms. -1 + *err only when out of memory. */
int diag_qk_norm_trial(const diag_request *dr, const forward_plan *p,
                       const pe_dx_errors claimed[DX_ARRAYS], diag_qk_norm *out, api_error *err);

#endif /* DIAGNOSE_QK_NORM_H */

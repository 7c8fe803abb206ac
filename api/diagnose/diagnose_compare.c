/*
 * diagnose_compare.c - the measures every /diagnose subject path shares:
 * a subject against the values posenc computes, and the rule that `best`
 * must reproduce what it explains. Kept apart so that the endpoint and its
 * subject paths (diagnose.c, diagnose_qkv.c, diagnose_learned.c) call
 * down into it and never into each other in a loop.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "diagnose_compare.h"
#include "diagnose_write.h"
#include "json/tensor.h"

void diag_require_finite_best(pe_dx_result *r)
{
    if (r->verdict == PE_DX_EXPLAINED && !isfinite(r->best_errors.max_abs))
        r->verdict = PE_DX_UNEXPLAINED;
}

pe_dx_errors diag_compare(const float *got, const float *want, size_t n, pe_dx_tolerance tol)
{
    pe_dx_errors e = {0};
    size_t bad = 0;

    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]), w = fabs((double)want[i]);
        if (d > tol.atol + tol.rtol * w)
            bad++;
        double rel = d / fmax(w, tol.atol > 0 ? tol.atol : 1e-30); /* finite where want is 0 */
        if (rel > e.max_rel)
            e.max_rel = rel < FLT_MAX ? rel : FLT_MAX;
        if (d > e.max_abs || i == 0) {
            e.max_abs = d;
            e.worst = i;
            e.got = got[i];
            e.want = want[i];
        }
    }
    e.mismatched = n ? (double)bad / (double)n : 0.0;
    return e;
}

int diag_check_claim_finite(const float *got, const float *want, size_t n, const char *name,
                            size_t ndim, const size_t *dim, api_error *err)
{
    for (size_t i = 0; i < n; i++) {
        bool rendered = isfinite(want[i]);
        if (rendered && isfinite(got[i] - want[i]))
            continue;
        size_t index[TENSOR_MAX_NDIM] = {0};
        char where[96];
        int k = snprintf(where, sizeof where, "%s", name);
        diag_unflatten(i, ndim, dim, index);
        for (size_t a = 0; a < ndim && k > 0 && (size_t)k < sizeof where; a++)
            k += snprintf(where + k, sizeof where - (size_t)k, "[%zu]", index[a]);
        return api_fail(err, API_E_NON_FINITE, name,
                        rendered ? "%s differs from the claim's value by more than a float32 "
                                   "holds (the difference overflows)"
                                 : "the claim's value of %s is not a finite float32 (the "
                                   "computation overflows)",
                        where);
    }
    return 0;
}

void diag_error_map(const float *got, float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        want[i] = fabsf(got[i] - want[i]);
}

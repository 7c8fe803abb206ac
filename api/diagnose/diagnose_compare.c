/*
 * diagnose_compare.c - the measures every /diagnose subject path shares:
 * a subject against the values posenc computes, and the rule that `best`
 * must reproduce what it explains. Kept apart so that the endpoint and its
 * subject paths (diagnose.c, diagnose_qkv.c, diagnose_learned.c) call
 * down into it and never into each other in a loop.
 */
#include <float.h>
#include <math.h>

#include "diagnose_compare.h"

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

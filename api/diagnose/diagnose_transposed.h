/*
 * diagnose_transposed.h - the weights_transposed trial of a q/k/v subject
 * (diagnose_transposed.c): the client multiplied by W where W^T was meant.
 */
#ifndef DIAGNOSE_TRANSPOSED_H
#define DIAGNOSE_TRANSPOSED_H

#include <stdbool.h>
#include <stddef.h>

#include "api_error.h"
#include "diagnose_decode.h"
#include "forward.h"

/* What the trial found, per array (q, k, v). */
typedef struct diag_transposed {
    bool tried;                     /* some square projection differed */
    bool flipped[DX_ARRAYS];        /* projections transposed in the trial */
    pe_dx_errors errors[DX_ARRAYS]; /* each given array against the trial */
    bool explains;                  /* every given array within tolerance */
} diag_transposed;

/* Re-run /apply's forward pass p with the square projection matrices of
 * the arrays that differ (claimed[i].mismatched > 0) transposed, and
 * compare the subject with it. Nothing is tried (t->tried false) for MLA
 * or when no differing projection is square (d_model wide). -1 + *err
 * only when out of memory. */
int diag_transposed_trial(const diag_request *dr, const forward_plan *p,
                          const pe_dx_errors claimed[DX_ARRAYS], diag_transposed *t,
                          api_error *err);

#endif /* DIAGNOSE_TRANSPOSED_H */

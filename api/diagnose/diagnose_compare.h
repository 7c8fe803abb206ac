/*
 * diagnose_compare.h - a subject against a prediction (diagnose_compare.c), as the
 * lib measures it.
 */
#ifndef DIAGNOSE_COMPARE_H
#define DIAGNOSE_COMPARE_H

#include <stddef.h>

#include "api_error.h"
#include "diagnose/pe_diagnose.h"

/* An explained verdict whose best does not reproduce the subject finitely
 * (huge finite subjects can drive the lib's fitted factor to overflow)
 * becomes unexplained: `best` must reproduce what it explains. */
void diag_require_finite_best(pe_dx_result *r);

/* got[n] against want[n] as pe_dx_errors (the lib's measure;
 * diagnose_compare.c, as diag_require_finite_best). */
pe_dx_errors diag_compare(const float *got, const float *want, size_t n, pe_dx_tolerance tol);

/* The claim's prediction want[n] of subject array `name` (shape ndim, dim)
 * checked as /encode checks its result: every want[i] and every
 * |got[i] - want[i]| a finite float32. Else 422 non_finite naming the
 * element, so that no error, worst value or error_map of an answer can be
 * infinite (JSON has no infinity, and the number writer takes finite
 * values only). */
int diag_check_claim_finite(const float *got, const float *want, size_t n, const char *name,
                            size_t ndim, const size_t *dim, api_error *err);

/* want[i] = |got[i] - want[i]|: the error map, in place of the prediction
 * (finite after diag_check_claim_finite). */
void diag_error_map(const float *got, float *want, size_t n);

#endif /* DIAGNOSE_COMPARE_H */

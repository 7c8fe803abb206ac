/*
 * diagnose_compare.h - a subject against a prediction (diagnose_compare.c), as the
 * lib measures it.
 */
#ifndef DIAGNOSE_COMPARE_H
#define DIAGNOSE_COMPARE_H

#include <stddef.h>

#include "diagnose/pe_diagnose.h"

/* An explained verdict whose best does not reproduce the subject finitely
 * (huge finite subjects can drive the lib's fitted factor to overflow)
 * becomes unexplained: `best` must reproduce what it explains. */
void diag_require_finite_best(pe_dx_result *r);

/* got[n] against want[n] as pe_dx_errors (the lib's measure;
 * diagnose_compare.c, as diag_require_finite_best). */
pe_dx_errors diag_compare(const float *got, const float *want, size_t n, pe_dx_tolerance tol);

#endif /* DIAGNOSE_COMPARE_H */

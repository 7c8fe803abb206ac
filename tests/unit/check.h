/*
 * check.h - the tiny harness of the lib/ unit tests (and of tests/api):
 * every check counts as passed or failed, failures print where and why
 * (the one format of check_core.h), and main() prints one summary line and
 * exits non-zero on any failure.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check_core.h"

/* One check over a whole vector: |got[i] - want[i]| <= tol for every i.
 * On failure prints the worst element. */
void check_close_f(const float *got, const double *want, size_t n, double tol, const char *file,
                   int line, const char *what);

/* Like check_close_f, both sides double. */
void check_close_d(const double *got, const double *want, size_t n, double tol, const char *file,
                   int line, const char *what);

/* The unit harness has no label: a check is named by its message. */
#define CHECK(cond, ...) check_at((cond), __FILE__, __LINE__, NULL, __VA_ARGS__)
#define CHECK_NEAR(got, want, tol, what)                                                           \
    check_close_d((const double[]){(got)}, (const double[]){(want)}, 1, (tol), __FILE__, __LINE__, \
                  (what))
#define CHECK_CLOSE(got, want, n, tol, what)                                                       \
    check_close_f((got), (want), (n), (tol), __FILE__, __LINE__, (what))
#define CHECK_CLOSE_D(got, want, n, tol, what)                                                     \
    check_close_d((got), (want), (n), (tol), __FILE__, __LINE__, (what))

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Totals so far (checks_passed/checks_failed as int, for the mains). */
int check_passed_count(void);
int check_failed_count(void);

/* Test data: a 64-bit LCG (Knuth's MMIX constants), unrelated to the
 * SplitMix64 generator under test. Returns a double in [lo, hi). */
double test_uniform(uint64_t *state, double lo, double hi);

/* The suites, one per lib area. */
void test_norm(void);
void test_sinusoidal(void);
void test_absolute(void);
void test_rope(void);
void test_rope_freq(void);
void test_alibi(void);
void test_t5(void);
void test_qkv(void);
void test_default_weights(void);
void test_threads(void);
void test_pe_cache(void);
void test_qk_norm(void);
void test_llama4_qk(void);
void test_mla(void);
void test_determinism(void);

#endif /* CHECK_H */

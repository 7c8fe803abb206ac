/*
 * omp_policy.h - how the server's OpenMP threads wait, decided by the
 * server itself rather than by whoever starts it.
 *
 * libgomp's idle threads spin for a while before they sleep
 * (OMP_WAIT_POLICY unset: about 300,000 spins) or spin for good (active).
 * On a small machine under load, spinning teams take the cores from the
 * HTTP threads: S1 of the benchmark started bare ran at 14.8k req/s
 * against 24.3k with OMP_WAIT_POLICY=passive (docs/performance.md). libgomp
 * reads the variable once, when it loads (before main), so the server sets
 * it and starts itself again.
 */
#ifndef SERVER_OMP_POLICY_H
#define SERVER_OMP_POLICY_H

#include <stddef.h>

/* In main before any thread: when neither OMP_WAIT_POLICY nor
 * GOMP_SPINCOUNT is set, sets OMP_WAIT_POLICY=passive (and a marker) and
 * execs /proc/self/exe with argv again, which comes back here with the
 * variable set. An explicit setting always wins. Writes what decided the
 * policy into why[n] for the start-up log, e.g. "passive (set by
 * posenc-server)" or "active (OMP_WAIT_POLICY from the environment)";
 * when the exec fails, the server goes on with libgomp's default and why
 * says so. */
void omp_policy_apply(char **argv, char *why, size_t n);

#endif /* SERVER_OMP_POLICY_H */

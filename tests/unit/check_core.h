/*
 * check_core.h - the one assertion vocabulary of every C test harness of
 * posenc (tests/unit, tests/api, tests/http): one counter pair, one failure
 * line, the same typed comparisons.
 *
 * A failed check prints exactly one line on stdout:
 *     FAIL <file>:<line>: <label>: <message>
 * (no "<label>: " where the harness has no label). Typed checks say what
 * was compared and both values:
 *     FAIL test_x.c:12: POST /encode ...: r.status: got 404, want 200
 * A passed check prints nothing. Counters are atomic and printing is
 * serialised: checks may run in several threads at once.
 *
 * Every check counts once, as passed or failed, from a condition that can
 * be false. There is no way to count a pass without a condition: a path
 * that cannot go on records CHECK_FAIL (a failure, never a pass).
 *
 * The harness headers add CHECK on top of check_at: tests/unit/check.h as
 * CHECK(ok, fmt, ...) (label: none), tests/http/harness.h as
 * CHECK(ok, label, fmt, ...) (label: the request, so that a failure can be
 * reproduced by hand). The macros below are the same in both.
 */
#ifndef POSENC_TEST_CHECK_CORE_H
#define POSENC_TEST_CHECK_CORE_H

#include <stdbool.h>

/* Record one check; on failure print "FAIL file:line: label: fmt...".
 * label may be NULL. Returns ok, so that a test can stop when it cannot
 * go on. */
bool check_at(bool ok, const char *file, int line, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* got == want; on failure "what: got G, want W". */
bool check_int_eq_at(long long got, long long want, const char *file, int line, const char *label,
                     const char *what);
/* Both non-NULL and equal; on failure "what: got "G", want "W"" (NULL
 * shows as (none)). */
bool check_str_eq_at(const char *got, const char *want, const char *file, int line,
                     const char *label, const char *what);

/* Totals so far (every harness prints them as "N passed, M failed"). */
long checks_passed(void);
long checks_failed(void);

/* The typed checks; label names the case (NULL: none), the compared
 * expression is printed as written. */
#define CHECK_INT_EQ(label, got, want)                                                             \
    check_int_eq_at((long long)(got), (long long)(want), __FILE__, __LINE__, (label), #got)
#define CHECK_STR_EQ(label, got, want)                                                             \
    check_str_eq_at((got), (want), __FILE__, __LINE__, (label), #got)
/* A failure with no condition: the test cannot go on (out of memory, a
 * setup step that failed). Counts one failed check. */
#define CHECK_FAIL(label, ...) check_at(false, __FILE__, __LINE__, (label), __VA_ARGS__)

#endif /* POSENC_TEST_CHECK_CORE_H */

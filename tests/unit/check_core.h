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
#include <stddef.h>

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

/* ---------------------------------------------------------------------- */
/* Groups: one list per test program, walked to run and to select         */
/* ---------------------------------------------------------------------- */

/* Each test program keeps its groups in one X-macro list (test_list.h
 * beside its main, as libuv's test/test-list.h) and walks that list both
 * to run every group and to select groups by name:
 *
 *   PROG                 every group, in the order of the list
 *   PROG NAME...         only these groups (still in list order)
 *   PROG --list          the names, one a line; runs nothing
 *   PROG --dry [NAME...] the groups that would run, one a line; runs nothing
 *
 * check_parse_args reads that command line against names[0..n-1] and sets
 * want[i] for each group to run. Returns -1 when the program should go on
 * and run them; otherwise the exit status: 0 after --list or --dry, 2 for
 * an unknown group or option (a message on stderr names it). */
int check_parse_args(int argc, char **argv, const char *const *names, size_t n, bool *want);

/* Checks recorded so far, passed and failed (to count a group's). */
long checks_recorded(void);

/* Seconds on a monotonic clock. */
double check_clock(void);

/* After a group ran: prints "group NAME: N checks, T s" (N counted from
 * `before`, checks_recorded() when it started; T from t0, check_clock()
 * then), and records a failed check when the group recorded none: a group
 * that can be selected must check something. */
void check_group_done(const char *name, long before, double t0);

/* A group of the unit and API harnesses: a function of no arguments. */
typedef struct check_group {
    const char *name;
    void (*run)(void);
} check_group;

/* The whole main of such a harness: check_parse_args, then each wanted
 * group with check_group_done, then "PROG: N passed, M failed". Returns
 * the exit status (1 when a check failed). */
int check_main(const char *prog, const check_group *groups, size_t n, int argc, char **argv);

#endif /* POSENC_TEST_CHECK_CORE_H */

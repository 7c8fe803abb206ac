/*
 * check.c - the counters and the failure line of every C test harness
 * (check_core.h), and the vector comparisons of the unit harness.
 */
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The counters of the test program: the one process-wide state of the
 * harness, atomic because HTTP tests check from several threads. */
static atomic_long passed, failed;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

long checks_passed(void)
{
    return atomic_load(&passed);
}

long checks_failed(void)
{
    return atomic_load(&failed);
}

int check_passed_count(void)
{
    return (int)checks_passed();
}

int check_failed_count(void)
{
    return (int)checks_failed();
}

static void print_failure(const char *file, int line, const char *label, const char *msg)
{
    const char *base = strrchr(file, '/');
    pthread_mutex_lock(&print_lock);
    printf("FAIL %s:%d: %s%s%s\n", base ? base + 1 : file, line, label ? label : "",
           label ? ": " : "", msg);
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
}

bool check_at(bool ok, const char *file, int line, const char *label, const char *fmt, ...)
{
    if (ok) {
        atomic_fetch_add(&passed, 1);
        return true;
    }
    atomic_fetch_add(&failed, 1);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_failure(file, line, label, msg);
    return false;
}

bool check_int_eq_at(long long got, long long want, const char *file, int line, const char *label,
                     const char *what)
{
    return check_at(got == want, file, line, label, "%s: got %lld, want %lld", what, got, want);
}

bool check_str_eq_at(const char *got, const char *want, const char *file, int line,
                     const char *label, const char *what)
{
    bool ok = got && want && strcmp(got, want) == 0;
    return check_at(ok, file, line, label, "%s: got %s%s%s, want %s%s%s", what, got ? "\"" : "",
                    got ? got : "(none)", got ? "\"" : "", want ? "\"" : "", want ? want : "(none)",
                    want ? "\"" : "");
}

long checks_recorded(void)
{
    return checks_passed() + checks_failed();
}

double check_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The index of group `name`, or n. */
static size_t group_index(const char *name, const char *const *names, size_t n)
{
    size_t i = 0;
    while (i < n && strcmp(names[i], name) != 0)
        i++;
    return i;
}

int check_parse_args(int argc, char **argv, const char *const *names, size_t n, bool *want)
{
    const char *prog = argc > 0 ? argv[0] : "test";
    bool list = false, dry = false, named = false;
    for (size_t i = 0; i < n; i++)
        want[i] = false;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--list") == 0) {
            list = true;
        } else if (strcmp(argv[a], "--dry") == 0) {
            dry = true;
        } else if (argv[a][0] == '-') {
            fprintf(stderr, "%s: unknown option %s (options: --list, --dry)\n", prog, argv[a]);
            return 2;
        } else {
            size_t i = group_index(argv[a], names, n);
            if (i == n) {
                fprintf(stderr, "%s: no group named \"%s\" (%s --list names them)\n", prog, argv[a],
                        prog);
                return 2;
            }
            want[i] = true;
            named = true;
        }
    }
    if (list && (dry || named)) {
        fprintf(stderr, "%s: --list takes no group names and no --dry\n", prog);
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        if (!named)
            want[i] = true;
        if (list || (dry && want[i]))
            printf("%s\n", names[i]);
    }
    return list || dry ? 0 : -1;
}

void check_group_done(const char *name, long before, double t0)
{
    long n = checks_recorded() - before;
    printf("group %s: %ld checks, %.2f s\n", name, n, check_clock() - t0);
    if (n == 0)
        check_at(false, __FILE__, __LINE__, NULL, "group %s recorded no check", name);
}

int check_main(const char *prog, const check_group *groups, size_t n, int argc, char **argv)
{
    const char **names = calloc(n ? n : 1, sizeof *names);
    bool *want = calloc(n ? n : 1, sizeof *want);
    if (!names || !want) {
        printf("%s: out of memory\n%s: 0 passed, 1 failed\n", prog, prog);
        free(names);
        free(want);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        names[i] = groups[i].name;
    int rc = check_parse_args(argc, argv, names, n, want);
    for (size_t i = 0; rc < 0 && i < n; i++) {
        if (!want[i])
            continue;
        long before = checks_recorded();
        double t0 = check_clock();
        groups[i].run();
        check_group_done(groups[i].name, before, t0);
    }
    free(names);
    free(want);
    if (rc >= 0)
        return rc;
    printf("%s: %ld passed, %ld failed\n", prog, checks_passed(), checks_failed());
    return checks_failed() == 0 ? 0 : 1;
}

/* got[i] of whichever of the float and the double vector is given. */
static double element(const float *got_f, const double *got_d, size_t i)
{
    return got_f ? (double)got_f[i] : got_d[i];
}

/* One check: |got[i] - want[i]| <= tol for every i (NaN fails too); on
 * failure prints the worst element. */
static void close_at(const float *got_f, const double *got_d, const double *want, size_t n,
                     double tol, const char *file, int line, const char *what)
{
    size_t worst = 0;
    double worst_err = 0.0;
    bool ok = true;

    for (size_t i = 0; i < n; i++) {
        double err = fabs(element(got_f, got_d, i) - want[i]);
        if (!(err <= tol)) {
            if (ok || err > worst_err || isnan(err)) {
                worst = i;
                worst_err = err;
            }
            ok = false;
        }
    }
    check_at(ok, file, line, NULL, "%s: [%zu] got %.9g, want %.9g (err %.3g > %.3g)", what, worst,
             n ? element(got_f, got_d, worst) : 0.0, n ? want[worst] : 0.0, worst_err, tol);
}

void check_close_d(const double *got, const double *want, size_t n, double tol, const char *file,
                   int line, const char *what)
{
    close_at(NULL, got, want, n, tol, file, line, what);
}

void check_close_f(const float *got, const double *want, size_t n, double tol, const char *file,
                   int line, const char *what)
{
    close_at(got, NULL, want, n, tol, file, line, what);
}

double test_uniform(uint64_t *state, double lo, double hi)
{
    *state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return lo + (hi - lo) * (double)(*state >> 11) * 0x1p-53;
}

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
#include <string.h>

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

/*
 * check.c - counters and reporting of the unit-test harness.
 */
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

int check_passed_count(void)
{
    return passed;
}

int check_failed_count(void)
{
    return failed;
}

void check_report(bool ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void check_close_d(const double *got, const double *want, size_t n, double tol,
                   const char *file, int line, const char *what)
{
    size_t worst = 0;
    double worst_err = 0.0;
    bool ok = true;

    for (size_t i = 0; i < n; i++) {
        double err = fabs(got[i] - want[i]);
        if (!(err <= tol)) { /* NaN fails too */
            if (ok || err > worst_err || isnan(err)) {
                worst = i;
                worst_err = err;
            }
            ok = false;
        }
    }
    check_report(ok, file, line,
                 "%s: [%zu] got %.9g want %.9g (err %.3g > %.3g)", what, worst,
                 n ? got[worst] : 0.0, n ? want[worst] : 0.0, worst_err, tol);
}

void check_close(const float *got, const double *want, size_t n, double tol,
                 const char *file, int line, const char *what)
{
    size_t worst = 0;
    double worst_err = 0.0;
    bool ok = true;

    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        if (!(err <= tol)) {
            if (ok || err > worst_err || isnan(err)) {
                worst = i;
                worst_err = err;
            }
            ok = false;
        }
    }
    check_report(ok, file, line,
                 "%s: [%zu] got %.9g want %.9g (err %.3g > %.3g)", what, worst,
                 n ? (double)got[worst] : 0.0, n ? want[worst] : 0.0, worst_err,
                 tol);
}

double test_uniform(uint64_t *state, double lo, double hi)
{
    *state =
        *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return lo + (hi - lo) * (double)(*state >> 11) * 0x1p-53;
}

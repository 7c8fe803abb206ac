/*
 * omp_policy.c - the OpenMP wait policy set at start-up (see omp_policy.h).
 */
#include "omp_policy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by the process that re-executes itself, removed by the one it
 * becomes: tells "set by posenc-server" from "from the environment". */
#define MARKER "POSENC_OMP_WAIT_POLICY_SET"

/* valgrind runs its tool as the process image and preloads its own
 * libraries: re-executing /proc/self/exe would start the tool without its
 * launcher ("You cannot run ... directly") and kill the server. */
static bool under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

void omp_policy_apply(char **argv, char *why, size_t n)
{
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");

    if (getenv(MARKER) != NULL) {
        unsetenv(MARKER);
        snprintf(why, n, "passive (set by posenc-server)");
        return;
    }
    if (policy != NULL) {
        snprintf(why, n, "%s (OMP_WAIT_POLICY from the environment%s%s)", policy,
                 spin ? ", GOMP_SPINCOUNT=" : "", spin ? spin : "");
        return;
    }
    if (spin != NULL) {
        snprintf(why, n, "libgomp's default with GOMP_SPINCOUNT=%s from the environment", spin);
        return;
    }
    if (under_valgrind()) {
        snprintf(why, n,
                 "libgomp's default (under valgrind: /proc/self/exe is valgrind's tool, "
                 "so posenc-server does not restart itself)");
        return;
    }
    if (setenv("OMP_WAIT_POLICY", "passive", 1) == 0 && setenv(MARKER, "1", 1) == 0)
        execv("/proc/self/exe", argv);
    /* Still here: this libgomp has read its defaults already. */
    int e = errno;
    unsetenv("OMP_WAIT_POLICY");
    unsetenv(MARKER);
    snprintf(why, n, "libgomp's default (could not restart with passive: %s)", strerror(e));
}

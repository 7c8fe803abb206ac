/*
 * test_wait_policy.c - the server decides how its OpenMP threads wait
 * (server/omp_policy.h): started with neither
 * OMP_WAIT_POLICY nor GOMP_SPINCOUNT it runs with OMP_WAIT_POLICY=passive
 * and logs that it set it; an explicit setting wins and is logged as such.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

/* The server's environment, as it was exec'd, holds name=value
 * (/proc/PID/environ). */
static bool env_has(const server *s, const char *entry)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)s->pid);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strcmp(buf + i, entry) == 0)
            return true;
    return false;
}

static void check_log(const server *s, const char *label, const char *want)
{
    char *log = server_read_log(s);
    CHECK(log && strstr(log, want), label, "the log says \"%s\"", want);
    free(log);
}

void test_wait_policy(void)
{
    server s;
    char *saved = getenv("OMP_WAIT_POLICY") ? strdup(getenv("OMP_WAIT_POLICY")) : NULL;
    char *saved_spin = getenv("GOMP_SPINCOUNT") ? strdup(getenv("GOMP_SPINCOUNT")) : NULL;

    if (under_valgrind()) {
        printf("waitpolicy: skipped the bare start under valgrind (the harness sets the "
               "variable so that the server does not re-execute itself)\n");
    } else {
        unsetenv("OMP_WAIT_POLICY");
        unsetenv("GOMP_SPINCOUNT");
        if (server_start(&s, "waitpolicy-bare", NULL, NULL)) {
            const char *label = "started bare";
            check_log(&s, label, "OpenMP wait policy: passive (set by posenc-server)");
            CHECK(env_has(&s, "OMP_WAIT_POLICY=passive"), label,
                  "its environment has OMP_WAIT_POLICY=passive");
            http_resp r;
            http_get(&s, "/healthz", &r);
            CHECK(r.status == 200, label, "GET /healthz answers 200 (got %ld)", r.status);
            http_resp_free(&r);
            server_stop(&s);
        }
    }
    static const char *const active[] = {"OMP_WAIT_POLICY=active", NULL};
    if (server_start(&s, "waitpolicy-active", NULL, active)) {
        check_log(&s, "OMP_WAIT_POLICY=active",
                  "OpenMP wait policy: active (OMP_WAIT_POLICY from the environment)");
        server_stop(&s);
    }
    if (saved)
        setenv("OMP_WAIT_POLICY", saved, 1);
    if (saved_spin)
        setenv("GOMP_SPINCOUNT", saved_spin, 1);
    free(saved);
    free(saved_spin);
}

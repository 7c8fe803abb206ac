/*
 * test_http.c - main of build/test_http: walks the one list of HTTP groups
 * (test_list.h) to run them all or the ones named. The groups that need
 * the shared server run on one real server ($POSENC_SERVER, default
 * build/posenc-server) started on a free port and stopped with SIGTERM
 * (exit status must be 0); then the groups that start their own servers.
 *
 *   build/test_http                 every group
 *   build/test_http encode apply    only these groups
 *   build/test_http --list          the group names, one a line
 *   build/test_http --dry [GROUP...]  the groups that would run; runs none
 * An unknown group name is exit status 2 (check_parse_args, check_core.h).
 *
 * Env: POSENC_SERVER, VALGRIND=1 (server under valgrind), POSENC_TEST_LOGDIR
 * (server logs, default <server dir>/test-logs), POSENC_DEFAULT_SEED.
 * Each group ends with "group NAME: N checks, T s" (a group with no check
 * fails); the last line is "N passed, M failed"; the exit status is 1 on
 * failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "refs.h"
#include "tests.h"

/* What a group needs before it runs (the setup column of test_list.h). */
typedef enum group_setup { SETUP_SERVER, SETUP_WEIGHTS, SETUP_OWN } group_setup;

/* A group called the one way: s and dm are NULL for an OWN group. */
typedef struct http_group {
    const char *name;
    group_setup setup;
    void (*run)(const server *s, const default_model *dm);
} http_group;

/* One adapter per group, from its setup to the common call. */
#define CALL_SERVER(function) function(s)
#define CALL_WEIGHTS(function) function(s, dm)
#define CALL_OWN(function) function()
#define HTTP_GROUP_ADAPTER(name, function, setup)                                                  \
    static void run_##name(const server *s, const default_model *dm)                               \
    {                                                                                              \
        (void)s;                                                                                   \
        (void)dm;                                                                                  \
        CALL_##setup(function);                                                                    \
    }
HTTP_GROUPS(HTTP_GROUP_ADAPTER)
#undef HTTP_GROUP_ADAPTER

static const http_group GROUPS[] = {
#define HTTP_GROUP_ENTRY(name, function, setup) {#name, SETUP_##setup, run_##name},
    HTTP_GROUPS(HTTP_GROUP_ENTRY)
#undef HTTP_GROUP_ENTRY
};

static const char *const NAMES[] = {
#define HTTP_GROUP_NAME(name, function, setup) #name,
    HTTP_GROUPS(HTTP_GROUP_NAME)
#undef HTTP_GROUP_NAME
};

enum { N_GROUPS = sizeof GROUPS / sizeof GROUPS[0] };

static void run_group(const http_group *g, const server *s, const default_model *dm)
{
    long before = checks_recorded();
    double t0 = check_clock();
    g->run(s, dm);
    check_group_done(g->name, before, t0);
}

/* The wanted groups that use the shared server, on one server. */
static void run_shared(const bool *want)
{
    bool need_server = false, need_weights = false;
    for (size_t i = 0; i < N_GROUPS; i++) {
        need_server |= want[i] && GROUPS[i].setup != SETUP_OWN;
        need_weights |= want[i] && GROUPS[i].setup == SETUP_WEIGHTS;
    }
    server s;
    if (!need_server || !server_start(&s, "default", NULL, NULL))
        return;
    default_model dm = {0};
    if (need_weights) {
        dm.seed = default_seed(&s);
        size_t n = (size_t)DEFAULT_D * DEFAULT_D;
        dm.wq = xmalloc(n * sizeof(float));
        dm.wk = xmalloc(n * sizeof(float));
        dm.wv = xmalloc(n * sizeof(float));
        ref_default_weights(dm.seed, DEFAULT_D, dm.wq, dm.wk, dm.wv);
    }
    for (size_t i = 0; i < N_GROUPS; i++)
        if (want[i] && GROUPS[i].setup != SETUP_OWN)
            run_group(&GROUPS[i], &s, &dm);
    server_stop(&s);
    free(dm.wq);
    free(dm.wk);
    free(dm.wv);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool want[N_GROUPS];
    int rc = check_parse_args(argc, argv, NAMES, N_GROUPS, want);
    if (rc >= 0)
        return rc;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        printf("test_http: curl_global_init failed\n0 passed, 1 failed\n");
        return 1;
    }
    harness_selftest();
    refs_selftest();
    run_shared(want);
    for (size_t i = 0; i < N_GROUPS; i++)
        if (want[i] && GROUPS[i].setup == SETUP_OWN)
            run_group(&GROUPS[i], NULL, NULL);

    curl_global_cleanup();
    long p = checks_passed(), f = checks_failed();
    printf("%ld passed, %ld failed\n", p, f);
    return f ? 1 : 0;
}

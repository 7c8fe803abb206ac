/*
 * test_http.c - main of build/test_http: starts the real server
 * ($POSENC_SERVER, default build/posenc-server) on a free port, runs every
 * group of HTTP tests against it, stops it with SIGTERM (exit status must
 * be 0), then runs the groups that need their own server flags.
 *
 *   build/test_http                 all groups
 *   build/test_http encode apply    only these groups (service, encode,
 *                                   apply, errors, concurrency, diagnose, auth, limits,
 *                                   reqlimits, slowclient, connlimit,
 *                                   overload, drain, observe)
 *
 * Env: POSENC_SERVER, VALGRIND=1 (server under valgrind), POSENC_TEST_LOGDIR
 * (server logs, default <server dir>/test-logs), POSENC_DEFAULT_SEED.
 * The last line is "N passed, M failed"; the exit status is 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "refs.h"
#include "tests.h"

static bool want_group(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        printf("test_http: curl_global_init failed\n0 passed, 1 failed\n");
        return 1;
    }
    harness_selftest();
    refs_selftest();

    bool need_default = want_group(argc, argv, "service") || want_group(argc, argv, "encode") ||
                        want_group(argc, argv, "apply") || want_group(argc, argv, "errors") ||
                        want_group(argc, argv, "concurrency") ||
                        want_group(argc, argv, "diagnose") || want_group(argc, argv, "mask");
    if (need_default) {
        server s;
        if (server_start(&s, "default", NULL, NULL)) {
            default_model dm = {0};
            bool need_weights = want_group(argc, argv, "apply") ||
                                want_group(argc, argv, "concurrency") ||
                                want_group(argc, argv, "diagnose");
            if (need_weights) {
                dm.seed = default_seed(&s);
                size_t n = (size_t)DEFAULT_D * DEFAULT_D;
                dm.wq = xmalloc(n * sizeof(float));
                dm.wk = xmalloc(n * sizeof(float));
                dm.wv = xmalloc(n * sizeof(float));
                ref_default_weights(dm.seed, DEFAULT_D, dm.wq, dm.wk, dm.wv);
            }
            if (want_group(argc, argv, "service"))
                test_service(&s);
            if (want_group(argc, argv, "encode"))
                test_encode(&s);
            if (want_group(argc, argv, "apply"))
                test_apply(&s, &dm);
            if (want_group(argc, argv, "errors"))
                test_errors(&s);
            if (want_group(argc, argv, "grammar"))
                test_grammar(&s);
            if (want_group(argc, argv, "mask"))
                test_mask(&s);
            if (want_group(argc, argv, "concurrency"))
                test_concurrency(&s, &dm);
            if (want_group(argc, argv, "diagnose"))
                test_diagnose(&s, &dm);
            server_stop(&s);
            free(dm.wq);
            free(dm.wk);
            free(dm.wv);
        }
    }
    if (want_group(argc, argv, "auth"))
        test_auth();
    if (want_group(argc, argv, "limits"))
        test_limits();
    if (want_group(argc, argv, "reqlimits"))
        test_reqlimits();
    if (want_group(argc, argv, "slowclient"))
        test_slowclient();
    if (want_group(argc, argv, "connlimit"))
        test_connlimit();
    if (want_group(argc, argv, "overload"))
        test_overload();
    if (want_group(argc, argv, "drain"))
        test_drain();
    if (want_group(argc, argv, "observe"))
        test_observe();
    if (want_group(argc, argv, "hardening"))
        test_hardening();
    if (want_group(argc, argv, "determinism"))
        test_determinism();
    if (want_group(argc, argv, "waitpolicy"))
        test_wait_policy();

    curl_global_cleanup();
    long p = checks_passed(), f = checks_failed();
    printf("%ld passed, %ld failed\n", p, f);
    return f ? 1 : 0;
}

/*
 * main.c - posenc-server: flags, then the server until SIGTERM/SIGINT.
 *
 * Wiring only: each step lives in its own file (config, shutdown, models,
 * server, daemon, probe).
 */
#include <signal.h>

#include "config.h"
#include "daemon.h"
#include "access_log.h"
#include "heap_policy.h"
#include "models.h"
#include "omp_policy.h"
#include "probe.h"
#include "server.h"
#include "shutdown.h"

int main(int argc, char **argv)
{
    server_config cfg;
    switch (config_parse(&cfg, argc, argv)) {
    case CONFIG_EXIT:
        return 0;
    case CONFIG_ERROR:
        return 2;
    case CONFIG_RUN:
        break;
    }
    if (cfg.check)
        return probe_healthz(&cfg);

    /* Before any thread exists: may start this program again with
     * OMP_WAIT_POLICY=passive (see omp_policy.h). */
    char wait_policy[192];
    omp_policy_apply(argv, wait_policy, sizeof wait_policy);

    /* Before any thread exists (malloc arenas, see heap_policy.h). */
    heap_policy_init();

    /* Before any thread exists, so that every thread inherits the mask. */
    sigset_t signals;
    if (shutdown_block_signals(&signals, cfg.log_format) != 0)
        return 1;
    /* Logged once the mask is set: from this line on a SIGTERM is the
     * server's to handle (the tests wait for it before they signal). */
    log_msg(cfg.log_format, "info", "OpenMP wait policy: %s", wait_policy);

    /* After the mask: loading converts weights on OpenMP threads. A model
     * that fails to load is a bad flag: exit 2 before listening. A
     * SIGTERM meanwhile stops at once (the watch). */
    shutdown_watch *watch = shutdown_watch_start(&signals, cfg.log_format);
    api_service *svc = models_load(&cfg);
    shutdown_watch_end(watch);
    if (svc == NULL)
        return 2;
    server_ctx *srv = server_new(&cfg, svc, daemon_library_version());
    if (srv == NULL)
        return 1;
    int status = daemon_start(srv);
    if (status == 0)
        shutdown_wait_and_drain(srv, &signals);
    server_free(srv);
    return status;
}

/*
 * models.c - turn the --model slices of the configuration into
 * api_model_spec strings and build the API service (see models.h).
 */
#include "models.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "access_log.h"
#include "mono_clock.h"

/* For tests only: POSENC_TEST_LOAD_PAUSE_MS (milliseconds, at most 60000)
 * holds the load back that long before it starts, so that a test can
 * signal a server while it loads its models, whatever their size. Never
 * set in a deployment. */
static void test_load_pause(void)
{
    const char *v = getenv("POSENC_TEST_LOAD_PAUSE_MS");
    long ms = v ? strtol(v, NULL, 10) : 0;
    if (ms <= 0 || ms > 60000)
        return;
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

api_service *models_load(const server_config *cfg)
{
    api_model_spec specs[CONFIG_MAX_MODELS];
    char *strings[2 * CONFIG_MAX_MODELS] = {0};
    api_service *svc = NULL;
    api_error err;
    int64_t t0 = 0;
    unsigned n = cfg->n_models;

    memset(&err, 0, sizeof err);
    for (unsigned i = 0; i < n; i++) {
        const config_model *cm = &cfg->models[i];
        strings[2 * i] = strndup(cm->name, cm->name_len);
        strings[2 * i + 1] = strndup(cm->dir, cm->dir_len);
        if (!strings[2 * i] || !strings[2 * i + 1]) {
            log_msg(cfg->log_format, "error", "out of memory");
            goto out;
        }
        specs[i] = (api_model_spec){.name = strings[2 * i],
                                    .dir = strings[2 * i + 1],
                                    .has_layer = cm->has_layer,
                                    .layer = cm->layer};
    }
    api_limits limits = {
        .max_tokens = cfg->max_tokens,
        .max_output_elements = cfg->max_output_elements,
        .max_batch = cfg->max_batch,
        .max_dim = cfg->max_dim,
        .max_heads = cfg->max_heads,
        .max_json_depth = cfg->max_json_depth,
        .diagnose_ms = cfg->diagnose_ms,
    };
    test_load_pause();
    t0 = mono_now_ns();
    svc = api_service_new_with_models(&limits, specs, n, &err);
    if (svc == NULL) {
        log_msg(cfg->log_format, "error", "cannot load: %s", err.message);
        goto out;
    }
    if (n > 0)
        log_msg(cfg->log_format, "info", "loaded %u model%s in %.2f s (see GET /info)", n,
                n == 1 ? "" : "s", mono_seconds_since(t0));
out:
    for (unsigned i = 0; i < 2 * n; i++)
        free(strings[i]);
    return svc;
}

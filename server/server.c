/*
 * server.c - building and freeing the server context (see server.h).
 */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "access_log.h"
#include "framing.h"
#include "request_id.h"

#if defined(__clang__)
#define COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define COMPILER "gcc " __VERSION__
#else
#define COMPILER "unknown compiler"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZERS ", AddressSanitizer"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZERS ", AddressSanitizer"
#endif
#endif
#ifndef SANITIZERS
#define SANITIZERS ""
#endif

#if defined(__OPTIMIZE__)
#define OPTIMIZED "optimized"
#else
#define OPTIMIZED "not optimized"
#endif

static void describe_build(server_ctx *srv, const char *http_library)
{
    snprintf(srv->build, sizeof srv->build, "%s, %s, OpenMP %d%s, libmicrohttpd %s", COMPILER,
             OPTIMIZED, _OPENMP, SANITIZERS, http_library);
}

server_ctx *server_new(const server_config *cfg, api_service *svc, const char *http_library)
{
    server_ctx *srv = calloc(1, sizeof *srv);
    if (srv == NULL) {
        log_msg(cfg->log_format, "error", "out of memory");
        api_service_free(svc);
        return NULL;
    }
    srv->cfg = *cfg;
    if (srv->cfg.max_memory == 0)
        srv->cfg.max_memory = mem_budget_default_total();
    mem_budget_init(&srv->budget, srv->cfg.max_memory);
    atomic_init(&srv->draining, false);
    atomic_init(&srv->next_request_id, 0);
    srv->request_id_seed = request_id_seed();
    srv->svc = svc;

    describe_build(srv, http_library);
    srv->header_block_in_place = framing_layout_is_in_place(http_library);
    srv->facts = (api_server_facts){
        .version = POSENC_VERSION,
        .build = srv->build,
        .http_threads = cfg->threads,
        .omp_threads = cfg->omp_threads > 0 ? cfg->omp_threads : (unsigned)omp_get_max_threads(),
        .max_body_bytes = cfg->max_body_bytes,
        .max_connections = cfg->max_connections,
        .api_key_required = cfg->api_key != NULL,
        .max_inflight = cfg->max_inflight,
        .workers = cfg->workers,
        .timeout_s = cfg->timeout_s,
        .request_timeout_s = cfg->request_timeout_s,
        .connection_memory = cfg->connection_memory,
        .memory_budget = srv->cfg.max_memory,
    };
    /* Every setting but the key itself, which is never logged. */
    log_msg(cfg->log_format, "info",
            "posenc %s (%s): workers=%u omp_threads=%u max_body_bytes=%zu "
            "max_tokens=%zu max_batch=%zu max_dim=%zu max_heads=%zu "
            "max_output_elements=%zu max_json_depth=%zu max_inflight=%u "
            "max_memory=%zu "
            "connection_memory=%zu timeout=%us request_timeout=%us "
            "drain_timeout=%us drain_send_timeout=%us api_key=%s",
            POSENC_VERSION, srv->build, cfg->workers, srv->facts.omp_threads, cfg->max_body_bytes,
            cfg->max_tokens, cfg->max_batch, cfg->max_dim, cfg->max_heads, cfg->max_output_elements,
            cfg->max_json_depth, cfg->max_inflight, srv->cfg.max_memory, cfg->connection_memory,
            cfg->timeout_s, cfg->request_timeout_s, cfg->drain_timeout_s, cfg->drain_send_timeout_s,
            cfg->api_key ? "required" : "none");
    return srv;
}

void server_free(server_ctx *srv)
{
    if (srv == NULL)
        return;
    api_service_free(srv->svc);
    free(srv);
}

/*
 * config.h - the server's settings: command-line flags and their POSENC_*
 * environment twins.
 *
 * Every setting has a default, may be set by an environment variable and is
 * overridden by its flag (a flag wins over the variable; an empty variable
 * counts as unset). The result is frozen before the daemon starts.
 */
#ifndef SERVER_CONFIG_H
#define SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum log_format { LOG_TEXT, LOG_JSON } log_format;

/* Most --model entries accepted. */
#define CONFIG_MAX_MODELS 32

/* One --model NAME=DIR[:LAYER], as slices of argv or of the environment
 * (not NUL-terminated). */
typedef struct config_model {
    const char *name;
    size_t name_len;
    const char *dir;
    size_t dir_len;
    bool has_layer; /* ":LAYER" was given */
    unsigned layer;
} config_model;

typedef struct server_config {
    const char *host;     /* borrowed from argv or the environment */
    unsigned port;        /* 0 = pick a free port */
    unsigned probe_port;  /* the probes' own listener; 0 = none */
    unsigned threads;     /* libmicrohttpd threads: network I/O */
    unsigned workers;     /* threads computing /encode and /apply */
    unsigned omp_threads; /* 0 = OpenMP's own default */
    size_t max_body_bytes;
    size_t max_tokens;
    size_t max_batch;
    size_t max_dim;
    size_t max_heads;
    size_t max_json_depth;
    size_t max_output_elements;
    unsigned diagnose_ms;  /* /diagnose's search budget per subject */
    size_t max_memory;     /* the memory budget; 0 = the default
                                 (mem_budget_default_total) */
    unsigned max_inflight; /* /encode and /apply admitted at once */
    unsigned max_connections;
    size_t connection_memory;      /* per-connection buffer (headers, reads) */
    unsigned timeout_s;            /* idle connection timeout, 0 = never */
    unsigned request_timeout_s;    /* to receive a whole request, and again to
                                   send its response; 0 = never */
    unsigned drain_timeout_s;      /* how long SIGTERM waits for requests */
    unsigned drain_send_timeout_s; /* then how long for answers being sent */
    const char *api_key;           /* NULL = no key; borrowed; never logged */
    log_format log_format;
    config_model models[CONFIG_MAX_MODELS]; /* --model, in order */
    unsigned n_models;
    bool check; /* probe mode: GET /healthz and exit */
} server_config;

/* What config_parse decided. */
typedef enum config_result {
    CONFIG_RUN,  /* *cfg is ready: run the server (or the probe) */
    CONFIG_EXIT, /* --help or --version was printed: exit 0 */
    CONFIG_ERROR /* a message is on stderr: exit 2 */
} config_result;

/* Fill *cfg from defaults, the environment and argv (in rising priority).
 * Prints --help/--version on stdout and every error on stderr. Strings in
 * *cfg are borrowed from argv and environ, which outlive the server. */
config_result config_parse(server_config *cfg, int argc, char **argv);

#endif /* SERVER_CONFIG_H */

/*
 * config.c - flags, their POSENC_* environment twins, --help and --version.
 *
 * One table lists every option: its flag, its variable, how to read the
 * value and where it goes in server_config. Parsing, precedence (default <
 * environment < flag) and the --help text all come from that table, so a
 * new option is one row plus one field.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

typedef enum opt_type {
    T_HOST,   /* non-empty string */
    T_KEY,    /* secret string: never echoed back */
    T_UINT,   /* unsigned in [min, max] */
    T_SIZE,   /* size_t in [min, max] */
    T_BYTES,  /* size_t in [min, max], with an optional K, M or G suffix */
    T_LOGFMT, /* text | json */
    T_MODEL,  /* NAME=DIR[:LAYER], repeatable; env: comma-separated list */
    T_SWITCH  /* no value */
} opt_type;

typedef struct opt_spec {
    const char *flag; /* long flag, with the dashes */
    const char *env;  /* environment twin, NULL when there is none */
    const char *meta; /* placeholder for --help, NULL for a switch */
    opt_type type;
    size_t offset;          /* field in server_config */
    unsigned long long min; /* numeric types only */
    unsigned long long max;
    const char *help;
} opt_spec;

#define FIELD(name) offsetof(server_config, name)
#define MAX_SIZE_VALUE (1ULL << 40) /* 1 TiB: larger is a typo, not a plan */

static const opt_spec OPTIONS[] = {
    {"--host", "POSENC_HOST", "HOST", T_HOST, FIELD(host), 0, 0,
     "address to listen on (0.0.0.0 or :: for every interface)"},
    {"--port", "POSENC_PORT", "PORT", T_UINT, FIELD(port), 0, 65535,
     "TCP port; 0 picks a free one (the listening line shows it)"},
    {"--probe-port", "POSENC_PROBE_PORT", "PORT", T_UINT, FIELD(probe_port), 0, 65535,
     "a second port, on the same host, serving only /healthz, /readyz and\n"
     "/metrics, with its own thread and connections, so that probes get\n"
     "through whatever clients do on --port (0 = none)"},
    {"--threads", "POSENC_THREADS", "N", T_UINT, FIELD(threads), 1, 256,
     "HTTP threads: they read requests and send responses (and answer\n"
     "probes and 503s at once, however busy the workers are)"},
    {"--workers", "POSENC_WORKERS", "N", T_UINT, FIELD(workers), 0, 1024,
     "requests that compute (/encode, /apply) at once, on worker\n"
     "threads; further admitted requests wait in a queue (see\n"
     "--max-inflight). 0: as many as --threads"},
    {"--omp-threads", "POSENC_OMP_THREADS", "N", T_UINT, FIELD(omp_threads), 0, 1024,
     "OpenMP threads of a request computing alone;\n"
     "requests computing at once share them (each gets this divided\n"
     "by their number, at least 1). 0 keeps OpenMP's default\n"
     "(OMP_NUM_THREADS, else one per core)"},
    {"--model", "POSENC_MODEL", "NAME=DIR[:LAYER]", T_MODEL, FIELD(n_models), 0, 0,
     "serve the model in DIR (config.json + model.safetensors) as NAME;\n"
     "LAYER picks the attention layer of a Hugging Face checkpoint\n"
     "(default 0). Repeatable; the variable takes a comma-separated list.\n"
     "The built-in 'default' model stays unless one is named default"},
    {"--max-body-bytes", "POSENC_MAX_BODY_BYTES", "BYTES", T_SIZE, FIELD(max_body_bytes), 1,
     MAX_SIZE_VALUE, "largest request body; bigger ones get 413"},
    {"--max-memory", "POSENC_MAX_MEMORY", "BYTES", T_BYTES, FIELD(max_memory), 4096, MAX_SIZE_VALUE,
     "memory budget of all requests together: bodies, decoded input,\n"
     "working buffers, answers held; suffixes K, M, G (x1024). What\n"
     "does not fit now gets 503 + Retry-After, what never fits 413/422.\n"
     "0 or unset: half the cgroup's limit (v2 memory.max, v1\n"
     "memory.limit_in_bytes), else half of MemTotal"},
    {"--max-tokens", "POSENC_MAX_TOKENS", "N", T_SIZE, FIELD(max_tokens), 1, MAX_SIZE_VALUE,
     "cap on batch x tokens per request; more gets 422"},
    {"--max-batch", "POSENC_MAX_BATCH", "N", T_SIZE, FIELD(max_batch), 1, MAX_SIZE_VALUE,
     "cap on the batch axis of a request; more gets 422"},
    {"--max-dim", "POSENC_MAX_DIM", "N", T_SIZE, FIELD(max_dim), 1, API_DEFAULT_MAX_DIM,
     "cap on d, d_model and head_dim in a request; more gets 422"},
    {"--max-heads", "POSENC_MAX_HEADS", "N", T_SIZE, FIELD(max_heads), 1, API_MAX_HEADS,
     "cap on heads and kv_heads in a request (inline models, alibi);\n"
     "more gets 422"},
    {"--max-output-elements", "POSENC_MAX_OUTPUT_ELEMENTS", "N", T_SIZE, FIELD(max_output_elements),
     1, MAX_SIZE_VALUE, "cap on the elements of any one input or output array; more gets 422"},
    {"--diagnose-ms", "POSENC_DIAGNOSE_MS", "MS", T_UINT, FIELD(diagnose_ms), 1, 600000,
     "CPU time one /diagnose subject's search may take; a search cut\n"
     "short answers with what it found and says truncated"},
    {"--max-json-depth", "POSENC_MAX_JSON_DEPTH", "N", T_SIZE, FIELD(max_json_depth), 1,
     API_MAX_JSON_DEPTH,
     "cap on nested arrays and objects in a body; deeper gets 422\n"
     "(requests need at most 5)"},
    {"--max-inflight", "POSENC_MAX_INFLIGHT", "N", T_UINT, FIELD(max_inflight), 1, 1000000,
     "/encode, /apply and /diagnose requests admitted at once, queued\n"
     "or computing (a body still arriving holds no slot); more get 503\n"
     "with Retry-After"},
    {"--max-connections", "POSENC_MAX_CONNECTIONS", "N", T_UINT, FIELD(max_connections), 1, 1000000,
     "open connections; a few more are accepted only to be answered\n"
     "503 (probes are still served) and closed"},
    {"--connection-memory", "POSENC_CONNECTION_MEMORY", "BYTES", T_SIZE, FIELD(connection_memory),
     4096, (size_t)16 << 20,
     "memory per connection for the request line, headers and reads;\n"
     "a bigger header block gets 431"},
    {"--timeout", "POSENC_TIMEOUT", "SECONDS", T_UINT, FIELD(timeout_s), 0, 86400,
     "close connections idle this long; 0 = never"},
    {"--request-timeout", "POSENC_REQUEST_TIMEOUT", "SECONDS", T_UINT, FIELD(request_timeout_s), 0,
     86400,
     "close a connection that has not sent its whole request this long\n"
     "after it opened (or after its previous response), or whose\n"
     "response is not taken this long after it is ready: slow\n"
     "clients (slowloris) lose their connection; 0 = never"},
    {"--drain-timeout", "POSENC_DRAIN_TIMEOUT", "SECONDS", T_UINT, FIELD(drain_timeout_s), 0, 3600,
     "on SIGTERM/SIGINT, wait this long for running requests"},
    {"--drain-send-timeout", "POSENC_DRAIN_SEND_TIMEOUT", "SECONDS", T_UINT,
     FIELD(drain_send_timeout_s), 0, 3600,
     "then this long more for answers already being sent (keep the two\n"
     "together under the orchestrator's kill grace, 10 s in Docker)"},
    {"--api-key", "POSENC_API_KEY", "KEY", T_KEY, FIELD(api_key), 0, 0,
     "require 'Authorization: Bearer KEY' on every route but /healthz\n"
     "and /readyz (prefer the variable: flags show in ps)"},
    {"--log-format", "POSENC_LOG_FORMAT", "text|json", T_LOGFMT, FIELD(log_format), 0, 0,
     "stderr log lines as text or JSON objects"},
    {"--check", NULL, NULL, T_SWITCH, FIELD(check), 0, 0,
     "probe: GET /healthz on HOST:PORT, exit 0 on 200 else 1\n"
     "(a Docker HEALTHCHECK without curl)"},
};

#define N_OPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

static void config_defaults(server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->host = "127.0.0.1";
    cfg->port = 8080;
    cfg->threads = 4;
    cfg->workers = 0; /* as many as --threads */
    cfg->omp_threads = 0;
    cfg->max_body_bytes = (size_t)64 << 20;
    cfg->max_tokens = API_DEFAULT_MAX_TOKENS;
    cfg->max_batch = API_DEFAULT_MAX_BATCH;
    cfg->max_dim = API_DEFAULT_MAX_DIM;
    cfg->max_heads = API_DEFAULT_MAX_HEADS;
    cfg->diagnose_ms = API_DEFAULT_DIAGNOSE_MS;
    cfg->max_json_depth = API_DEFAULT_MAX_JSON_DEPTH;
    cfg->max_output_elements = API_DEFAULT_MAX_OUTPUT_ELEMENTS;
    cfg->max_inflight = 64;
    cfg->max_connections = 1024;
    cfg->connection_memory = (size_t)64 * 1024;
    cfg->timeout_s = 30;
    cfg->request_timeout_s = 60;
    cfg->drain_timeout_s = 6;
    cfg->drain_send_timeout_s = 3; /* 9 s in all: under Docker's 10 */
    cfg->api_key = NULL;
    cfg->log_format = LOG_TEXT;
}

static void *field_ptr(server_config *cfg, const opt_spec *o)
{
    return (char *)cfg + o->offset;
}

static const void *field_cptr(const server_config *cfg, const opt_spec *o)
{
    return (const char *)cfg + o->offset;
}

static void print_help(void)
{
    server_config def;
    config_defaults(&def);

    printf("Usage: posenc-server [OPTION]...\n"
           "Serve transformer positional encodings over HTTP "
           "(posenc %s).\n\n"
           "Options (each flag as --flag VALUE or --flag=VALUE; the "
           "variable in [] sets the\nsame thing, and the flag wins):\n",
           POSENC_VERSION);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const opt_spec *o = &OPTIONS[i];
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", o->flag, o->meta ? " " : "", o->meta ? o->meta : "");
        printf("  %-26s ", head);
        /* Indent continuation lines of the help text under the first. */
        for (const char *p = o->help; *p; p++) {
            putchar(*p);
            if (*p == '\n')
                printf("  %-26s ", "");
        }
        const void *f = field_cptr(&def, o);
        char dflt[48] = "";
        switch (o->type) {
        case T_HOST:
            snprintf(dflt, sizeof dflt, "; default %s", *(const char *const *)f);
            break;
        case T_UINT:
            snprintf(dflt, sizeof dflt, "; default %u", *(const unsigned *)f);
            break;
        case T_SIZE:
            snprintf(dflt, sizeof dflt, "; default %zu", *(const size_t *)f);
            break;
        case T_BYTES:
            snprintf(dflt, sizeof dflt, "; default: see above");
            break;
        case T_LOGFMT:
            snprintf(dflt, sizeof dflt, "; default text");
            break;
        default:
            break;
        }
        if (o->env)
            printf("\n  %-26s [%s%s]", "", o->env, dflt);
        putchar('\n');
    }
    printf("  %-26s show this help and exit\n", "--help, -h");
    printf("  %-26s show the version and exit\n\n", "--version");
    printf("Exit status: 0 after a clean shutdown (SIGTERM or SIGINT), "
           "1 when the server\ncannot start, 2 for a bad flag or "
           "variable or a model that fails to load.\n"
           "SIGHUP, SIGUSR1 and SIGUSR2 are logged and ignored (nothing to reload).\n");
}

/* Reads a decimal integer in [min, max]: digits only, no sign, no spaces,
 * no suffix. Prints the error naming `src` (the flag or the variable). */
static int parse_number(const char *src, const char *s, unsigned long long min,
                        unsigned long long max, unsigned long long *out)
{
    if (!isdigit((unsigned char)s[0])) {
        fprintf(stderr, "posenc: %s: '%s' is not a non-negative integer\n", src, s);
        return -1;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0') {
        fprintf(stderr, "posenc: %s: '%s' is not a non-negative integer\n", src, s);
        return -1;
    }
    if (errno == ERANGE || v < min || v > max) {
        fprintf(stderr, "posenc: %s: %s is out of range (%llu to %llu)\n", src, s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* A byte count: digits, then optionally K, M or G (either case, powers
 * of 1024), in [min, max]. */
static int parse_bytes(const char *src, const char *s, unsigned long long min,
                       unsigned long long max, size_t *out)
{
    char digits[32];
    size_t n = strlen(s);
    unsigned shift = 0;
    if (n > 0 && strchr("kKmMgG", s[n - 1]) != NULL) {
        char unit = (char)(s[n - 1] | 0x20);
        shift = unit == 'k' ? 10 : unit == 'm' ? 20 : 30;
        n--;
    }
    if (n == 0 || n >= sizeof digits) {
        fprintf(stderr,
                "posenc: %s: '%s' is not a byte count (N, NK, NM "
                "or NG)\n",
                src, s);
        return -1;
    }
    memcpy(digits, s, n);
    digits[n] = '\0';
    unsigned long long v = 0;
    if (parse_number(src, digits, 0, max >> shift, &v) != 0)
        return -1;
    v <<= shift;
    if (v != 0 && v < min) {
        fprintf(stderr, "posenc: %s: %s is below %llu bytes\n", src, s, min);
        return -1;
    }
    if (v > SIZE_MAX) {
        fprintf(stderr, "posenc: %s: %s does not fit this machine\n", src, s);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* One NAME=DIR[:LAYER] model argument: NAME of [A-Za-z0-9._-], DIR
 * non-empty. A trailing ":DIGITS" is always the layer (DIR may hold ':'
 * elsewhere; a directory whose name ends in ":DIGITS" can be written with a
 * trailing '/'). */
static int parse_model_arg(const char *src, const char *s, size_t len, config_model *out)
{
    const char *eq = memchr(s, '=', len);
    size_t name_len = eq ? (size_t)(eq - s) : 0;
    bool ok = eq != NULL && name_len > 0 && name_len + 1 < len;
    for (size_t i = 0; ok && i < name_len; i++) {
        unsigned char c = (unsigned char)s[i];
        ok = isalnum(c) || c == '.' || c == '_' || c == '-';
    }
    if (!ok) {
        fprintf(stderr,
                "posenc: %s: '%.*s' is not NAME=DIR[:LAYER] (NAME of "
                "letters, digits, '.', '_' or '-')\n",
                src, (int)(len > 200 ? 200 : len), s);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->name = s;
    out->name_len = name_len;
    out->dir = eq + 1;
    out->dir_len = len - name_len - 1;
    size_t digits = 0;
    while (digits < out->dir_len && isdigit((unsigned char)out->dir[out->dir_len - 1 - digits]))
        digits++;
    if (digits > 0 && digits + 1 < out->dir_len && out->dir[out->dir_len - 1 - digits] == ':') {
        if (digits > 6) {
            fprintf(stderr, "posenc: %s: layer '%.*s' is too large\n", src, (int)digits,
                    out->dir + out->dir_len - digits);
            return -1;
        }
        out->layer = (unsigned)strtoul(out->dir + out->dir_len - digits, NULL, 10);
        out->has_layer = true;
        out->dir_len -= digits + 1;
    }
    return 0;
}

static int add_model(server_config *cfg, const char *src, const char *s, size_t len)
{
    if (cfg->n_models == CONFIG_MAX_MODELS) {
        fprintf(stderr, "posenc: %s: at most %d models\n", src, CONFIG_MAX_MODELS);
        return -1;
    }
    if (parse_model_arg(src, s, len, &cfg->models[cfg->n_models]) != 0)
        return -1;
    cfg->n_models++;
    return 0;
}

/* Checks and records the models of one source: a flag value is one model,
 * the variable a comma-separated list. */
static int add_models(server_config *cfg, const char *src, const char *s, bool is_list)
{
    size_t len = strlen(s);
    if (!is_list)
        return add_model(cfg, src, s, len);
    const char *p = s;
    while (p <= s + len) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (add_model(cfg, src, p, n) != 0)
            return -1;
        p += n + 1;
    }
    return 0;
}

/* Stores one option's value from `src` (the flag or the variable name). */
static int set_option(server_config *cfg, const opt_spec *o, const char *src, const char *value)
{
    void *f = field_ptr(cfg, o);
    unsigned long long v = 0;

    switch (o->type) {
    case T_HOST:
        if (value[0] == '\0' || strlen(value) > 255) {
            fprintf(stderr, "posenc: %s: expected a host name or address\n", src);
            return -1;
        }
        *(const char **)f = value;
        return 0;
    case T_KEY:
        if (value[0] == '\0') {
            fprintf(stderr, "posenc: %s: the API key must not be empty\n", src);
            return -1;
        }
        *(const char **)f = value;
        return 0;
    case T_UINT:
        if (parse_number(src, value, o->min, o->max, &v) != 0)
            return -1;
        *(unsigned *)f = (unsigned)v;
        return 0;
    case T_SIZE:
        if (parse_number(src, value, o->min, o->max, &v) != 0)
            return -1;
        if (v > SIZE_MAX) {
            fprintf(stderr, "posenc: %s: %s does not fit this machine\n", src, value);
            return -1;
        }
        *(size_t *)f = (size_t)v;
        return 0;
    case T_BYTES:
        return parse_bytes(src, value, o->min, o->max, (size_t *)f);
    case T_LOGFMT:
        if (strcmp(value, "text") == 0) {
            *(log_format *)f = LOG_TEXT;
        } else if (strcmp(value, "json") == 0) {
            *(log_format *)f = LOG_JSON;
        } else {
            fprintf(stderr, "posenc: %s: '%s' is not text or json\n", src, value);
            return -1;
        }
        return 0;
    case T_MODEL:
        return add_models(cfg, src, value, o->env && strcmp(src, o->env) == 0);
    case T_SWITCH:
        *(bool *)f = true;
        return 0;
    }
    return -1;
}

static const opt_spec *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (strlen(OPTIONS[i].flag) == len && memcmp(OPTIONS[i].flag, name, len) == 0)
            return &OPTIONS[i];
    }
    return NULL;
}

/* What the command line gave: the last value of each flag, and every
 * --model (parsed into models.models). */
typedef struct given_flags {
    const char *value[N_OPTIONS]; /* borrowed from argv; NULL: not given */
    bool model_flag_seen;
    server_config models;
} given_flags;

/* The value of flag o at argv[*i] (after '=', or the next argument, which
 * is then consumed), or NULL after saying why. */
static const char *flag_value(const opt_spec *o, const char *eq, int argc, char **argv, int *i)
{
    if (o->type == T_SWITCH) {
        if (eq == NULL)
            return "";
        fprintf(stderr, "posenc: %s takes no value\n", o->flag);
        return NULL;
    }
    if (eq != NULL)
        return eq + 1;
    if (*i + 1 < argc)
        return argv[++*i];
    fprintf(stderr, "posenc: %s needs a value (%s)\n", o->flag, o->meta);
    return NULL;
}

/* First pass: collect the last value of each flag (--model: all). */
static config_result collect_flags(given_flags *g, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help();
            return CONFIG_EXIT;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("posenc %s\n", POSENC_VERSION);
            return CONFIG_EXIT;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            fprintf(stderr, "posenc: unexpected argument '%s' (see --help)\n", arg);
            return CONFIG_ERROR;
        }
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const opt_spec *o = find_option(arg, name_len);
        if (o == NULL) {
            fprintf(stderr, "posenc: unknown flag '%.*s' (see --help)\n", (int)name_len, arg);
            return CONFIG_ERROR;
        }
        const char *value = flag_value(o, eq, argc, argv, &i);
        if (value == NULL)
            return CONFIG_ERROR;
        if (o->type == T_MODEL) {
            g->model_flag_seen = true;
            if (set_option(&g->models, o, o->flag, value) != 0)
                return CONFIG_ERROR;
        }
        g->value[o - OPTIONS] = value;
    }
    return CONFIG_RUN;
}

/* Second pass: flag, else non-empty variable, else the default. */
static config_result apply_flags(server_config *cfg, const given_flags *g)
{
    for (size_t k = 0; k < N_OPTIONS; k++) {
        const opt_spec *o = &OPTIONS[k];
        if (o->type == T_MODEL) {
            if (g->model_flag_seen) {
                memcpy(cfg->models, g->models.models, sizeof cfg->models);
                cfg->n_models = g->models.n_models;
                continue;
            }
        } else if (g->value[k] != NULL) {
            if (set_option(cfg, o, o->flag, g->value[k]) != 0)
                return CONFIG_ERROR;
            continue;
        }
        const char *env = o->env ? getenv(o->env) : NULL;
        if (env != NULL && env[0] != '\0' && set_option(cfg, o, o->env, env) != 0)
            return CONFIG_ERROR;
    }
    if (cfg->probe_port != 0 && cfg->probe_port == cfg->port) {
        fprintf(stderr, "posenc: --probe-port (%u) must differ from --port\n", cfg->probe_port);
        return CONFIG_ERROR;
    }
    return CONFIG_RUN;
}

config_result config_parse(server_config *cfg, int argc, char **argv)
{
    given_flags g;
    memset(&g, 0, sizeof g);
    config_defaults(cfg);
    config_result r = collect_flags(&g, argc, argv);
    if (r == CONFIG_RUN)
        r = apply_flags(cfg, &g);
    if (r != CONFIG_RUN)
        return r;

    if (cfg->workers == 0)
        cfg->workers = cfg->threads;
    if (cfg->max_connections < cfg->threads) {
        fprintf(stderr,
                "posenc: --max-connections (%u) must be at least --threads "
                "(%u)\n",
                cfg->max_connections, cfg->threads);
        return CONFIG_ERROR;
    }
    return CONFIG_RUN;
}

/*
 * api.h - the HTTP API of posenc without the HTTP: what server/ calls.
 *
 * Each endpoint takes the request body as bytes and fills an api_response
 * (status, JSON body). Nothing here knows libmicrohttpd; the server routes,
 * reads bodies under its limits, and hands them over. All functions are
 * thread-safe: an api_service is immutable after api_service_new() and may
 * be shared by every worker thread.
 */
#ifndef API_H
#define API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api_error.h"
#include "posenc.h"

/* The server's version is the library's (include/posenc.h). */
#define POSENC_VERSION PE_VERSION_STRING

/* Limits the API enforces on decoded requests. A field left 0 takes its
 * default. Past a limit a request is a 422 too_large. */
typedef struct api_limits {
    size_t max_tokens;          /* batch x tokens per request (default 65536) */
    size_t max_output_elements; /* any single output array (default 2^26) */
    size_t max_batch;           /* the batch axis of a request (default 1024) */
    size_t max_dim;             /* d, d_model, head_dim and rope head_dim that a
                                   request gives (default and most 65536) */
    size_t max_heads;           /* heads and kv_heads of an inline model, alibi
                                   heads (default 1024, most 65536) */
    size_t max_json_depth;      /* nesting of arrays and objects in a body
                                   (default 32, most 2048: jansson's own) */
    size_t max_json_values;     /* values and members of a body outside its
                                   numeric arrays (what jansson builds: default
                                   2^18); past it a 422 too_large */
    size_t string_span_min;     /* body strings this long (printable ASCII,
                                   no escape) are read from the body's text,
                                   not copied by jansson (default 4 KiB;
                                   SIZE_MAX: never). Only speed depends on it */
    size_t stream_min_bytes;    /* answers whose text may reach this are
                                   streamed (api_response.stream) a window
                                   at a time (default 1 MiB; SIZE_MAX:
                                   never) */
    unsigned diagnose_ms;       /* /diagnose: the search's budget per subject,
                                   milliseconds of CPU time (default 2000);
                                   a search cut short says truncated */
} api_limits;

#define API_DEFAULT_MAX_TOKENS ((size_t)65536)
#define API_DEFAULT_MAX_OUTPUT_ELEMENTS ((size_t)1 << 26)
#define API_DEFAULT_MAX_BATCH ((size_t)1024)
#define API_DEFAULT_MAX_DIM ((size_t)65536) /* also the most max_dim may be */
#define API_DEFAULT_MAX_HEADS ((size_t)1024)
#define API_DEFAULT_DIAGNOSE_MS 2000u
#define API_MAX_HEADS ((size_t)65536)
#define API_DEFAULT_MAX_JSON_DEPTH ((size_t)32)
#define API_MAX_JSON_DEPTH ((size_t)2048) /* jansson's JSON_PARSER_MAX_DEPTH */
#define API_DEFAULT_MAX_JSON_VALUES ((size_t)1 << 18)

/* The models being served plus limits. Opaque, immutable once built. */
typedef struct api_service api_service;

/* New service serving the built-in `default` model (allocates; free with
 * api_service_free). Returns NULL and fills *err on failure. */
api_service *api_service_new(const api_limits *limits, api_error *err);

/* One model directory to serve (--model NAME=DIR[:LAYER]). Strings are
 * borrowed for the duration of the call. */
typedef struct api_model_spec {
    const char *name; /* letters, digits, '.', '_', '-'; unique */
    const char *dir;  /* holds config.json and model.safetensors (or the
                         sharded model.safetensors.index.json) */
    bool has_layer;   /* a layer was given: Hugging Face checkpoints only */
    size_t layer;     /* the attention layer to serve (default 0) */
} api_model_spec;

/* New service serving the models of specs[0..n), loaded in order, plus the
 * built-in `default` model unless one of them is named "default" (then
 * that one is the default for requests that name no model). Loading reads
 * and checks every file it uses; on the first failure it returns NULL and
 * err->message says which model, which file, which key or tensor and what
 * is wrong ("model 'NAME': DIR/model.safetensors: tensor T: ..."). */
api_service *api_service_new_with_models(const api_limits *limits, const api_model_spec *specs,
                                         size_t n, api_error *err);

/* Frees the service and its models; accepts NULL. */
void api_service_free(api_service *svc);

/* The server-wide memory budget, as the API sees it (--max-memory). The
 * server owns it; a request reserves what it will hold (decoded input,
 * working buffers, the part of the answer held at once) after its plan and
 * before any arithmetic, and releases it when done. */
typedef enum api_budget_answer {
    API_BUDGET_GRANTED = 0, /* reserved: go on */
    API_BUDGET_BUSY,        /* not now: answer 503 unavailable + Retry-After */
    API_BUDGET_NEVER        /* more than the whole budget: 422 too_large */
} api_budget_answer;

typedef struct api_budget {
    void *owner; /* the server's; passed back to both calls */
    /* Reserve `bytes` more for a request that holds `held` bytes of the
     * budget already: NEVER when bytes + held pass the whole budget (the
     * request could not fit even alone), BUSY when they do not fit now. */
    api_budget_answer (*reserve)(void *owner, size_t bytes, size_t held);
    void (*release)(void *owner, size_t bytes);
    size_t held; /* what the request holds outside the api's reservations
                    (the server's charge for its body): counted by every
                    reserve, never released by the api */
} api_budget;

/* A body written while it is sent, for answers too large to hold whole.
 * The server calls read() until it returns 0, then free(); on a client
 * that went away it calls free() alone. */
#define API_STREAM_FAILED ((size_t)-1)
typedef struct api_body_stream {
    void *state; /* owned by the stream, freed by free() */
    /* Write up to cap (> 0) bytes of the body at buf; return how many, 0 at
     * the end, or API_STREAM_FAILED (the server then closes the
     * connection: the status line is already sent). */
    size_t (*read)(void *state, char *buf, size_t cap);
    void (*free)(void *state);
} api_body_stream;

/* A response: status, body and a few facts for logs and metrics. */
typedef struct api_response {
    int status;
    char *body; /* owned: malloc'd JSON text (not NUL-terminated
                               necessarily); free with api_response_free or
                               hand to the HTTP layer which frees it */
    size_t body_len;
    const char *content_type; /* static string */
    const char *error_code;   /* static, NULL on success */
    size_t tokens;            /* tokens processed (batch x tokens) */
    api_body_stream stream;   /* owned when stream.read != NULL: the body
                                     is streamed and body is NULL */
} api_response;

/* Frees out->body (and an unread out->stream) and resets the struct;
 * accepts NULL. */
void api_response_free(api_response *out);

/* Fill *out with the contract's JSON error body for *err. */
void api_respond_error(api_response *out, const api_error *err);

/* Convenience for the server: build and respond with one error. */
void api_respond_errorf(api_response *out, api_error_kind kind, const char *field, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

/* POST /encode and POST /apply: body is the raw request (len bytes, need
 * not be NUL-terminated). budget may be NULL (no budget). Always fills
 * *out (a 2xx result or an error). */
void api_encode(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                api_response *out);
void api_apply(const api_service *svc, const api_budget *budget, const char *body, size_t len,
               api_response *out);

/* POST /diagnose: what differs between an encoding a client computed and
 * the one it claims, and which known mistake explains it (api/diagnose/diagnose.c).
 * Same conventions as api_encode. */
void api_diagnose(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                  api_response *out);

/* What a request to a compute endpoint will cost, estimated from its body
 * in one pass that decodes and allocates nothing (api/cost.c): about the
 * nanoseconds it computes for when alone, from its tokens, d, the model's
 * heads, the outputs it asks for (scores: heads x tokens^2) and, for
 * /diagnose, its subject's size times the search's variants. Only good
 * within a few times; the server uses it to choose where a request
 * computes (server/compute_gate.h). A body the estimate cannot read with
 * certainty (an escape in a key it reads, deep nesting) is
 * API_COST_UNKNOWN, which counts as the most expensive. Thread-safe. */
typedef enum api_endpoint {
    API_ENDPOINT_ENCODE,
    API_ENDPOINT_APPLY,
    API_ENDPOINT_DIAGNOSE
} api_endpoint;
#define API_COST_UNKNOWN UINT64_MAX
uint64_t api_request_cost(const api_service *svc, api_endpoint ep, const char *body, size_t len);

/* What the server knows about itself, for GET /info. Strings borrowed. */
typedef struct api_server_facts {
    const char *version;
    const char *build; /* compiler and build flavour, e.g. "gcc 12.2.0 -O2" */
    unsigned http_threads;
    unsigned omp_threads;
    size_t max_body_bytes;
    unsigned max_connections;
    bool api_key_required;
    unsigned max_inflight;      /* /encode and /apply admitted at once */
    unsigned workers;           /* threads computing /encode and /apply */
    unsigned timeout_s;         /* idle connection timeout */
    unsigned request_timeout_s; /* to receive a request, and to send its answer */
    size_t connection_memory;   /* per-connection buffer for headers */
    size_t memory_budget;       /* --max-memory, bytes */
    size_t memory_reserved;     /* of it, reserved when /info was asked */
} api_server_facts;

/* GET /info: version, build, threads, limits and the models. */
void api_info(const api_service *svc, const api_server_facts *facts, api_response *out);

/* GET /openapi.yaml and /openapi.json: the specification text, static. */
const char *api_openapi_yaml(size_t *len);
const char *api_openapi_json(size_t *len);

/* s as JSON string content (no quotes), escaped as the API escapes every
 * string it writes (one escaper: api/json/strbuf.h's json_escape_char),
 * appended at buf + *len for server/'s JSON log lines. Whole characters
 * only: it stops quietly before the first one that would leave `keep` or
 * fewer bytes of cap free, so the caller's closing text always fits.
 * buf stays NUL-terminated; requires *len + keep < cap. */
void api_json_escape(char *buf, size_t *len, size_t cap, size_t keep, const char *s);

#endif /* API_H */

/*
 * handlers.h - what each route does once admission.c has let a request
 * through (auth, limits, media type, capacity: see admission.h).
 *
 * The handlers only pick which api.h function answers; everything about a
 * request body (JSON, shapes, errors) is api/'s business. The route table
 * that names them is routes.h.
 */
#ifndef SERVER_HANDLERS_H
#define SERVER_HANDLERS_H

#include <stddef.h>

#include "api.h"

typedef struct server_ctx server_ctx;

/* What a handler answers. The body is api.body (malloc'd, handed to the
 * HTTP layer), or api.stream when it is streamed, unless static_body is
 * set, which is sent as is and never freed. api.content_type must be set
 * either way. */
typedef struct handler_reply {
    api_response api;
    const char *static_body;
    size_t static_len;
} handler_reply;

/* The whole request body as a handler gets it. */
typedef struct handler_body {
    const char *text; /* borrowed: len bytes, not NUL-terminated; empty for GET */
    size_t len;
    size_t charged; /* what it holds of the memory budget (the request's own) */
} handler_body;

/* A handler gets the body and fills *out. It runs on an HTTP or a worker
 * thread. */
typedef void handler_fn(server_ctx *srv, const handler_body *body, handler_reply *out);

handler_fn handle_encode;       /* POST /encode */
handler_fn handle_apply;        /* POST /apply */
handler_fn handle_diagnose;     /* POST /diagnose */
handler_fn handle_healthz;      /* GET /healthz: liveness */
handler_fn handle_readyz;       /* GET /readyz: readiness */
handler_fn handle_info;         /* GET /info */
handler_fn handle_metrics;      /* GET /metrics */
handler_fn handle_openapi_yaml; /* GET /openapi.yaml */
handler_fn handle_openapi_json; /* GET /openapi.json */
handler_fn handle_page;         /* GET /: the explorer */

#endif /* SERVER_HANDLERS_H */

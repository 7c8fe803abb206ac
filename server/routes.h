/*
 * routes.h - the route table: which method and path run which handler,
 * and which checks guard it.
 *
 * The table alone: the handlers are handlers.h, and metrics get the
 * labels (route_label) at start-up. Paths match exactly (MHD hands over the path without the query string).
 * A GET route also answers HEAD (MHD then sends the headers only). An
 * unknown path is a 404; a known path with another method a 405 whose
 * Allow header comes from route_allow_header().
 */
#ifndef SERVER_ROUTES_H
#define SERVER_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "handlers.h"

typedef struct route {
    const char *method; /* "GET" or "POST" */
    const char *path;   /* exact path, also the metrics label */
    handler_fn *handler;
    bool needs_auth; /* Bearer key required when one is configured */
    bool json_body;  /* body is read and must be application/json */
    bool compute;    /* counts against --max-inflight; refused with
                               503 while draining */
    bool probe;      /* also served on --probe-port */
} route;

#define ROUTE_COUNT 10

/* The route for `path`, or NULL (404). */
const route *routes_find(const char *path);

/* Whether `method` may be used on r (HEAD counts as GET). */
bool route_allows(const route *r, const char *method);

/* The value of the Allow header for a 405 on r. */
const char *route_allow_header(const route *r);

/* r's position in the table, 0..ROUTE_COUNT-1; -1 for NULL. */
int route_index(const route *r);

/* The metrics/log label of a route index: its path, or "other" for -1. */
const char *route_label(int index);

#endif /* SERVER_ROUTES_H */

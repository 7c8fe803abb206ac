/*
 * reply.h - sending a request's answer through libmicrohttpd, with the
 * headers every response carries.
 */
#ifndef SERVER_REPLY_H
#define SERVER_REPLY_H

#include <stdbool.h>

#include "api_error.h"
#include "request.h"

/* Queues req->reply (its api.body is stolen, even on failure) with
 * Content-Type, X-Request-Id and the status's own headers (WWW-
 * Authenticate, Allow, Retry-After), and records what was sent; req is
 * then REQ_ANSWERED. close adds `Connection: close` (as do draining and a
 * connection over --max-connections). Returns libmicrohttpd's MHD_YES, or
 * MHD_NO (the connection is then closed). */
int reply_send(http_request *req, bool close);

/* Answers with one of api_error.h's errors, built the one way errors are
 * built (api_respond_errorf) into req->reply, which holds nothing yet
 * whenever the server refuses a request itself. */
#define reply_error(req, close, kind, ...)                                                         \
    (api_respond_errorf(&(req)->reply.api, (kind), NULL, __VA_ARGS__), reply_send((req), (close)))

#endif /* SERVER_REPLY_H */

/*
 * body_intake.h - a request body as it arrives: kept up to
 * --max-body-bytes and charged to the memory budget, or dropped.
 *
 * A chunked body that passes the limit is dropped from there on and
 * answered with 413 when it ends (libmicrohttpd 0.9.75 cannot answer in
 * the middle of a body); one that runs on past twice the limit (at least
 * 1 MiB past it) has its connection closed instead. A chunked body the
 * memory budget cannot hold now is dropped the same way and answered 503.
 */
#ifndef SERVER_BODY_INTAKE_H
#define SERVER_BODY_INTAKE_H

#include <stddef.h>

#include "request.h"

/* n bytes of req's body at data (borrowed): kept, or dropped. Returns
 * libmicrohttpd's MHD_YES (1), or MHD_NO (0) to close the connection (a
 * body past what may be dropped, or out of memory; req->status and
 * req->error_code then say why, for the log). */
int body_intake_receive(http_request *req, const char *data, size_t n);

#endif /* SERVER_BODY_INTAKE_H */

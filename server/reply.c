/*
 * reply.c - responses (see reply.h).
 */
#include "reply.h"

#include <string.h>

#include <microhttpd.h>

/* The libmicrohttpd response for rep: its static body, its stream
 * (written while it is sent, a block at a time, body_stream.h; bytes_out
 * counts what the reader hands out) or its buffer, whose ownership passes
 * to the response. *len is the body's size (0 for a stream). NULL when out
 * of memory (the body is freed). */
static struct MHD_Response *new_response(http_request *req, handler_reply *rep, size_t *len)
{
    api_response *a = &rep->api;
    struct MHD_Response *resp;

    if (rep->static_body != NULL) {
        const struct MHD_IoVec iov = {rep->static_body, rep->static_len};
        *len = rep->static_len;
        resp = MHD_create_response_from_iovec(&iov, 1, NULL, NULL);
    } else if (a->stream.read != NULL) {
        *len = 0;
        body_stream *bs = body_stream_new(&a->stream, &req->bytes_out, &req->stream);
        resp = bs == NULL
                   ? NULL
                   : MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BODY_STREAM_BLOCK,
                                                       body_stream_read, bs, body_stream_free);
        if (resp == NULL)
            body_stream_free(bs);
    } else {
        *len = a->body != NULL ? a->body_len : 0;
        resp = MHD_create_response_from_buffer(*len, a->body,
                                               a->body ? MHD_RESPMEM_MUST_FREE
                                                       : MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL)
        api_response_free(a);
    a->body = NULL; /* MHD frees it with the response */
    return resp;
}

/* The headers of every response, and those of its status. */
static bool add_headers(const http_request *req, struct MHD_Response *resp, const api_response *a,
                        bool close)
{
    server_ctx *srv = req->srv;
    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                      a->content_type ? a->content_type : "application/json");
    ok = ok && MHD_add_response_header(resp, "X-Request-Id", req->id);
    if (a->status == MHD_HTTP_UNAUTHORIZED)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (a->status == MHD_HTTP_METHOD_NOT_ALLOWED && req->route != NULL)
        ok = ok &&
             MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, route_allow_header(req->route));
    if (a->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    /* Draining: let clients reconnect elsewhere. Over the connection
     * limit: free the slot. */
    if (close || atomic_load(&srv->draining) || (req->ce != NULL && req->ce->over_limit))
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    /* Closed early on purpose: the client may still be sending. */
    if (close)
        conn_guard_linger(req->ce);
    return ok;
}

int reply_send(http_request *req, bool close)
{
    server_ctx *srv = req->srv;
    api_response *a = &req->reply.api;
    size_t len;
    struct MHD_Response *resp = new_response(req, &req->reply, &len);
    if (resp == NULL)
        return MHD_NO;

    enum MHD_Result r = MHD_NO;
    if (add_headers(req, resp, a, close))
        r = MHD_queue_response(req->conn, (unsigned)a->status, resp);
    MHD_destroy_response(resp);
    if (r == MHD_YES) {
        /* The work is done: free the --max-inflight slot before the first
         * byte goes out, so that a client's next request never finds its
         * previous one still holding it. */
        req_set_state(req, REQ_ANSWERED);
        atomic_fetch_add_explicit(&srv->metrics.sending, 1, memory_order_relaxed);
        /* The client has --request-timeout to take the response. */
        conn_guard_arm(srv->guard, req->ce);
        req->status = a->status;
        if (req->stream == NULL)
            req->bytes_out = strcmp(req->method, "HEAD") == 0 ? 0 : len;
        req->error_code = a->error_code;
        req->tokens = a->tokens;
    }
    return r;
}

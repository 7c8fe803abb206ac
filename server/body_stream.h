/*
 * body_stream.h - serving an api_body_stream (api.h) through
 * libmicrohttpd's content-reader callbacks, a bounded block at a time.
 *
 * An answer too large to hold whole (a streamed api_response) is written
 * while it is sent: libmicrohttpd asks body_stream_read for at most
 * BODY_STREAM_BLOCK bytes whenever the socket can take more, so a slow
 * client costs one block, not the whole text. body_stream_free runs when
 * the response is destroyed, delivered or not (a client that went away
 * included), and frees the stream through its own free().
 *
 * Threads: libmicrohttpd calls both callbacks, and request.c detaches a
 * finished request (body_stream_detach), on the connection's own thread.
 */
#ifndef SERVER_BODY_STREAM_H
#define SERVER_BODY_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api.h"

#define BODY_STREAM_BLOCK ((size_t)64 * 1024)

typedef struct body_stream {
    api_body_stream stream;    /* owned: freed by body_stream_free */
    uint64_t *sent;            /* the request's byte count, or NULL */
    struct body_stream **back; /* the request's pointer to this, or NULL */
} body_stream;

/* New holder of *s, which it steals (even on failure: then s->free has
 * run and NULL is returned); *s is zeroed. sent, when not NULL, counts the
 * bytes handed out; *back is set to the holder and cleared when it is
 * freed. */
body_stream *body_stream_new(api_body_stream *s, uint64_t *sent, body_stream **back);

/* libmicrohttpd's MHD_ContentReaderCallback: up to max bytes at buf; the
 * end of the body or a failure of the stream as libmicrohttpd's codes. */
ssize_t body_stream_read(void *cls, uint64_t pos, char *buf, size_t max);

/* libmicrohttpd's MHD_ContentReaderFreeCallback. */
void body_stream_free(void *cls);

/* The request is over: stop counting into it and pointing at it. */
void body_stream_detach(body_stream *bs);

#endif /* SERVER_BODY_STREAM_H */

/*
 * body_stream.c - content-reader callbacks over an api_body_stream (see
 * body_stream.h).
 */
#include "body_stream.h"

#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

body_stream *body_stream_new(api_body_stream *s, uint64_t *sent, body_stream **back)
{
    body_stream *bs = calloc(1, sizeof *bs);
    if (bs == NULL) {
        if (s->free != NULL)
            s->free(s->state);
        memset(s, 0, sizeof *s);
        return NULL;
    }
    bs->stream = *s;
    memset(s, 0, sizeof *s);
    bs->sent = sent;
    bs->back = back;
    if (back != NULL)
        *back = bs;
    return bs;
}

ssize_t body_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    body_stream *bs = cls;
    (void)pos; /* the stream keeps its own place */
    if (max > BODY_STREAM_BLOCK)
        max = BODY_STREAM_BLOCK;
    if (max == 0)
        return 0; /* libmicrohttpd asks again when it has room */
    size_t n = bs->stream.read(bs->stream.state, buf, max);
    if (n == API_STREAM_FAILED || n > max)
        return MHD_CONTENT_READER_END_WITH_ERROR; /* closes the connection */
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (bs->sent != NULL)
        *bs->sent += n;
    return (ssize_t)n;
}

void body_stream_free(void *cls)
{
    body_stream *bs = cls;
    if (bs == NULL)
        return;
    if (bs->stream.free != NULL)
        bs->stream.free(bs->stream.state);
    if (bs->back != NULL)
        *bs->back = NULL;
    free(bs);
}

void body_stream_detach(body_stream *bs)
{
    if (bs == NULL)
        return;
    bs->sent = NULL;
    bs->back = NULL;
}

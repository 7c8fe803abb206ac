/*
 * header_syntax.h - what RFC 9110/9112 say a request's header section must
 * look like, where libmicrohttpd 0.9.75 is lenient.
 *
 * libmicrohttpd splits a header line at its first colon and keeps the name
 * as sent: `Content-Length : 36` becomes a header named "Content-Length "
 * that it does not take for the length, so the body is read as the next
 * request (request smuggling); an empty name hides nothing from it either.
 * It accepts HTTP/1.1 without Host, two Host headers and control bytes (a
 * bare CR) in values. RFC 9112 section 3.2 and 5 say to answer all of
 * these with 400 and close the connection.
 *
 * Pure functions over the headers as received (framing.h's list), so that
 * they are tested without a server.
 */
#ifndef SERVER_HEADER_SYNTAX_H
#define SERVER_HEADER_SYNTAX_H

#include <stdbool.h>
#include <stddef.h>

#include "framing.h"

typedef enum header_verdict {
    HEADERS_OK = 0,
    HEADERS_BAD_NAME,  /* a name that is empty or not a token (a blank in it) */
    HEADERS_BAD_VALUE, /* a control byte other than HTAB (a bare CR) in a value */
    HEADERS_NO_HOST,   /* HTTP/1.1 without Host */
    HEADERS_TWO_HOSTS  /* more than one Host header */
} header_verdict;

/* The verdict on h[0..n) for a request of HTTP/1.1 (http11) or older;
 * *at is the index of the header at fault (n when none is). */
header_verdict header_syntax_check(const framing_header *h, size_t n, bool http11, size_t *at);

/* A message for v (static); for a name or a value, the caller names the
 * header. */
const char *header_syntax_message(header_verdict v);

#endif /* SERVER_HEADER_SYNTAX_H */

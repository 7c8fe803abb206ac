/*
 * framing.h - what RFC 9112 says to refuse in a request's headers, and
 * header values that hold a NUL byte.
 *
 * libmicrohttpd 0.9.75 takes the first of two Content-Length headers,
 * uses chunked framing when Transfer-Encoding and Content-Length are both
 * sent, and reads a body of any other transfer coding (gzip) until the
 * connection closes. RFC 9112 section 6.3 says to refuse all three: a
 * message whose framing two parties could read differently is how
 * requests get smuggled past proxies. The coding list is read as RFC 9112
 * section 6.1 does; libmicrohttpd de-chunks only the exact value
 * "chunked", so a valid list that means chunked but is spelled otherwise
 * (`chunked `, `,chunked`) is refused as not implemented rather than left
 * to hang until --request-timeout. It also cuts a header value at a NUL
 * byte (values are C strings), so `Authorization: Bearer KEY\0junk` reads
 * as `Bearer KEY`: the value it reports cannot show the NUL, but the
 * received header block can (framing_find_nul).
 *
 * Pure functions over the headers as received (no libmicrohttpd types),
 * so that they are tested without a server.
 */
#ifndef SERVER_FRAMING_H
#define SERVER_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

/* One received header, in arrival order. Both strings are borrowed from
 * libmicrohttpd's header block (see framing_find_nul). */
typedef struct framing_header {
    const char *name;
    const char *value;
} framing_header;

typedef enum framing_verdict {
    FRAMING_OK = 0,
    FRAMING_CONFLICTING_LENGTHS, /* Content-Length headers that differ: 400 */
    FRAMING_LENGTH_AND_CODING,   /* Transfer-Encoding with Content-Length: 400 */
    FRAMING_CHUNKED_TWICE,       /* chunked applied more than once: 400 */
    FRAMING_UNKNOWN_CODING,      /* a coding other than chunked: 501 */
    FRAMING_BAD_CODING,          /* Transfer-Encoding that is no list of codings: 400 */
    FRAMING_CHUNKED_NOT_LAST,    /* chunked, then another coding: 400 */
    FRAMING_CODING_SPELLING      /* chunked spelled other than exactly so: 501 */
} framing_verdict;

/* The verdict on the framing headers of h[0..n). Repeated Content-Length
 * headers with one same value are accepted (RFC 9110 8.6 allows it). */
framing_verdict framing_check(const framing_header *h, size_t n);

/* A message for the verdict, naming the headers (static). */
const char *framing_message(framing_verdict v);

/* The index of the first header whose value held a NUL byte when it was
 * received, or n when none did.
 *
 * libmicrohttpd parses the header block in place: each name is followed
 * by its ':' overwritten with NUL, optional blanks, the value, and the
 * value's line end (CR LF or a bare LF) overwritten with NULs; the next
 * name starts right after (the last header: see framing_check_tail). So after a value of strlen L come exactly one
 * or two NULs, then the next header's name (or, after the last, the empty
 * line's NULs). A value cut at a NUL is followed by the rest of the
 * line (`junk`) or by one NUL more than a line end holds: either way the
 * next name is not where the layout puts it. Only bytes of the header
 * block are read (at most one past a value's terminating NUL). The one
 * case it cannot see is a NUL that ends the value of the last header
 * ("Bearer KEY\0" then CR LF, nothing after the NUL): telling it from a
 * plain line end would mean reading past the header block. */
size_t framing_find_nul(const framing_header *h, size_t n);

/* Whether the libmicrohttpd of version `version` (MHD_get_version() of the
 * running library: 0.9.x and 1.x ship the same soname, so the one the
 * binary was built against says nothing) lays the header block out as
 * framing_find_nul and framing_check_tail read it: true for 0.9.x only.
 * libmicrohttpd 1.0 rewrote its header parser: it answers a NUL byte or an
 * empty name in a header line itself (HTML 400, connection closed, before
 * any posenc callback), and its block is laid out otherwise, so neither
 * reader may be used there, nor on a version this code does not know. */
bool framing_layout_is_in_place(const char *version);

/* What follows the text of the last line of the header block. */
typedef enum framing_tail {
    TAIL_OK = 0, /* line ends only */
    TAIL_NUL,    /* the last header's value held a NUL byte */
    TAIL_LOST    /* a line libmicrohttpd did not take as a header (an empty name) */
} framing_tail;

/* The verdict on the header block's end. libmicrohttpd reports the size of
 * the header block it parsed (from the method to past the empty line), in
 * which every line end is one or two NULs. After the text of the last line
 * (the last header's value, or the version when there is no header:
 * line_end points at its terminating NUL) only line ends may follow, up to
 * block_end: those of the last line and of the empty line, `width` (1 or
 * 2, the request line's; 0 when unknown) each when the client used one
 * kind. One NUL more is a NUL that ended the value (`Bearer KEY\0`); any
 * other byte means libmicrohttpd stopped short of the client's empty line,
 * as it does at a line with an empty name (`: x`), whose following lines
 * (a Content-Length) it then reads as the body. Only bytes in
 * [line_end, block_end) are read; a line_end outside the block (a folded
 * value, copied elsewhere) is not judged. */
framing_tail framing_check_tail(const char *line_end, const char *block_start,
                                const char *block_end, size_t width);

#endif /* SERVER_FRAMING_H */

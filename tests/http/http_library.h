/*
 * http_library.h - which libmicrohttpd the server under test runs, for the
 * checks whose answer comes from the library rather than from posenc.
 *
 * libmicrohttpd 0.9.x hands a request with a malformed header section to
 * posenc, which refuses it with a JSON error. 1.0 and later parse headers
 * strictly and refuse such requests themselves, before any posenc
 * callback: an HTML 400, then the connection closed (a NUL byte, a blank
 * in a name or before the colon, an empty name, a bare CR, HTTP/1.1
 * without Host, a Transfer-Encoding other than chunked). 1.0 also trims
 * the blanks around a value, so `Transfer-Encoding: chunked ` is chunked.
 * Both releases have the same soname: only the running server can tell
 * which one it loaded.
 */
#ifndef HTTP_LIBRARY_H
#define HTTP_LIBRARY_H

#include <stdbool.h>

#include "harness.h"

/* The answers to malformed requests one libmicrohttpd gives. */
typedef enum mhd_answers {
    MHD_PASSES_ON, /* 0.9.x: posenc answers */
    MHD_REFUSES    /* 1.0 and later: the library answers */
} mhd_answers;

/* What the libmicrohttpd of the running server s does, read from the
 * version its start-up log line names ("..., libmicrohttpd 1.0.1): ...").
 * A log without a version is a failed check (and MHD_PASSES_ON). */
mhd_answers server_mhd_answers(const server *s);

#endif /* HTTP_LIBRARY_H */

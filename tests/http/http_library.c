/*
 * http_library.c - which libmicrohttpd the server under test runs (see
 * http_library.h).
 */
#include "http_library.h"

#include <stdlib.h>
#include <string.h>

mhd_answers server_mhd_answers(const server *s)
{
    static const char tag[] = "libmicrohttpd ";
    char *log = server_read_log(s); /* owned */
    const char *at = log != NULL ? strstr(log, tag) : NULL;
    long major = -1;
    if (at != NULL) {
        char *end = NULL;
        major = strtol(at + sizeof tag - 1, &end, 10);
        if (end == at + sizeof tag - 1 || *end != '.')
            major = -1;
    }
    free(log);
    CHECK(major >= 0, s->name, "the server's log names no libmicrohttpd version");
    return major >= 1 ? MHD_REFUSES : MHD_PASSES_ON;
}

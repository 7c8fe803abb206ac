/*
 * printable.h - client text (a path, a header) made safe to quote in an
 * error message or a log line.
 */
#ifndef SERVER_PRINTABLE_H
#define SERVER_PRINTABLE_H

#include <stddef.h>

/* Writes s into out (cap bytes, cap >= 8): visible ASCII as is, other
 * bytes percent-encoded (a path decoded by libmicrohttpd or a header may
 * hold any byte, including invalid UTF-8), cut to fit with "...". */
void printable_text(char *out, size_t cap, const char *s);

#endif /* SERVER_PRINTABLE_H */

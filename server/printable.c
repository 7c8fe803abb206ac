/*
 * printable.c - client text made safe for messages (see printable.h).
 */
#include "printable.h"

#include <string.h>

void printable_text(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (n + 4 + 3 >= cap) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        if (*p >= 0x20 && *p < 0x7f && *p != '%') {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = '\0';
}

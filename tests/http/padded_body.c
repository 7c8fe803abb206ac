/*
 * padded_body.c - /encode bodies of an exact size (see padded_body.h).
 */
#include "padded_body.h"

#include <string.h>

#include "harness.h"

char *padded_encode_body(size_t len)
{
    char *b = xmalloc(len + 1);
    memset(b, ' ', len);
    memcpy(b, "{\"shape\":[1,2]", 14);
    b[len - 1] = '}';
    b[len] = '\0';
    return b;
}

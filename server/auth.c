/*
 * auth.c - constant-time check of a Bearer token (see auth.h).
 */
#include "auth.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* Compares the given token with the key touching every byte of the token:
 * the time depends on the token's length (which the client chose) and
 * never on where the bytes differ or on the key's length. */
static bool equal_const_time(const char *given, size_t given_len, const char *key, size_t key_len)
{
    unsigned char diff = given_len != key_len;
    for (size_t i = 0; i < given_len; i++) {
        unsigned char k = key_len ? (unsigned char)key[i % key_len] : 0;
        diff |= (unsigned char)((unsigned char)given[i] ^ k);
    }
    return diff == 0;
}

bool auth_bearer_ok(const char *header, const char *key)
{
    static const char scheme[] = "Bearer";
    const size_t scheme_len = sizeof scheme - 1;

    if (header == NULL || key == NULL)
        return false;
    if (strncasecmp(header, scheme, scheme_len) != 0 || header[scheme_len] != ' ')
        return false;
    const char *token = header + scheme_len;
    while (*token == ' ')
        token++;
    size_t len = strlen(token);
    while (len > 0 && (token[len - 1] == ' ' || token[len - 1] == '\t'))
        len--;
    return equal_const_time(token, len, key, strlen(key));
}

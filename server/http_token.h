/*
 * http_token.h - the characters of an RFC 9110 token (section 5.6.2),
 * which header names and transfer codings are made of.
 */
#ifndef SERVER_HTTP_TOKEN_H
#define SERVER_HTTP_TOKEN_H

#include <stdbool.h>
#include <string.h>

/* Whether c may be part of a token (tchar). */
static inline bool http_is_tchar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

#endif /* SERVER_HTTP_TOKEN_H */

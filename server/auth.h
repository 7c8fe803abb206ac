/*
 * auth.h - the optional API key: `Authorization: Bearer <key>`.
 */
#ifndef SERVER_AUTH_H
#define SERVER_AUTH_H

#include <stdbool.h>

/* Whether the Authorization header value `header` (NULL when absent)
 * carries exactly `key` as a Bearer token. The scheme name is
 * case-insensitive (RFC 9110) and may be followed by several spaces. The
 * key comparison takes the same time wherever the first difference is, so
 * response timing does not reveal a prefix of the key. */
bool auth_bearer_ok(const char *header, const char *key);

#endif /* SERVER_AUTH_H */

/*
 * request_id.h - the X-Request-Id of each request: the client's when it is
 * sane, else a fresh one.
 */
#ifndef SERVER_REQUEST_ID_H
#define SERVER_REQUEST_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REQUEST_ID_MAX 128 /* longest id accepted from a client */

/* Whether a client-sent id may be echoed and logged: 1 to REQUEST_ID_MAX
 * visible ASCII characters (0x21-0x7e), so no spaces or control bytes can
 * reach a log line or a response header. NULL is not sane. */
bool request_id_is_sane(const char *id);

/* Writes the id of the n-th request as 16 lowercase hex digits into out
 * (cap >= 17). The mix of seed and n is a bijection of n, so ids never
 * repeat within a process, and the random seed keeps them from repeating
 * across restarts. */
void request_id_generate(char *out, size_t cap, uint64_t seed, uint64_t n);

/* A random 64-bit seed for request_id_generate (getrandom, else time and
 * pid). */
uint64_t request_id_seed(void);

#endif /* SERVER_REQUEST_ID_H */

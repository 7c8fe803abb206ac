/*
 * request_id.c - X-Request-Id checks and generation (see request_id.h).
 */
#include "request_id.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

bool request_id_is_sane(const char *id)
{
    if (id == NULL || id[0] == '\0')
        return false;
    size_t i = 0;
    for (; id[i] != '\0'; i++) {
        if (i >= REQUEST_ID_MAX)
            return false;
        unsigned char c = (unsigned char)id[i];
        if (c < 0x21 || c > 0x7e)
            return false;
    }
    return true;
}

/* splitmix64's finaliser: a bijection on 64-bit integers that spreads
 * consecutive inputs over the whole range. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

void request_id_generate(char *out, size_t cap, uint64_t seed, uint64_t n)
{
    snprintf(out, cap, "%016llx", (unsigned long long)mix64(seed + n));
}

uint64_t request_id_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed)
        return seed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return mix64((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
}

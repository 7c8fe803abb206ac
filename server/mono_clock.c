/*
 * mono_clock.c - see mono_clock.h.
 */
#include "mono_clock.h"

#include <time.h>

int64_t mono_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

uint64_t mono_elapsed_ns(int64_t start_ns)
{
    int64_t ns = mono_now_ns() - start_ns;
    return ns > 0 ? (uint64_t)ns : 0;
}

double mono_seconds_since(int64_t start_ns)
{
    return (double)mono_elapsed_ns(start_ns) / 1e9;
}

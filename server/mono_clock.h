/*
 * mono_clock.h - the server's one monotonic clock (CLOCK_MONOTONIC), for
 * durations and deadlines: never affected by changes of the wall clock.
 */
#ifndef SERVER_MONO_CLOCK_H
#define SERVER_MONO_CLOCK_H

#include <stdint.h>

/* Nanoseconds since an arbitrary fixed point. */
int64_t mono_now_ns(void);

/* Nanoseconds since start_ns (a mono_now_ns value), 0 if negative. */
uint64_t mono_elapsed_ns(int64_t start_ns);

/* The same in seconds. */
double mono_seconds_since(int64_t start_ns);

#endif /* SERVER_MONO_CLOCK_H */

/*
 * heap_policy.c - glibc malloc settings and the idle trim (see
 * heap_policy.h).
 */
#include "heap_policy.h"

#include <malloc.h>

/* glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: half a thread arena's heap.
 * Bigger blocks are mmapped whatever the setting. */
#define MMAP_THRESHOLD_MAX (4 * 1024 * 1024 * (int)sizeof(long))
/* free() leaves this much free at the top of a heap before trimming it:
 * far more than any request, so only the idle trim gives memory back. */
#define TRIM_THRESHOLD (1 << 30)

void heap_policy_init(void)
{
    /* Settings, not requirements: a C library without them (or ASan's
     * allocator) only loses the reuse, so failures are not errors. */
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX);
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    mallopt(M_ARENA_MAX, 1);
}

void heap_policy_trim(void)
{
    malloc_trim(0);
}

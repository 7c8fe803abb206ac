/*
 * mem_budget.c - the memory budget and its default (see mem_budget.h).
 */
#include "mem_budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FALLBACK_TOTAL ((size_t)1 << 30)

void mem_budget_init(mem_budget *b, size_t total)
{
    b->total = total;
    atomic_init(&b->reserved, 0);
    atomic_init(&b->refused_busy, 0);
    atomic_init(&b->refused_never, 0);
}

api_budget_answer mem_budget_reserve(mem_budget *b, size_t bytes, size_t held)
{
    if (bytes > b->total || held > b->total - bytes) {
        atomic_fetch_add_explicit(&b->refused_never, 1, memory_order_relaxed);
        return API_BUDGET_NEVER;
    }
    size_t now = atomic_load_explicit(&b->reserved, memory_order_relaxed);
    do {
        if (bytes > b->total - now) {
            atomic_fetch_add_explicit(&b->refused_busy, 1, memory_order_relaxed);
            return API_BUDGET_BUSY;
        }
    } while (!atomic_compare_exchange_weak_explicit(&b->reserved, &now, now + bytes,
                                                    memory_order_acq_rel, memory_order_relaxed));
    return API_BUDGET_GRANTED;
}

void mem_budget_release(mem_budget *b, size_t bytes)
{
    atomic_fetch_sub_explicit(&b->reserved, bytes, memory_order_acq_rel);
}

size_t mem_budget_reserved(mem_budget *b)
{
    return atomic_load_explicit(&b->reserved, memory_order_relaxed);
}

static api_budget_answer api_reserve(void *owner, size_t bytes, size_t held)
{
    return mem_budget_reserve(owner, bytes, held);
}

static void api_release(void *owner, size_t bytes)
{
    mem_budget_release(owner, bytes);
}

api_budget mem_budget_api(mem_budget *b, size_t body_charged)
{
    return (api_budget){.owner = b,
                        .reserve = api_reserve,
                        .release = api_release,
                        .held = body_charged};
}

/* cgroup v2's memory.max: a byte count, or "max" (no limit: 0 here). */
static unsigned long long cgroup_limit(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f == NULL)
        return 0;
    char line[64] = "";
    unsigned long long n = 0;
    if (fgets(line, sizeof line, f) != NULL && strncmp(line, "max", 3) != 0)
        n = strtoull(line, NULL, 10);
    fclose(f);
    return n;
}

/* MemTotal of /proc/meminfo in bytes, 0 when unreadable. */
static unsigned long long machine_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return 0;
    char line[128];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib * 1024ULL;
}

size_t mem_budget_default_total(void)
{
    unsigned long long machine = machine_memory();
    unsigned long long limit = cgroup_limit();
    unsigned long long usable = machine;
    if (limit > 0 && (usable == 0 || limit < usable))
        usable = limit;
    if (usable == 0)
        return FALLBACK_TOTAL;
    usable /= 2;
    return usable > SIZE_MAX ? SIZE_MAX : (size_t)usable;
}

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

/* Where the cgroup file systems are mounted: POSENC_CGROUP_ROOT, for tests
 * (a fake tree), else /sys/fs/cgroup. */
static const char *cgroup_root(void)
{
    const char *root = getenv("POSENC_CGROUP_ROOT");
    return root && *root ? root : "/sys/fs/cgroup";
}

/* v1 says "no limit" with a huge page-rounded count (9223372036854771712
 * on x86-64); any count this large is none. */
#define CGROUP_NO_LIMIT ((unsigned long long)1 << 60)

/* The byte count in root/file: 0 when the file is absent or unreadable,
 * says "max" (v2's no limit) or holds a count past CGROUP_NO_LIMIT. */
static unsigned long long cgroup_file_limit(const char *root, const char *file)
{
    char path[4096], line[64] = "";
    snprintf(path, sizeof path, "%s/%s", root, file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    unsigned long long n = 0;
    if (fgets(line, sizeof line, f) != NULL && line[0] >= '0' && line[0] <= '9')
        n = strtoull(line, NULL, 10);
    fclose(f);
    return n >= CGROUP_NO_LIMIT ? 0 : n;
}

/* The memory limit of this process's cgroup: v2's memory.max, else v1's
 * memory/memory.limit_in_bytes (a host has one or the other; a hybrid
 * one may show both: the smaller wins). 0: no limit. */
static unsigned long long cgroup_limit(void)
{
    const char *root = cgroup_root();
    unsigned long long v2 = cgroup_file_limit(root, "memory.max");
    unsigned long long v1 = cgroup_file_limit(root, "memory/memory.limit_in_bytes");
    if (v2 == 0 || (v1 != 0 && v1 < v2))
        return v1;
    return v2;
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

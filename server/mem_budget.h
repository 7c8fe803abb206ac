/*
 * mem_budget.h - the server-wide memory budget (--max-memory).
 *
 * One count of bytes reserved, against one total. Request bodies are
 * charged as they arrive (all at once from Content-Length when it is
 * given); api/ charges what a request will hold (decoded input, working
 * buffers, the part of the answer held at once) through the api_budget
 * hooks of api.h, after its plan and before any arithmetic. What does not
 * fit now is refused with 503 + Retry-After; what could never fit (more
 * than the whole budget) with 413 for a body, 422 too_large for work.
 *
 * Lock-free: one atomic counter, reserved by compare-and-swap, so that a
 * reservation never pushes the count past the total even for a moment.
 */
#ifndef SERVER_MEM_BUDGET_H
#define SERVER_MEM_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

typedef struct mem_budget {
    size_t total;                       /* frozen at start-up */
    atomic_size_t reserved;             /* bytes held now */
    atomic_uint_fast64_t refused_busy;  /* reservations answered BUSY */
    atomic_uint_fast64_t refused_never; /* reservations answered NEVER */
} mem_budget;

void mem_budget_init(mem_budget *b, size_t total);

/* Reserves bytes for a caller that holds `held` bytes of the budget
 * already: GRANTED (then release them later), BUSY (not now) or NEVER
 * (bytes + held pass the total: they could not fit even with nothing else
 * reserved, and retrying cannot help). Thread-safe. */
api_budget_answer mem_budget_reserve(mem_budget *b, size_t bytes, size_t held);

/* Gives back bytes reserved before. Thread-safe. */
void mem_budget_release(mem_budget *b, size_t bytes);

size_t mem_budget_reserved(mem_budget *b);

/* The hooks api_encode/api_apply charge through, for a request whose body
 * holds body_charged bytes of b; b is borrowed and must outlive every
 * request. */
api_budget mem_budget_api(mem_budget *b, size_t body_charged);

/* The default --max-memory: half of what this process may use, its
 * cgroup's limit when one is set (v2: /sys/fs/cgroup/memory.max; v1:
 * /sys/fs/cgroup/memory/memory.limit_in_bytes, whose "unlimited" is a huge
 * count) and smaller than the machine's memory (MemTotal of
 * /proc/meminfo); 1 GiB when nothing can be read. Half leaves room for
 * what the budget does not count (models, libraries, the allocator's
 * slack, connection buffers). POSENC_CGROUP_ROOT, for tests, replaces
 * /sys/fs/cgroup. */
size_t mem_budget_default_total(void);

#endif /* SERVER_MEM_BUDGET_H */

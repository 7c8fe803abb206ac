/*
 * pe_cache.c - shared sinusoidal tables (see pe_cache.h).
 */
#include "pe_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* How many (base, layout, d) combinations are kept, how many positions
 * each holds, and the most memory one table may take (rows shrink for wide
 * d to stay within it: 4096 rows x 256 dims, 1024 x 1024, 256 x 4096). */
#define CACHE_SLOTS 8
#define CACHE_MAX_ROWS 4096
#define CACHE_TABLE_BYTES ((size_t)8 << 20)

typedef struct cache_slot {
    double base;
    pe_sin_layout layout;
    size_t d, rows;
    double *table;                  /* owned */
    _Atomic(const double *) ready;  /* == table once the key fields are set */
} cache_slot;

struct pe_cache {
    pthread_mutex_t fill_lock; /* serialises filling slots */
    _Atomic size_t used;       /* slots [0, used) have their keys set */
    cache_slot slots[CACHE_SLOTS];
};

pe_cache *pe_cache_new(void)
{
    pe_cache *cache = calloc(1, sizeof *cache);

    if (cache && pthread_mutex_init(&cache->fill_lock, NULL) != 0) {
        free(cache);
        return NULL;
    }
    return cache;
}

void pe_cache_free(pe_cache *cache)
{
    if (!cache)
        return;
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        free(cache->slots[i].table);
    pthread_mutex_destroy(&cache->fill_lock);
    free(cache);
}

static const double *find(pe_cache *cache, double base, pe_sin_layout layout,
                          size_t d, size_t *rows)
{
    size_t used = atomic_load_explicit(&cache->used, memory_order_acquire);

    for (size_t i = 0; i < used; i++) {
        cache_slot *s = &cache->slots[i];
        const double *t = atomic_load_explicit(&s->ready, memory_order_acquire);
        if (t && s->base == base && s->layout == layout && s->d == d) {
            *rows = s->rows;
            return t;
        }
    }
    return NULL;
}

const double *pe_cache_sinusoidal(pe_cache *cache, double base,
                                  pe_sin_layout layout, size_t d,
                                  size_t *rows)
{
    const double *t = find(cache, base, layout, d, rows);

    if (t || d == 0)
        return t;
    size_t n = CACHE_TABLE_BYTES / (d * sizeof(double));
    if (n > CACHE_MAX_ROWS)
        n = CACHE_MAX_ROWS;
    if (n < 64)
        return NULL; /* too wide to be worth a slot */
    pthread_mutex_lock(&cache->fill_lock);
    t = find(cache, base, layout, d, rows); /* filled while we waited? */
    size_t used = atomic_load_explicit(&cache->used, memory_order_relaxed);
    if (!t && used < CACHE_SLOTS) {
        cache_slot *s = &cache->slots[used];
        double *table = malloc(n * d * sizeof *table);
        if (table) {
            pe_sinusoidal_table(base, layout, d, n, table);
            *s = (cache_slot){.base = base, .layout = layout, .d = d, .rows = n,
                              .table = table};
            atomic_store_explicit(&s->ready, table, memory_order_release);
            atomic_store_explicit(&cache->used, used + 1, memory_order_release);
            *rows = n;
            t = table;
        }
    }
    pthread_mutex_unlock(&cache->fill_lock);
    return t;
}

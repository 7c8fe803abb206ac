/*
 * pe_cache.c - shared encoding tables (see pe_cache.h).
 */
#include "pe_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How many tables are kept, how many positions each holds, and the most
 * memory one table may take (rows shrink for wide tables to stay within
 * it: 2048 rows x 256 dims, 512 x 1024, 128 x 4096), so that all of them
 * together stay under 64 MiB. */
#define CACHE_SLOTS 16
#define CACHE_MAX_ROWS 4096
#define CACHE_MIN_ROWS 64
#define CACHE_TABLE_BYTES ((size_t)4 << 20)

typedef enum table_kind { TABLE_SINUSOIDAL, TABLE_ROPE } table_kind;

/* What a table is of: the key a request must match exactly. */
typedef struct table_key {
    table_kind kind;
    double base;              /* sinusoidal */
    pe_sin_layout layout;     /* sinusoidal */
    size_t width;             /* sinusoidal: d; rope: pairs (half) */
    const double *inv_freq;   /* rope: [width], owned by the slot */
    double attention_factor;  /* rope */
} table_key;

typedef struct cache_slot {
    table_key key;
    size_t rows;
    double *table;                 /* owned */
    _Atomic(const double *) ready; /* == table once key and rows are set */
} cache_slot;

struct pe_cache {
    pthread_mutex_t fill_lock; /* serialises filling slots */
    _Atomic size_t used;       /* slots [0, used) are filled */
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
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        free(cache->slots[i].table);
        free((void *)(uintptr_t)cache->slots[i].key.inv_freq);
    }
    pthread_mutex_destroy(&cache->fill_lock);
    free(cache);
}

static bool same_key(const table_key *a, const table_key *b)
{
    if (a->kind != b->kind || a->width != b->width)
        return false;
    if (a->kind == TABLE_SINUSOIDAL)
        return a->base == b->base && a->layout == b->layout;
    return a->attention_factor == b->attention_factor &&
           memcmp(a->inv_freq, b->inv_freq, a->width * sizeof *a->inv_freq) == 0;
}

static const double *find(pe_cache *cache, const table_key *key, size_t *rows)
{
    size_t used = atomic_load_explicit(&cache->used, memory_order_acquire);

    for (size_t i = 0; i < used; i++) {
        cache_slot *s = &cache->slots[i];
        const double *t = atomic_load_explicit(&s->ready, memory_order_acquire);
        if (t && same_key(&s->key, key)) {
            *rows = s->rows;
            return t;
        }
    }
    return NULL;
}

/* Fill a new slot for key (under the lock); NULL when full or out of memory. */
static const double *fill(pe_cache *cache, const table_key *key, size_t row_width,
                          size_t *rows)
{
    size_t n = CACHE_TABLE_BYTES / (row_width * sizeof(double));
    if (n > CACHE_MAX_ROWS)
        n = CACHE_MAX_ROWS;
    size_t used = atomic_load_explicit(&cache->used, memory_order_relaxed);
    if (n < CACHE_MIN_ROWS || used == CACHE_SLOTS)
        return NULL;
    cache_slot *s = &cache->slots[used];
    double *table = malloc(n * row_width * sizeof *table);
    double *inv_freq = NULL;
    if (!table)
        return NULL;
    table_key owned = *key;
    if (key->kind == TABLE_ROPE) {
        inv_freq = malloc(key->width * sizeof *inv_freq);
        if (!inv_freq) {
            free(table);
            return NULL;
        }
        memcpy(inv_freq, key->inv_freq, key->width * sizeof *inv_freq);
        owned.inv_freq = inv_freq;
        pe_rope_table(inv_freq, key->width, key->attention_factor, n, table);
    } else {
        pe_sinusoidal_table(key->base, key->layout, key->width, n, table);
    }
    s->key = owned;
    s->rows = n;
    s->table = table;
    atomic_store_explicit(&s->ready, table, memory_order_release);
    atomic_store_explicit(&cache->used, used + 1, memory_order_release);
    *rows = n;
    return table;
}

static const double *lookup(pe_cache *cache, const table_key *key, size_t row_width,
                            size_t *rows)
{
    const double *t = find(cache, key, rows);

    if (t || row_width == 0)
        return t;
    pthread_mutex_lock(&cache->fill_lock);
    t = find(cache, key, rows); /* filled while we waited? */
    if (!t)
        t = fill(cache, key, row_width, rows);
    pthread_mutex_unlock(&cache->fill_lock);
    return t;
}

const double *pe_cache_sinusoidal(pe_cache *cache, double base,
                                  pe_sin_layout layout, size_t d,
                                  size_t *rows)
{
    table_key key = {.kind = TABLE_SINUSOIDAL, .base = base, .layout = layout, .width = d};
    return lookup(cache, &key, d, rows);
}

const double *pe_cache_rope(pe_cache *cache, const double *inv_freq,
                            size_t half, double attention_factor,
                            size_t *rows)
{
    table_key key = {.kind = TABLE_ROPE, .width = half, .inv_freq = inv_freq,
                     .attention_factor = attention_factor};
    return lookup(cache, &key, 2 * half, rows);
}

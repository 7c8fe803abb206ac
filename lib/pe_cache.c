/*
 * pe_cache.c - shared encoding tables: a byte-bounded LRU with
 * frequency-based admission (see pe_cache.h for the policy and the
 * concurrency contract).
 *
 * Each table lives in one block, a cache_entry header followed by its rows
 * (and, for RoPE, a copy of the inverse frequencies it is keyed by), so that
 * pe_cache_release() finds the header from the rows pointer alone. An entry
 * carries one reference for the cache while it is in entries[] and one per
 * reader holding it; the last one dropped frees the block and gives its
 * bytes back to the budget.
 *
 * Locks: `lock` (read/write) guards entries[] and n_entries: lookups read
 * them under the read lock and take their reference there, so an entry
 * cannot lose the cache's reference (which only a writer drops) while a
 * reader is taking its own. `fill_lock` serialises everything a miss does
 * (history, admission, eviction, computing the new table), so the budget is
 * checked and charged by one thread at a time; only releases, which only
 * subtract, run beside it.
 */
#include "pe_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How many positions a table holds and the most memory one table may take
 * (rows shrink for wide tables to stay within it: 4096 rows x 256 dims,
 * 2048 x 512 (the default model at S3's 2048 tokens), 1024 x 1024, 256 x
 * 4096; narrower than CACHE_MIN_ROWS rows is not worth
 * caching). At most CACHE_MAX_TABLES tables, so that a lookup scans a short
 * array. */
#define CACHE_MAX_TABLES 64
#define CACHE_MAX_ROWS 4096
#define CACHE_MIN_ROWS 64
#define CACHE_TABLE_BYTES ((size_t)8 << 20)

/* Frequencies: a direct-mapped history of tables missed recently (a key
 * hash and how often it was asked for), and per table a use count capped
 * at USES_CAP; both halve every AGE_PERIOD misses. */
#define HISTORY_LEN 1024
#define USES_CAP 255
#define AGE_PERIOD 1024

typedef enum table_kind { TABLE_SINUSOIDAL, TABLE_ROPE } table_kind;

/* What a table is of: the key a request must match exactly (bit for bit). */
typedef struct table_key {
    table_kind kind;
    double base;             /* sinusoidal */
    pe_sin_layout layout;    /* sinusoidal */
    size_t width;            /* sinusoidal: d; rope: pairs (half) */
    const double *inv_freq;  /* rope: [width]; borrowed, or in the entry's block */
    double attention_factor; /* rope */
    uint64_t hash;           /* of the fields above; set on a miss */
} table_key;

typedef struct cache_entry {
    pe_cache *owner;           /* borrowed: whose budget the block is charged to */
    _Atomic size_t refs;       /* 1 while in entries[], plus 1 per holder */
    _Atomic uint64_t last_use; /* owner->clock at the latest use: LRU order */
    _Atomic unsigned uses;     /* aged use count, <= USES_CAP */
    size_t bytes;              /* the whole block */
    size_t rows;
    table_key key;
    double table[]; /* [rows][row width], then rope's inv_freq */
} cache_entry;

typedef struct seen_key {
    uint64_t hash;
    unsigned count;
} seen_key;

struct pe_cache {
    pthread_rwlock_t lock;     /* entries[], n_entries */
    pthread_mutex_t fill_lock; /* misses: history, admission, eviction */
    size_t budget;
    _Atomic size_t bytes; /* charged: blocks not yet freed */
    _Atomic uint64_t clock;
    cache_entry *entries[CACHE_MAX_TABLES]; /* each holds a reference */
    size_t n_entries;
    seen_key history[HISTORY_LEN]; /* under fill_lock */
    size_t misses_since_aging;     /* under fill_lock */
    _Atomic size_t hits, misses, admissions, evictions, rejections;
};

pe_cache *pe_cache_new(size_t budget_bytes)
{
    pe_cache *cache = calloc(1, sizeof *cache); /* owned by the caller */

    if (!cache)
        return NULL;
    if (pthread_rwlock_init(&cache->lock, NULL) != 0)
        goto fail_rwlock;
    if (pthread_mutex_init(&cache->fill_lock, NULL) != 0)
        goto fail_mutex;
    cache->budget = budget_bytes;
    return cache;
fail_mutex:
    pthread_rwlock_destroy(&cache->lock);
fail_rwlock:
    free(cache);
    return NULL;
}

static void drop_reference(cache_entry *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        atomic_fetch_sub_explicit(&e->owner->bytes, e->bytes, memory_order_relaxed);
        free(e);
    }
}

void pe_cache_free(pe_cache *cache)
{
    if (!cache)
        return;
    for (size_t i = 0; i < cache->n_entries; i++)
        drop_reference(cache->entries[i]);
    pthread_mutex_destroy(&cache->fill_lock);
    pthread_rwlock_destroy(&cache->lock);
    free(cache);
}

void pe_cache_release(const double *table)
{
    if (!table)
        return;
    uintptr_t header = (uintptr_t)table - offsetof(cache_entry, table);
    drop_reference((cache_entry *)header);
}

/* FNV-1a over the key's fields (not its padding). */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3u;
    return h;
}

static uint64_t hash_key(const table_key *k)
{
    uint64_t h = 0xcbf29ce484222325u;

    h = hash_bytes(h, &k->kind, sizeof k->kind);
    h = hash_bytes(h, &k->width, sizeof k->width);
    h = hash_bytes(h, &k->base, sizeof k->base);
    h = hash_bytes(h, &k->layout, sizeof k->layout);
    h = hash_bytes(h, &k->attention_factor, sizeof k->attention_factor);
    if (k->kind == TABLE_ROPE)
        h = hash_bytes(h, k->inv_freq, k->width * sizeof *k->inv_freq);
    return h;
}

/* Bit-for-bit equality (the hash is not compared: hits do not compute it). */
static bool same_key(const table_key *a, const table_key *b)
{
    return a->kind == b->kind && a->width == b->width && a->layout == b->layout &&
           memcmp(&a->base, &b->base, sizeof a->base) == 0 &&
           memcmp(&a->attention_factor, &b->attention_factor, sizeof a->attention_factor) == 0 &&
           (a->kind != TABLE_ROPE ||
            memcmp(a->inv_freq, b->inv_freq, a->width * sizeof *a->inv_freq) == 0);
}

static void note_use(pe_cache *cache, cache_entry *e)
{
    uint64_t now = atomic_fetch_add_explicit(&cache->clock, 1, memory_order_relaxed) + 1;

    atomic_store_explicit(&e->last_use, now, memory_order_relaxed);
    /* racing hits may pass the cap by a few: harmless */
    if (atomic_load_explicit(&e->uses, memory_order_relaxed) < USES_CAP)
        atomic_fetch_add_explicit(&e->uses, 1, memory_order_relaxed);
}

/* The cached table for key with a reference taken, or NULL. */
static const double *find_and_hold(pe_cache *cache, const table_key *key, size_t *rows)
{
    const double *found = NULL;

    pthread_rwlock_rdlock(&cache->lock);
    for (size_t i = 0; i < cache->n_entries; i++) {
        cache_entry *e = cache->entries[i];
        if (same_key(&e->key, key)) {
            atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
            note_use(cache, e);
            *rows = e->rows;
            found = e->table;
            break;
        }
    }
    pthread_rwlock_unlock(&cache->lock);
    if (found)
        atomic_fetch_add_explicit(&cache->hits, 1, memory_order_relaxed);
    return found;
}

/* Halve every frequency (under fill_lock). */
static void age(pe_cache *cache)
{
    for (size_t i = 0; i < HISTORY_LEN; i++)
        cache->history[i].count /= 2;
    pthread_rwlock_rdlock(&cache->lock);
    for (size_t i = 0; i < cache->n_entries; i++) {
        _Atomic unsigned *uses = &cache->entries[i]->uses;
        atomic_fetch_sub_explicit(uses, atomic_load_explicit(uses, memory_order_relaxed) / 2,
                                  memory_order_relaxed);
    }
    pthread_rwlock_unlock(&cache->lock);
    cache->misses_since_aging = 0;
}

/* Counts one more miss of hash; returns how often it was missed lately
 * (a collision in the history only overstates a count). */
static unsigned record_miss(pe_cache *cache, uint64_t hash)
{
    seen_key *s = &cache->history[hash % HISTORY_LEN];

    if (++cache->misses_since_aging >= AGE_PERIOD)
        age(cache);
    if (s->hash != hash)
        *s = (seen_key){.hash = hash, .count = 0};
    if (s->count < USES_CAP)
        s->count++;
    return s->count;
}

/* The entry in entries[] used least recently and not yet in chosen[]. */
static cache_entry *least_recent(pe_cache *cache, cache_entry *const *chosen, size_t n_chosen)
{
    cache_entry *oldest = NULL;
    uint64_t oldest_use = UINT64_MAX;

    for (size_t i = 0; i < cache->n_entries; i++) {
        cache_entry *e = cache->entries[i];
        bool taken = false;
        for (size_t j = 0; j < n_chosen && !taken; j++)
            taken = chosen[j] == e;
        uint64_t use = atomic_load_explicit(&e->last_use, memory_order_relaxed);
        if (!taken && use < oldest_use) {
            oldest = e;
            oldest_use = use;
        }
    }
    return oldest;
}

static void unlink_entries(pe_cache *cache, cache_entry *const *gone, size_t n_gone)
{
    pthread_rwlock_wrlock(&cache->lock);
    for (size_t j = 0; j < n_gone; j++)
        for (size_t i = 0; i < cache->n_entries; i++)
            if (cache->entries[i] == gone[j]) {
                cache->entries[i] = cache->entries[--cache->n_entries];
                break;
            }
    pthread_rwlock_unlock(&cache->lock);
}

/* Makes room for a block of need bytes by evicting least recently used
 * tables, each used less often than freq; 0 when the block now fits the
 * budget and a slot is free, -1 (evicting nothing) when it cannot. Tables
 * evicted while a reader holds them are charged until released, so room
 * can still lack afterwards: then -1 too. Under fill_lock. */
static int make_room(pe_cache *cache, size_t need, unsigned freq)
{
    cache_entry *victims[CACHE_MAX_TABLES];
    size_t n_victims = 0, freed = 0;
    size_t held = atomic_load_explicit(&cache->bytes, memory_order_relaxed);

    while (held - freed > cache->budget - need ||
           cache->n_entries - n_victims == CACHE_MAX_TABLES) {
        cache_entry *v = least_recent(cache, victims, n_victims);
        if (!v || atomic_load_explicit(&v->uses, memory_order_relaxed) >= freq)
            return -1;
        victims[n_victims++] = v;
        freed += v->bytes < held - freed ? v->bytes : held - freed;
    }
    unlink_entries(cache, victims, n_victims);
    for (size_t j = 0; j < n_victims; j++)
        drop_reference(victims[j]);
    atomic_fetch_add_explicit(&cache->evictions, n_victims, memory_order_relaxed);
    held = atomic_load_explicit(&cache->bytes, memory_order_relaxed);
    return held <= cache->budget - need ? 0 : -1;
}

/* A new entry for key with its rows computed, holding the cache's reference
 * and the caller's; NULL when out of memory. */
static cache_entry *entry_new(pe_cache *cache, const table_key *key, size_t rows, size_t row_width,
                              size_t bytes, unsigned freq)
{
    cache_entry *e = malloc(bytes); /* owned by the cache and its holders */

    if (!e)
        return NULL;
    e->owner = cache;
    atomic_init(&e->refs, 2);
    atomic_init(&e->last_use, atomic_fetch_add(&cache->clock, 1) + 1);
    atomic_init(&e->uses, freq);
    e->bytes = bytes;
    e->rows = rows;
    e->key = *key;
    if (key->kind == TABLE_ROPE) {
        double *inv_freq = e->table + rows * row_width;
        memcpy(inv_freq, key->inv_freq, key->width * sizeof *inv_freq);
        e->key.inv_freq = inv_freq;
        pe_rope_table(inv_freq, key->width, key->attention_factor, rows, e->table);
    } else {
        pe_sinusoidal_table(key->base, key->layout, key->width, rows, e->table);
    }
    return e;
}

/* A miss (under fill_lock): admit the table when the policy says so. */
static const double *miss(pe_cache *cache, const table_key *key, size_t rows, size_t row_width,
                          size_t *rows_out)
{
    size_t extra = key->kind == TABLE_ROPE ? key->width : 0;
    size_t bytes = sizeof(cache_entry) + (rows * row_width + extra) * sizeof(double);

    atomic_fetch_add_explicit(&cache->misses, 1, memory_order_relaxed);
    unsigned freq = record_miss(cache, key->hash);
    if (freq < 2 || bytes > cache->budget)
        return NULL;
    if (make_room(cache, bytes, freq)) {
        atomic_fetch_add_explicit(&cache->rejections, 1, memory_order_relaxed);
        return NULL;
    }
    cache_entry *e = entry_new(cache, key, rows, row_width, bytes, freq);
    if (!e)
        return NULL;
    atomic_fetch_add_explicit(&cache->bytes, bytes, memory_order_relaxed);
    pthread_rwlock_wrlock(&cache->lock);
    cache->entries[cache->n_entries++] = e;
    pthread_rwlock_unlock(&cache->lock);
    cache->history[key->hash % HISTORY_LEN].count = 0; /* the entry counts now */
    atomic_fetch_add_explicit(&cache->admissions, 1, memory_order_relaxed);
    *rows_out = rows;
    return e->table;
}

/* How many rows a table of row_width doubles gets; 0 when not cached (also
 * for widths so large that row_width * sizeof(double) could overflow). */
static size_t table_rows(size_t row_width)
{
    if (row_width == 0 || row_width > CACHE_TABLE_BYTES / sizeof(double))
        return 0;
    size_t n = CACHE_TABLE_BYTES / (row_width * sizeof(double));
    if (n > CACHE_MAX_ROWS)
        n = CACHE_MAX_ROWS;
    return n < CACHE_MIN_ROWS ? 0 : n;
}

static const double *lookup(pe_cache *cache, table_key *key, size_t row_width, size_t *rows)
{
    size_t n = table_rows(row_width);

    if (n == 0)
        return NULL;
    const double *t = find_and_hold(cache, key, rows);
    if (t)
        return t;
    pthread_mutex_lock(&cache->fill_lock);
    t = find_and_hold(cache, key, rows); /* admitted while we waited? */
    if (!t) {
        key->hash = hash_key(key); /* only misses need it: the history's index */
        t = miss(cache, key, n, row_width, rows);
    }
    pthread_mutex_unlock(&cache->fill_lock);
    return t;
}

const double *pe_cache_sinusoidal(pe_cache *cache, double base, pe_sin_layout layout, size_t d,
                                  size_t *rows)
{
    table_key key = {.kind = TABLE_SINUSOIDAL, .base = base, .layout = layout, .width = d};
    return lookup(cache, &key, d, rows);
}

const double *pe_cache_rope(pe_cache *cache, const double *inv_freq, size_t half,
                            double attention_factor, size_t *rows)
{
    table_key key = {.kind = TABLE_ROPE,
                     .width = half,
                     .inv_freq = inv_freq,
                     .attention_factor = attention_factor};
    return lookup(cache, &key, half > CACHE_TABLE_BYTES ? 0 : 2 * half, rows);
}

pe_cache_stats pe_cache_get_stats(pe_cache *cache)
{
    pe_cache_stats s;

    pthread_rwlock_rdlock(&cache->lock);
    s.tables = cache->n_entries;
    pthread_rwlock_unlock(&cache->lock);
    s.bytes = atomic_load(&cache->bytes);
    s.budget = cache->budget;
    s.hits = atomic_load(&cache->hits);
    s.misses = atomic_load(&cache->misses);
    s.admissions = atomic_load(&cache->admissions);
    s.evictions = atomic_load(&cache->evictions);
    s.rejections = atomic_load(&cache->rejections);
    return s;
}

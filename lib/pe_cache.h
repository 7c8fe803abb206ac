/*
 * pe_cache.h - encoding tables computed once and shared by requests.
 *
 * A request's sinusoidal encoding depends on (base, layout, d) and its
 * positions, and a RoPE's cos/sin on its inverse frequencies and attention
 * factor; for the first positions of the most used of these, double rows
 * are kept (pe_absolute.cache, pe_rope.cache), so that a request reads them
 * instead of calling sin and cos per element. Results are bit-identical
 * either way: a table is made by pe_sinusoidal_table() / pe_rope_table().
 *
 * Policy: the cache holds at most budget_bytes of tables (everything it
 * allocates for them, tables a reader still holds after their eviction
 * included) and evicts the least recently used, with frequency-based
 * admission (TinyLFU, Einziger, Friedman and Manes, 2017): a table is
 * admitted on its second use, and only evicts tables that were used less
 * often than it was (use counts halve every few hundred misses, so a table
 * nobody asks for any more fades out). A flood of one-off tables, or of
 * tables asked for twice, therefore never evicts a common table.
 *
 * Concurrency: lookups of cached tables run in parallel (a read lock and
 * atomic counters); admission and eviction are serialised, and a new table
 * is computed outside the read/write lock. Readers never see a table freed
 * under them: each lookup that returns a table takes a reference, dropped
 * by pe_cache_release(); an evicted table is freed by whoever drops its last
 * reference. A lookup that returns NULL holds nothing.
 */
#ifndef PE_CACHE_H
#define PE_CACHE_H

#include <stddef.h>

#include "posenc.h"

typedef struct pe_cache pe_cache;

/* What the cache did so far (for tests and diagnostics). */
typedef struct pe_cache_stats {
    size_t tables;     /* tables in the cache now */
    size_t bytes;      /* bytes held now: cached tables and evicted ones still held */
    size_t budget;     /* the budget_bytes it was made with */
    size_t hits;       /* lookups answered from the cache */
    size_t misses;     /* lookups of cacheable tables that were not cached */
    size_t admissions; /* tables computed and added */
    size_t evictions;  /* tables removed to make room */
    size_t rejections; /* second uses not admitted (full of more used tables) */
} pe_cache_stats;

/* A new, empty cache that holds at most budget_bytes of tables (allocates;
 * NULL on failure). A budget too small for any table gives a cache that
 * never holds one. */
pe_cache *pe_cache_new(size_t budget_bytes);

/* Frees the cache and its tables; accepts NULL. Every table returned by a
 * lookup must have been released before. */
void pe_cache_free(pe_cache *cache);

/* The cached rows for (base, layout, d), computing them when the policy
 * admits the table; NULL when not cached (the caller then computes rows
 * itself). *rows receives their count. A non-NULL result is held: valid
 * until passed to pe_cache_release(), exactly once. */
const double *pe_cache_sinusoidal(pe_cache *cache, double base, pe_sin_layout layout, size_t d,
                                  size_t *rows);

/* The cached cos/sin rows ([rows][half][2], see pe_rope.cache) for these
 * inverse frequencies and attention factor, admitted and held like the
 * sinusoidal tables; NULL when not cached. */
const double *pe_cache_rope(pe_cache *cache, const double *inv_freq, size_t half,
                            double attention_factor, size_t *rows);

/* Drops the hold on a table returned by pe_cache_sinusoidal() or
 * pe_cache_rope(); accepts NULL. */
void pe_cache_release(const double *table);

/* A snapshot of the counters (exact when no other thread uses the cache). */
pe_cache_stats pe_cache_get_stats(pe_cache *cache);

#endif /* PE_CACHE_H */

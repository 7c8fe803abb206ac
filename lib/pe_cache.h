/*
 * pe_cache.h - encoding tables computed once and shared by requests.
 *
 * A request's sinusoidal encoding depends on (base, layout, d) and its
 * positions, and a RoPE's cos/sin on its inverse frequencies and attention
 * factor; for the first positions of the most used of these, double rows
 * are kept (pe_absolute.cache, pe_rope.cache), so that a request reads them
 * instead of calling sin and cos per element. Results are bit-identical
 * either way.
 *
 * The cache is the service's one piece of mutable state after start-up: a
 * fixed set of slots, each filled once under a mutex and published with a
 * release store; readers never lock. Tables are freed with the service.
 */
#ifndef PE_CACHE_H
#define PE_CACHE_H

#include <stddef.h>

#include "posenc.h"

typedef struct pe_cache pe_cache;

/* A new, empty cache (allocates; NULL on failure). */
pe_cache *pe_cache_new(void);

/* Frees the cache and its tables; accepts NULL. */
void pe_cache_free(pe_cache *cache);

/* The cached rows for (base, layout, d), computing them on first use when
 * a slot is free and the table fits the budget; NULL when not cached (the
 * caller then computes rows itself). *rows receives their count. */
const double *pe_cache_sinusoidal(pe_cache *cache, double base,
                                  pe_sin_layout layout, size_t d,
                                  size_t *rows);

/* The cached cos/sin rows ([rows][half][2], see pe_rope.cache) for these
 * inverse frequencies and attention factor, computed on first use like the
 * sinusoidal tables; NULL when not cached. */
const double *pe_cache_rope(pe_cache *cache, const double *inv_freq,
                            size_t half, double attention_factor,
                            size_t *rows);

#endif /* PE_CACHE_H */

/*
 * json_limits.h - the sizes every numeric array the codecs hand over must
 * fit (shared by the scanner, the row parser and the typed readers).
 */
#ifndef JSON_LIMITS_H
#define JSON_LIMITS_H

#include <stdbool.h>
#include <stddef.h>

/* Most dimensions of a numeric array taken out of a body. */
#define JSON_ARRAY_MAX_NDIM 4

/* No decoded array may hold more elements (a 64 MiB body holds far fewer
 * legitimate ones); this bounds allocations made from declared shapes. */
#define JSON_ARRAY_MAX_ELEMENTS ((size_t)1 << 27)

/* jansson's own nesting limit (JSON_PARSER_MAX_DEPTH). */
#define JSON_MAX_DEPTH ((size_t)2048)

/* The caller's memory budget, asked before the codec allocates a buffer
 * whose size follows from the body (a numeric array's float32 values, the
 * row index of a large array, a long string's decoded copies): take()
 * returns true when `bytes` more may be held, false to refuse (the codec
 * then stops with JSON_CODEC_REFUSED, or, for a buffer that only speeds
 * decoding up, goes on without it). give() hands back bytes taken before
 * when what they paid for is freed inside the codec (a parse attempt that
 * failed, a scratch buffer); what the codec hands over (decoded values)
 * stays charged and the caller gives it back when it is gone. take NULL:
 * nothing is charged (give is then never called). */
typedef struct json_charge {
    bool (*take)(void *ctx, size_t bytes);
    void (*give)(void *ctx, size_t bytes);
    void *ctx;
} json_charge;

/* Buffers a body's text can make longer than this (a string's decoded
 * copies, number text) are charged; below it they cost less than the
 * charge and are bounded by the value count. */
#define JSON_UNCHARGED_BYTES ((size_t)4096)

static inline bool json_charge_take(const json_charge *c, size_t bytes)
{
    return !c->take || c->take(c->ctx, bytes);
}

static inline void json_charge_give(const json_charge *c, size_t bytes)
{
    if (c->take && c->give && bytes > 0)
        c->give(c->ctx, bytes);
}

#endif /* JSON_LIMITS_H */

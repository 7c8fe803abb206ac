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

/* The caller's memory budget, asked before the codec allocates a buffer of
 * decoded values (a numeric array's float32 values): take() returns true
 * when `bytes` more may be held, false to refuse (the codec then stops with
 * JSON_CODEC_REFUSED and allocates nothing more). The caller keeps the
 * count and gives it back when the decoded values are gone. take NULL:
 * nothing is charged. */
typedef struct json_charge {
    bool (*take)(void *ctx, size_t bytes);
    void *ctx;
} json_charge;

#endif /* JSON_LIMITS_H */

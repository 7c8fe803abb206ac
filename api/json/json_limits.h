/*
 * json_limits.h - the sizes every numeric array the codecs hand over must
 * fit (shared by the scanner, the row parser and the typed readers).
 */
#ifndef JSON_LIMITS_H
#define JSON_LIMITS_H

#include <stddef.h>

/* Most dimensions of a numeric array taken out of a body. */
#define JSON_ARRAY_MAX_NDIM 4

/* No decoded array may hold more elements (a 64 MiB body holds far fewer
 * legitimate ones); this bounds allocations made from declared shapes. */
#define JSON_ARRAY_MAX_ELEMENTS ((size_t)1 << 27)

/* jansson's own nesting limit (JSON_PARSER_MAX_DEPTH). */
#define JSON_MAX_DEPTH ((size_t)2048)

#endif /* JSON_LIMITS_H */

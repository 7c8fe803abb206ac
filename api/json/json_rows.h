/*
 * json_rows.h - a large nested JSON array of numbers parsed to float32 by
 * the OpenMP team, one innermost row per task.
 *
 * A first pass walks the brackets only (memchr from row to row: numbers
 * hold no brackets), checks the nesting is rectangular and notes where each
 * innermost row's text lies; the rows are then parsed in parallel straight
 * into the caller's buffer. Anything irregular returns false and the caller
 * falls back to its sequential path, which produces the exact error.
 */
#ifndef JSON_ROWS_H
#define JSON_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#include "json/json_limits.h"

/* A parsed array: shape and values. */
typedef struct json_rows_result {
    size_t ndim;
    size_t dim[JSON_ARRAY_MAX_NDIM];
    char *block; /* new: `header` bytes left free, then the float32 values */
    size_t count;
    size_t end;         /* offset just past the closing ']' */
    bool refused;       /* false returned because charge refused the values */
    bool index_refused; /* false returned because charge refused the row
                           index (16 bytes a row, given back before this
                           returns): parse without it */
} json_rows_result;

/* Parse the array at text[start] ('['), text being len bytes long. The
 * values are stored after `header` bytes left free at the start of the
 * allocation (0 for a plain float array), so that no copy is needed. All
 * values must be finite float32. Returns false, with nothing allocated,
 * for anything but a rectangular array of 1 to JSON_ARRAY_MAX_NDIM dimensions
 * of JSON numbers, or when charge (may be NULL) refuses the block's bytes,
 * asked once the shape is known and before the block is allocated, or the
 * row index's, asked before each time it grows. Only the block stays
 * charged when it returns true; nothing when it returns false. */
bool json_rows_parse(const char *text, size_t len, size_t start, size_t header,
                     const json_charge *charge, json_rows_result *out);

#endif /* JSON_ROWS_H */

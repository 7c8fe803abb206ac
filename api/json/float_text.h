/*
 * float_text.h - shortest round-trip decimal text of float32 values.
 */
#ifndef FLOAT_TEXT_H
#define FLOAT_TEXT_H

#include <stddef.h>

/* Room float_to_text() needs at buf: the longest text is 16 characters and
 * the NUL, but it stores in fixed 16-byte blocks (bytes past the returned
 * length are scratch). */
#define FLOAT_TEXT_MAX 40

/* The longest text float_to_text() returns ("-0.0000100000225": the sign,
 * "0.0000" and nine digits; make test-float-text checks every float32). */
#define FLOAT_TEXT_LONGEST 16

/* Write the shortest decimal that reads back (strtof) as exactly `v`, as a
 * JSON number, into buf (>= FLOAT_TEXT_MAX bytes, NUL-terminated). v must be
 * finite: callers check their answers first (JSON has no infinity); a
 * non-finite v is written as null instead of aborting. Returns the length. */
size_t float_to_text(float v, char *buf);

#endif /* FLOAT_TEXT_H */

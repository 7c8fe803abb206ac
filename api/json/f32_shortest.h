/*
 * f32_shortest.h - the shortest decimal of a binary32 value (Schubfach,
 * specialised to 24-bit significands).
 */
#ifndef F32_SHORTEST_H
#define F32_SHORTEST_H

#include <stdint.h>

/* The shortest decimal significand * 10^exponent that reads back as |v|
 * (the one closest to |v| among the shortest, ties to even significand),
 * trailing zeros removed: the same answer as Dragonbox. v finite and
 * non-zero. */
void f32_shortest(float v, uint32_t *significand, int *exponent);

#endif /* F32_SHORTEST_H */

/*
 * float_text_ref.h - the reference writer the tests compare float_to_text()
 * with: the same layout (float_layout.h) over f32_shortest.h's Schubfach
 * digits instead of Dragonbox's. Not for production use.
 */
#ifndef FLOAT_TEXT_REF_H
#define FLOAT_TEXT_REF_H

#include <stddef.h>

/* float_to_text() with the digits from f32_shortest (Schubfach). */
size_t float_to_text_schubfach(float v, char *buf);

#endif /* FLOAT_TEXT_REF_H */

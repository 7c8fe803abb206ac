/*
 * float_text_ref.h - the reference writer the tests compare float_to_text()
 * with: the same layout over Dragonbox's digits (the writer before the
 * binary32 formatter of f32_shortest.h). Not for production use.
 */
#ifndef FLOAT_TEXT_REF_H
#define FLOAT_TEXT_REF_H

#include <stddef.h>

/* float_to_text() with the digits from Dragonbox (number_shim). */
size_t float_to_text_dragonbox(float v, char *buf);

#endif /* FLOAT_TEXT_REF_H */

/*
 * float_text.c - the tests' reference writer: f32_shortest's digits
 * (Schubfach for binary32, f32_shortest.h) in the layout of
 * float_layout.h. The writer the server uses, float_to_text(), is in
 * number_shim.cc with Dragonbox's digits: two independent digit generators
 * that make test-float-text compares for every float32.
 */
#include "json/float_text_ref.h"

#include "json/f32_shortest.h"
#include "json/float_layout.h"

size_t float_to_text_schubfach(float v, char *buf)
{
    return float_layout(v, buf, f32_shortest);
}

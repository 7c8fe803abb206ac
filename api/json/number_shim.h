/*
 * number_shim.h - the number conversions posenc takes from C++ header
 * libraries (Debian's libdragonbox-dev and libfast-float-dev), behind a C
 * interface: parse_f32 here, and float_to_text (json/float_text.h), which
 * number_shim.cc defines with Dragonbox's digits. Pure functions,
 * thread-safe, allocation-free.
 */
#ifndef NUMBER_SHIM_H
#define NUMBER_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fast_float: parse a number at [first, last) correctly rounded to float32.
 * Returns the end of the number, or NULL if no number starts at first.
 * Accepts more than JSON does (callers check the JSON grammar first). */
const char *parse_f32(const char *first, const char *last, float *out);

#ifdef __cplusplus
}
#endif

#endif /* NUMBER_SHIM_H */

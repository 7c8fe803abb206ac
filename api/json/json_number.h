/*
 * json_number.h - one JSON number to float32, checking RFC 8259's number
 * grammar and rounding correctly (ties to even), as strtof would.
 */
#ifndef JSON_NUMBER_H
#define JSON_NUMBER_H

/* Parse the number at p (text ends at end) into *out. Returns the end of the
 * number, or NULL when no JSON number starts at p. Values past the float32
 * range come back infinite (callers reject them). Significant digits past
 * the 19th only move the exponent; such numbers go to fast_float, which
 * rereads the text. Pure and thread-safe. */
const char *json_number_to_float(const char *p, const char *end, float *out);

#endif /* JSON_NUMBER_H */

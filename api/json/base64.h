/*
 * base64.h - RFC 4648 base64 (standard alphabet, padding required) for
 * little-endian float32 arrays.
 */
#ifndef BASE64_H
#define BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decode `len` characters of base64 into a new buffer (caller frees with
 * free()). Returns NULL on invalid input (bad alphabet, bad or missing
 * padding, length not a multiple of 4) with a reason in *why, or on
 * allocation failure with *why = NULL. */
uint8_t *base64_decode(const char *text, size_t len, size_t *out_len, const char **why);

/* The bytes base64_decode() gives for these `len` characters (from the
 * length and the padding alone, before any is decoded), or SIZE_MAX when
 * len is not a multiple of 4. */
size_t base64_decoded_len(const char *text, size_t len);

/* Length of the base64 text of n bytes (with padding). */
size_t base64_encoded_len(size_t n);

/* Streaming encoder into a buffer the caller sized with base64_encoded_len
 * of the total: feed bytes in any chunks, then finish. `out` advances. */
typedef struct base64_writer {
    char *out;
    uint8_t carry[3];
    size_t ncarry;
} base64_writer;

void base64_write(base64_writer *w, const void *bytes, size_t n);
void base64_finish(base64_writer *w);

#endif /* BASE64_H */

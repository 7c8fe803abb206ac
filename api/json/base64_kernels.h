/*
 * base64_kernels.h - the inner loops of base64.c, one set per instruction
 * set, behind one table so that base64.c picks a set at run time and the
 * tests can run every set on the same input (the portable set is the
 * reference). Internal to api/json/base64*.c and their tests.
 */
#ifndef BASE64_KERNELS_H
#define BASE64_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct base64_kernels {
    const char *name; /* "portable", "avx2" */
    /* Decode `groups` groups of four alphabet characters (no padding) at
     * `in` into 3 * groups bytes at `out`. Returns false if any character
     * is outside the alphabet ('=' included); `out` is then unspecified. */
    bool (*decode_groups)(const unsigned char *in, size_t groups, uint8_t *out);
    /* Encode 3 * groups bytes at `in` into 4 * groups characters at `out`. */
    void (*encode_groups)(const uint8_t *in, size_t groups, char *out);
} base64_kernels;

/* Plain C, any CPU: the fallback and the reference. */
extern const base64_kernels base64_portable_kernels;

/* AVX2 (base64_avx2.c); only call its functions when
 * base64_avx2_supported(). On other architectures the table holds the
 * portable functions. */
extern const base64_kernels base64_avx2_kernels;
bool base64_avx2_supported(void);

/* The set base64_decode() and base64_write() use on this CPU. */
const base64_kernels *base64_kernels_for_cpu(void);

/* base64_decode() with an explicit kernel set (tests compare the sets). */
uint8_t *base64_decode_with(const base64_kernels *kernels, const char *text, size_t len,
                            size_t *out_len, const char **why);

/* base64_write() with an explicit kernel set. */
struct base64_writer;
void base64_write_with(const base64_kernels *kernels, struct base64_writer *w, const void *bytes,
                       size_t n);

#endif /* BASE64_KERNELS_H */

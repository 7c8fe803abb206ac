/*
 * refs.h - independent reference formulas for the HTTP tests.
 *
 * These are deliberately written differently from lib/: long double,
 * complex exponentials for every rotation, explicit pair loops, the
 * ggml/ofirpress form of the ALiBi slopes, and the Hugging Face bucket
 * description for T5. Results are double (or long double) so that the
 * tests can compare the server's float32 output with a tolerance measured
 * in float32 ulps. refs_selftest() pins them to the vectors of
 * published vectors (numpy float64, restated in refs.c) before anything is
 * compared with the server.
 */
#ifndef POSENC_TEST_REFS_H
#define POSENC_TEST_REFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sinusoidal PE row: split=false interleaved (sin at 2i, cos at 2i+1),
 * split=true ceil(d/2) sines then floor(d/2) cosines. Frequencies
 * base^(-2i/d), angle in long double through cexpl. */
void ref_sinusoidal_row(long double base, bool split, int64_t pos, size_t d, double *row);

/* out[n][d] = round_f32(scale * x + PE[pos]) as double, x may be NULL. */
void ref_absolute_sinusoidal(const float *x, double scale, long double base, bool split,
                             const int64_t *pos, size_t n, size_t d, double *out);

/* RoPE scaling parameters (the subset the tests use). */
typedef enum ref_scaling {
    REF_SCALING_NONE = 0,
    REF_SCALING_LINEAR,
    REF_SCALING_DYNAMIC,
    REF_SCALING_YARN,
    REF_SCALING_LLAMA3,
    REF_SCALING_LONGROPE
} ref_scaling;

typedef struct ref_rope_cfg {
    long double base;
    size_t head_dim, rotary_dim;
    bool interleaved;
    ref_scaling scaling;
    long double factor, orig;            /* orig: original_max_position_embeddings */
    long double beta_fast, beta_slow;    /* yarn: 32, 1 */
    bool unrounded;                      /* yarn: truncate false (bounds not floored/ceiled) */
    long double low_freq, high_freq;     /* llama3 */
    const long double *short_f, *long_f; /* longrope [rotary_dim/2] */
} ref_rope_cfg;

/* inv[rotary_dim/2] and the attention factor for a request whose largest
 * position + 1 is seq_len. */
void ref_rope_freqs(const ref_rope_cfg *c, long double seq_len, long double *inv,
                    long double *attention_factor);

/* out[n][width] = x rotated per head (x NULL: the bare cos/sin table of the
 * contract). Rotation by complex multiplication in long double. */
void ref_rope(const ref_rope_cfg *c, const double *x, const int64_t *pos, size_t n, size_t width,
              double *out);

/* Widen float32 to double. */
void ref_widen(const float *in, size_t n, double *out);

/* ALiBi slopes (ggml/ofirpress form), any head count. */
void ref_alibi_slopes(size_t heads, long double *slopes);

/* bias[heads][t][t] for one sequence: symmetric -slope*|pi-pj| or
 * bloom slope*pj. */
void ref_alibi_bias(size_t heads, bool bloom, const int64_t *pos, size_t t, double *bias);

/* T5 bucket of rel = key - query, following the Hugging Face description
 * (logarithmic part in float32 as torch does). */
int ref_t5_bucket(int64_t rel, bool bidirectional, int num_buckets, int max_distance);

/* bias[heads][t][t] = table[bucket(pj - pi)][h]; table [num_buckets][heads]. */
void ref_t5_bias(const float *table, int num_buckets, size_t heads, int max_distance,
                 bool bidirectional, const int64_t *pos, size_t t, float *bias);

/* The default model's weights as posenc.h documents pe_default_weights:
 * SplitMix64(seed) filling wq, wk, wv ([d][d] each) with Xavier-uniform
 * values. */
void ref_default_weights(uint64_t seed, size_t d, float *wq, float *wk, float *wv);

/* Norms of one row, in long double. kind: 0 none, 1 layernorm, 2 rmsnorm.
 * bias may be NULL. */
void ref_norm_row(int kind, long double eps, const float *w, const float *b, const long double *in,
                  size_t d, long double *out);

/* y[n][cols] = z[n][d] . W[d][cols] + b (b may be NULL), in double. */
void ref_project(const float *z, size_t n, size_t d, const float *w, size_t cols, const float *b,
                 double *y);

/* scores[h][i][j] = scale * q_h[i].k_g(h)[j] + bias[h][i][j] (bias may be
 * NULL) for one sequence; q [t][heads*hd], k [t][kv_heads*hd]. */
void ref_scores(const double *q, const double *k, size_t t, size_t heads, size_t kv_heads,
                size_t hd, double scale, const double *bias, double *scores);

/* Round every element to float32 (as the server does once). */
void ref_round_f32(const double *in, size_t n, float *out);

/* Check the references against known vectors (records checks). */
void refs_selftest(void);

#endif /* POSENC_TEST_REFS_H */

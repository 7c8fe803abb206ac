/*
 * posenc.h - the numeric core of posenc: positional encodings and
 * position-aware Q/K/V projections on plain C arrays.
 *
 * This is the one public header of libposenc (include/ in the source tree;
 * `make install` puts it in PREFIX/include, with posenc.pc for pkg-config).
 * It knows nothing of HTTP or JSON: every function takes arrays and numbers
 * and fills caller-provided output arrays. Every symbol the library
 * exports starts with pe_ (tools/check-exports.sh). A C program can compute
 * encodings with it alone:
 *
 *     #include "posenc.h"
 *     int64_t pos[3] = {0, 1, 2};
 *     float table[3 * 8];
 *     pe_absolute pe = { .kind = PE_ABS_SINUSOIDAL, .base = 10000.0,
 *                        .layout = PE_SIN_INTERLEAVED };
 *     pe_encode_absolute(&pe, NULL, 1.0, NULL, pos, 3, 8, table, NULL);
 *
 * Conventions that hold for every function below:
 * - Arrays are row-major and contiguous unless a stride is given. "[n][d]"
 *   means n rows of d floats.
 * - Positions are int64_t and must lie in [0, PE_MAX_POSITION]; callers
 *   validate them (the functions assume it).
 * - Angles (position x frequency) are computed in double precision and the
 *   results rounded to float32 once, so encodings stay accurate to ~1e-7
 *   at positions in the millions.
 * - Ownership: output arrays are always caller-owned and caller-sized; no
 *   function keeps a pointer to its arguments after it returns unless its
 *   documentation says "borrowed". Nothing here allocates except where a
 *   function says "allocates"; those return PE_ENOMEM on failure and leave
 *   outputs unspecified.
 * - Thread safety: every function is reentrant and may be called from many
 *   threads at once on distinct outputs. Functions parallelise their own
 *   outer loops with OpenMP; they never change OpenMP settings. Results
 *   never depend on the OpenMP team, and a row's never on the other rows
 *   of the call (the products are lib/matmul.c's in-order fma chains).
 */
#ifndef POSENC_H
#define POSENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version (the project's: the server reports the same). */
#define PE_VERSION_MAJOR 1
#define PE_VERSION_MINOR 3
#define PE_VERSION_PATCH 0
#define PE_VERSION_STRING "1.3.0"
/* One number to compare in #if: 10300 for 1.3.0. */
#define PE_VERSION_NUMBER (PE_VERSION_MAJOR * 10000 + PE_VERSION_MINOR * 100 + PE_VERSION_PATCH)

/* The version of the library linked in ("1.3.0"), which may differ from
 * PE_VERSION_STRING, the header's, when the two were installed apart.
 * Static storage: never free it. */
const char *pe_version(void);

/* Largest position accepted anywhere: positions stay exact in double. */
#define PE_MAX_POSITION ((int64_t)9007199254740991) /* 2^53 - 1 */

/* Result of the functions that can fail. */
typedef enum pe_status {
    PE_OK = 0,
    PE_ENOMEM,     /* an allocation failed */
    PE_ERANGE,     /* a position is past a learned table (see *bad_index) */
    PE_ENONFINITE, /* a finite input produced a non-finite float32 result */
    PE_EINVAL      /* a parameter combination the function cannot compute */
} pe_status;

/* The enumerator's name without its prefix, lower case: "ok", "enomem",
 * "erange", "enonfinite", "einval"; "unknown" for any other value. Static
 * storage. */
const char *pe_status_name(pe_status status);

/* ---------------------------------------------------------------------- */
/* Normalisation                                                           */
/* ---------------------------------------------------------------------- */

typedef enum pe_norm_kind {
    PE_NORM_NONE = 0, /* identity */
    PE_NORM_LAYER,    /* (z - mean)/sqrt(var + eps)*weight + bias, population var */
    PE_NORM_RMS       /* z/sqrt(mean(z^2) + eps)*weight */
} pe_norm_kind;

/* A pre-attention normalisation. weight (and bias, layernorm only, may be
 * NULL) are borrowed arrays of d floats. eps > 0. */
typedef struct pe_norm {
    pe_norm_kind kind;
    double eps;
    const float *weight; /* [d], required unless kind == PE_NORM_NONE */
    const float *bias;   /* [d] or NULL */
} pe_norm;

/* Default eps: 1e-5 for layernorm (torch), 1e-6 for rmsnorm (HF Llama). */
double pe_norm_default_eps(pe_norm_kind kind);

/* Normalise one row in double: out[d] = norm(in[d]). in and out may alias.
 * A NULL norm or PE_NORM_NONE copies. */
void pe_norm_row(const pe_norm *norm, const double *in, size_t d, double *out);

/* ---------------------------------------------------------------------- */
/* Absolute encodings: sinusoidal and learned tables                        */
/* ---------------------------------------------------------------------- */

typedef enum pe_sin_layout {
    PE_SIN_INTERLEAVED = 0, /* PE[2i] = sin, PE[2i+1] = cos (Vaswani et al.) */
    PE_SIN_SPLIT            /* ceil(d/2) sines, then floor(d/2) cosines (Marian) */
} pe_sin_layout;

typedef enum pe_absolute_kind {
    PE_ABS_NONE = 0,   /* nothing is added: z = embed_scale * x ... see below */
    PE_ABS_SINUSOIDAL, /* PE[p][2i] = sin(p/base^(2i/d)), PE[p][2i+1] = cos(...) */
    PE_ABS_LEARNED     /* PE[p] = table[p] */
} pe_absolute_kind;

/* An absolute positional encoding. */
typedef struct pe_absolute {
    pe_absolute_kind kind;
    double base;          /* sinusoidal: > 0, usually 10000 */
    pe_sin_layout layout; /* sinusoidal */
    const float *table;   /* learned: borrowed [table_rows][d] */
    size_t table_rows;    /* learned: max_positions */
    /* sinusoidal, optional: borrowed rows PE[0 .. cache_rows) in double, as
     * pe_sinusoidal_table() makes them for the same base, layout and d;
     * positions below cache_rows are copied from it instead of recomputed.
     * NULL (the zero value) computes every row. */
    const double *cache;
    size_t cache_rows;
} pe_absolute;

/* The sinusoidal table rows[n][d] = PE[0 .. n) in double, for use as
 * pe_absolute.cache (bit-identical to what is computed without it). Rows
 * are computed in parallel. base > 0. */
void pe_sinusoidal_table(double base, pe_sin_layout layout, size_t d, size_t n, double *rows);

/* One sinusoidal row in double precision: row[d] = PE[position]. For odd d
 * the extra frequency contributes a sine only (last column interleaved,
 * last sine column split). */
void pe_sinusoidal_row(double base, pe_sin_layout layout, int64_t position, size_t d, double *row);

/* out[n][d] = round_f32(norm(embed_scale * x + PE[positions])), computed row
 * by row in double with one rounding at the end. Allocates a scratch block
 * (ceil(d/2) + d per OpenMP thread doubles) for the duration of the call.
 *   pe          which encoding to add (NULL or PE_ABS_NONE adds nothing)
 *   norm        applied to the unrounded sum; NULL means none
 *   embed_scale multiplies x (use 1.0 for none)
 *   x           [n][d] embeddings, or NULL for zeros (the bare table)
 *   positions   [n] one position per row
 *   out         [n][d], may alias x
 *   bad_index   OUT (may be NULL): on PE_ERANGE the first row whose
 *               position is >= table_rows; on PE_ENONFINITE the smallest
 *               flat element index (row * d + column) that is not finite.
 * Returns PE_OK; PE_ERANGE (learned table too short; checked before anything
 * is written); PE_ENONFINITE (a float32 result overflows; every row is still
 * computed); PE_ENOMEM (the scratch block); PE_EINVAL (sinusoidal base not
 * finite and > 0, or a learned table that is NULL). On error out is partly
 * written. */
pe_status pe_encode_absolute(const pe_absolute *pe, const pe_norm *norm, double embed_scale,
                             const float *x, const int64_t *positions, size_t n, size_t d,
                             float *out, size_t *bad_index);

/* The whole input stage of an attention layer, for architectures whose
 * path from token embeddings to the attention input holds more than
 * pe_encode_absolute expresses:
 *     z = norm(pre_norm(embed_scale * x + PE[p] + add))
 * e.g. BERT: add = the token-type-0 embedding, pre_norm = the embedding
 * LayerNorm, no norm; BLOOM: pre_norm = word_embeddings_layernorm, norm =
 * input_layernorm. Every member may be left zero/NULL: then that step is
 * skipped (embed_scale 0 drops x, so set it, usually to 1.0). */
typedef struct pe_input {
    const pe_absolute *pe;   /* NULL or PE_ABS_NONE: no encoding is added */
    double embed_scale;      /* multiplies x */
    const float *add;        /* borrowed [d], added to every row, or NULL */
    const pe_norm *pre_norm; /* first norm, or NULL */
    const pe_norm *norm;     /* second norm, or NULL */
} pe_input;

/* out[n][d] = round_f32(z) with z as in pe_input, computed row by row in
 * double (both norms see the unrounded row). Arguments, allocation, errors
 * and aliasing as for pe_encode_absolute, which is this function with
 * add = NULL and pre_norm = NULL. */
pe_status pe_encode_input(const pe_input *in, const float *x, const int64_t *positions, size_t n,
                          size_t d, float *out, size_t *bad_index);

/* ---------------------------------------------------------------------- */
/* RoPE                                                                     */
/* ---------------------------------------------------------------------- */

typedef enum pe_rope_layout {
    PE_ROPE_HALF = 0,   /* pairs (i, i + rotary_dim/2): GPT-NeoX, HF Llama */
    PE_ROPE_INTERLEAVED /* pairs (2i, 2i+1): GPT-J, Meta Llama */
} pe_rope_layout;

typedef enum pe_rope_scaling_type {
    PE_ROPE_SCALING_NONE = 0,
    PE_ROPE_SCALING_LINEAR,  /* inv_freq / factor */
    PE_ROPE_SCALING_DYNAMIC, /* NTK: base grows once seq_len > original */
    PE_ROPE_SCALING_YARN,    /* ramp blend + attention factor */
    PE_ROPE_SCALING_LLAMA3,  /* Llama 3.1 wavelength bands */
    PE_ROPE_SCALING_LONGROPE /* per-pair short/long factors */
} pe_rope_scaling_type;

/* Hugging Face rope_scaling parameters (modeling_rope_utils.py, newest
 * semantics: an explicit yarn factor wins). A has_* flag false means the
 * key was absent and Hugging Face's default applies. */
typedef struct pe_rope_scaling {
    pe_rope_scaling_type type;
    double factor; /* linear, dynamic, yarn, llama3: required
                                         (has_factor is not read); longrope:
                                         optional, default 1 */
    bool has_factor;
    double original_max_position_embeddings; /* dynamic, yarn, llama3, longrope */
    double beta_fast, beta_slow;             /* yarn; defaults 32 and 1 */
    bool has_beta_fast, has_beta_slow;
    double attention_factor; /* yarn, longrope: explicit value wins */
    bool has_attention_factor;
    double mscale, mscale_all_dim; /* yarn */
    bool has_mscale, has_mscale_all_dim;
    bool truncate;                            /* yarn; HF default true: callers set it
                                         when the key is absent (a zeroed
                                         struct means false) */
    double low_freq_factor, high_freq_factor; /* llama3 */
    /* dynamic with alpha != 0 (HunYuan's NTK-alpha): while seq_len <=
     * original_max_position_embeddings the base is
     * base * alpha^(rotary_dim / (rotary_dim - 2)); past it, the plain
     * dynamic formula (Hugging Face's dynamic_rope_update recomputes with
     * _compute_dynamic_ntk_parameters, which reads no alpha). 0: none */
    double alpha;
    const double *short_factor; /* longrope: borrowed [rotary_dim/2] */
    const double *long_factor;  /* longrope: borrowed [rotary_dim/2] */
} pe_rope_scaling;

/* A RoPE configuration. head_dim divides the rotated width; rotary_dim is
 * even, 2 <= rotary_dim <= head_dim; channels at or past rotary_dim in each
 * head pass through. */
typedef struct pe_rope {
    double base; /* theta, > 0 */
    size_t head_dim;
    size_t rotary_dim;
    pe_rope_layout layout;
    pe_rope_scaling scaling;
    /* Proportional rope (Hugging Face's "proportional", Gemma 4's full
     * layers): with rotary_dim = head_dim, pair i turns at base^(-2i/head_dim)
     * for i < floor(proportion * head_dim / 2) and not at all (inv_freq 0)
     * beyond; proportion in (0, 1]. Only with no scaling or linear scaling
     * (its factor divides every frequency). false: every pair turns. */
    bool proportional;
    double proportion;
    /* Optional: borrowed rows [cache_rows][rotary_dim/2][2] holding
     * cos(p*inv_freq[i])*attention_factor, sin(...)*attention_factor for
     * positions p < cache_rows, as pe_rope_table() makes them for the same
     * inv_freq and attention factor passed to pe_rope_apply. NULL (the zero
     * value) computes every cos and sin. */
    const double *cache;
    size_t cache_rows;
} pe_rope;

/* The cos/sin table rows[n][half][2] for positions 0 .. n-1 (see
 * pe_rope.cache), computed in parallel; bit-identical to what
 * pe_rope_apply computes without it. */
void pe_rope_table(const double *inv_freq, size_t half, double attention_factor, size_t n,
                   double *rows);

/* The inverse frequencies and attention factor of a configuration, with
 * Hugging Face's arithmetic term by term in double.
 *   seq_len          largest position + 1 of the request (dynamic and
 *                    longrope depend on it; others ignore it)
 *   inv_freq         OUT [rotary_dim/2], double
 *   attention_factor OUT: multiplies cos and sin (1 unless yarn/longrope)
 * Returns PE_EINVAL for a configuration it cannot compute: rotary_dim odd or
 * < 2, base not finite and > 0, dynamic with rotary_dim 2, a non-positive
 * factor, original_max_position_embeddings, llama3 low/high_freq_factor or
 * beta, yarn with base 1, longrope without the factor list it needs (short
 * when seq_len <= original, else long) or with a non-positive entry, or
 * longrope with factor > 1 and original <= 1. Outputs are unspecified then. */
pe_status pe_rope_frequencies(const pe_rope *rope, double seq_len, double *inv_freq,
                              double *attention_factor);

/* Rotate x[n][width] per head of rope->head_dim (width a multiple of it) at
 * the given positions, writing out[n][width] (may alias x when the strides
 * are equal). Allocates nothing: cos/sin are computed once per pair and row
 * and shared by the heads. The rotation is
 * computed in double from the float inputs and rounded once:
 *   half:        out[i] = x[i]c - x[i+r/2]s,  out[i+r/2] = x[i+r/2]c + x[i]s
 *   interleaved: out[2i] = x[2i]c - x[2i+1]s, out[2i+1] = x[2i+1]c + x[2i]s
 * with c = cos(p*inv_freq[i])*attention_factor, s likewise.
 * x may be NULL: then the input is the unit vector that has 1 at the first
 * member of every pair and at every pass-through channel, giving the bare
 * cos/sin table ([cos.. | sin.. | 1..] per head for half, [c0,s0,c1,s1,..|1..]
 * for interleaved). x_stride/out_stride are row strides in floats (>= width).
 */
void pe_rope_apply(const pe_rope *rope, const double *inv_freq, double attention_factor,
                   const int64_t *positions, size_t n, size_t width, const float *x,
                   size_t x_stride, float *out, size_t out_stride);

/* ---------------------------------------------------------------------- */
/* Positions in more than one dimension: multimodal and vision 2-D RoPE     */
/* ---------------------------------------------------------------------- */

/* Which component of a token's position [t, h, w] turns frequency slot j
 * (0 <= j < rotary_dim/2) of a multimodal RoPE (Qwen2-VL and successors).
 * PE_MROPE_NONE (the zero value) is 1-D RoPE. */
typedef enum pe_mrope_style {
    PE_MROPE_NONE = 0,
    PE_MROPE_CHUNKED,     /* t for j < s_t, h for the next s_h, w after: Qwen2/2.5-VL, GLM-4.xV */
    PE_MROPE_INTERLEAVED, /* h where j%3 == 1 and j < 3 s_h, w where j%3 == 2 and j < 3 s_w,
                             t elsewhere: Qwen3-VL, Qwen3.5 */
    PE_MROPE_ERNIE        /* j < 2 s_h: h when j is even, w when odd; the last s_t: t
                             (ERNIE-4.5-VL; needs s_h == s_w) */
} pe_mrope_style;

/* A multimodal RoPE setting: the style and the section [s_t, s_h, s_w]
 * (the frequency slots each component owns), s_t + s_h + s_w =
 * rotary_dim/2. A model carries one next to its pe_rope. */
typedef struct pe_mrope {
    pe_mrope_style style;
    size_t section[3]; /* [s_t, s_h, s_w] */
} pe_mrope;

/* The component (0 = t, 1 = h, 2 = w) that turns slot j under *m. */
unsigned pe_mrope_axis(const pe_mrope *m, size_t j);

/* PE_OK when *m fits a rotary width of `half` frequency slots (section
 * sums to half; ernie: s_h == s_w), else PE_EINVAL. */
pe_status pe_mrope_check(const pe_mrope *m, size_t half);

/* pe_rope_apply with a position triple [t, h, w] per row (positions[n][3])
 * and the slot assignment of *mrope (pe_mrope_check must hold for
 * rope->rotary_dim/2): slot j turns by positions[r][pe_mrope_axis(j)] *
 * inv_freq[j]. Everything else (pairs, pass-through, rounding, x NULL,
 * strides, aliasing) is pe_rope_apply's; a row with t == h == w == p gives
 * the bits pe_rope_apply gives at p. rope->cache is not read. */
void pe_mrope_apply(const pe_rope *rope, const pe_mrope *mrope, const double *inv_freq,
                    double attention_factor, const int64_t *positions, size_t n, size_t width,
                    const float *x, size_t x_stride, float *out, size_t out_stride);

/* The 2-D RoPE of vision encoders, each variant as its Hugging Face model
 * computes it, with D = head_dim and a patch at [row, col]:
 *   QWEN_VIT  f_j = base^(-4j/D), j < D/4; slot j turns by row*f_j, slot
 *             D/4 + j by col*f_j; pairs (i, i + D/2)
 *   PIXTRAL   f_i = base^(-2i/D); slot j < D/4 by row*f_2j, slot D/4 + j
 *             by col*f_(2j+1); pairs (i, i + D/2)
 *   LLAMA4    f_k = base^(-4k/D), k < D/4; pair k by (col+1)*f_k, pair
 *             D/4 + k by (row+1)*f_k; pairs (2i, 2i+1)
 *   GEMMA4    the head is two halves of D/2, each a rotate-half RoPE with
 *             f_i = base^(-2i/(D/2)): the first by col, the second by row */
typedef enum pe_rope2d_variant {
    PE_ROPE2D_QWEN_VIT = 0,
    PE_ROPE2D_PIXTRAL,
    PE_ROPE2D_LLAMA4,
    PE_ROPE2D_GEMMA4
} pe_rope2d_variant;

typedef struct pe_rope2d {
    pe_rope2d_variant variant;
    double base;     /* > 0 */
    size_t head_dim; /* a multiple of 4 */
} pe_rope2d;

/* A coordinate pair [PE_ROPE2D_UNTURNED, PE_ROPE2D_UNTURNED] is not turned
 * (angle 0 in every slot): Llama 4's class token. */
#define PE_ROPE2D_UNTURNED ((int64_t)-1)

/* Rotate x[n][width] per head of r->head_dim (width a multiple of it) by
 * coords[n][2] = [row, col], into out[n][width] (may alias x). Angles in
 * double, one float32 rounding; x NULL is the unit input as for
 * pe_rope_apply. PE_EINVAL when head_dim is not a positive multiple of 4,
 * does not divide width, or base is not finite and > 0. */
pe_status pe_rope2d_apply(const pe_rope2d *r, const int64_t *coords, size_t n, size_t width,
                          const float *x, float *out);

/* ---------------------------------------------------------------------- */
/* Relative biases: ALiBi and T5                                            */
/* ---------------------------------------------------------------------- */

typedef enum pe_alibi_form {
    PE_ALIBI_SYMMETRIC = 0, /* bias[h][i][j] = -slope[h]*|p_i - p_j| (paper) */
    PE_ALIBI_BLOOM,         /* bias[h][i][j] = slope[h]*p_j (BLOOM's raw form) */
    PE_ALIBI_MPT            /* bias[h][i][j] = slope[h]*(p_j - p_{t-1}) (MPT's raw form:
                             * build_mpt_alibi_tensor's arange(1 - T, 1), the last key at 0) */
} pe_alibi_form;

/* slopes[heads] as in the ALiBi paper, BLOOM and ggml (max_bias 8),
 * including head counts that are not powers of two. heads >= 1. */
void pe_alibi_slopes(size_t heads, double *slopes);

/* How the bias is rounded and scaled after its form (both off: zeroed).
 * bf16: Falcon's build_alibi_tensor, which builds it in bfloat16 whatever
 * the model's dtype: the slope (float32) and the key position are rounded
 * to bfloat16 and so is their product. divisor (0: none): the bias is
 * then divided by (float)divisor in float32, as Falcon's sdpa mask
 * alibi / sqrt(head_dim). */
typedef struct pe_alibi_rounding {
    bool bf16;
    double divisor;
} pe_alibi_rounding;

/* bias[heads][t][t] for one sequence of t positions. The symmetric form is
 * computed as 0.0 - slope*|p_i - p_j| so that the diagonal is +0, never -0.
 * rounding: NULL for none. */
void pe_alibi_bias(size_t heads, pe_alibi_form form, const pe_alibi_rounding *rounding,
                   const int64_t *positions, size_t t, float *bias);

/* T5 relative-position bucket for rel = key_pos - query_pos, as Hugging
 * Face's _relative_position_bucket (logarithmic part in float32).
 * num_buckets >= 2 (>= 4 when bidirectional), max_distance > the exact range. */
size_t pe_t5_bucket(int64_t rel, bool bidirectional, size_t num_buckets, int64_t max_distance);

/* T5 bias parameters. table is borrowed, [num_buckets][heads]. */
typedef struct pe_t5 {
    const float *table;
    size_t num_buckets;
    size_t heads;
    int64_t max_distance;
    bool bidirectional;
} pe_t5;

/* bias[heads][t][t] = table[bucket(p_j - p_i)][h] for one sequence. */
void pe_t5_bias(const pe_t5 *t5, const int64_t *positions, size_t t, float *bias);

/* ---------------------------------------------------------------------- */
/* Projections and attention scores                                         */
/* ---------------------------------------------------------------------- */

/* The Q/K/V projection of one attention layer, fused: one weight matrix
 * w_qkv[d_model][qkv_width] whose columns are Wq | Wk | Wv, with
 * qkv_width = (heads + 2*kv_heads)*head_dim, and an optional fused bias. */
typedef struct pe_qkv_weights {
    size_t d_model, heads, kv_heads, head_dim;
    float *w_qkv;    /* owned by the struct: [d_model][qkv_width] */
    float *b_qkv;    /* owned, [qkv_width] or NULL */
    float *w_packed; /* owned: w_qkv in the product's panel layout */
} pe_qkv_weights;

/* Columns of the fused product. */
size_t pe_qkv_width(const pe_qkv_weights *w);

/* Build fused weights from separate matrices (allocates; copies). wq is
 * [d_model][heads*head_dim], wk and wv [d_model][kv_heads*head_dim]; the
 * biases may each be NULL (missing ones count as zero; b_qkv stays NULL when
 * all three are NULL). Returns PE_OK, PE_ENOMEM (also when a size overflows)
 * or PE_EINVAL (a zero size, or kv_heads not dividing heads); on error *out
 * is left empty (safe to pass to pe_qkv_weights_free). */
pe_status pe_qkv_weights_init(pe_qkv_weights *out, size_t d_model, size_t heads, size_t kv_heads,
                              size_t head_dim, const float *wq, const float *wk, const float *wv,
                              const float *bq, const float *bk, const float *bv);

/* Free what pe_qkv_weights_init allocated; accepts NULL and empty structs. */
void pe_qkv_weights_free(pe_qkv_weights *w);

/* qkv[n][qkv_width] = z[n][d_model] . w_qkv + b_qkv. Row t of Q starts at
 * qkv + t*qkv_width, of K at + heads*head_dim, of V at
 * + (heads+kv_heads)*head_dim. Batch-invariant and deterministic: each
 * element is the in-order fused multiply-add chain over d_model from +0,
 * then + b_qkv, so row t's bits depend only on z's row t and the weights,
 * never on n, on t's place or on the OpenMP team. */
void pe_project_qkv(const pe_qkv_weights *w, const float *z, size_t n, float *qkv);

/* out[n][d_out] = z[n][d_in] . w[d_in][d_out] + b (b may be NULL): one
 * more projection of the attention input, unfused (gated attention's gate,
 * computed only when asked for). Each element is the in-order fma chain of
 * pe_project_qkv, then + b: batch-invariant. w and b are borrowed. */
void pe_project_linear(const float *w, const float *b, size_t d_in, size_t d_out, const float *z,
                       size_t n, float *out);

/* Multi-head latent attention's projection (DeepSeek-V2/V3, Hugging Face's
 * DeepseekV3Attention / DeepseekV2Attention before the rotation). Every
 * matrix is [in][out] (borrowed):
 *   q    = q_b . rmsnorm(q_a . z; q_a_norm, q_norm_eps)   (q_lora_rank > 0)
 *   q    = q_b . z, q_b [d_model][...]                    (q_lora_rank 0)
 *   kv_a = z . kv_a  -> [compressed (kv_lora_rank) | k_rot (rope_dim)]
 *   kv_b = rmsnorm(compressed; kv_a_norm, kv_norm_eps) . kv_b
 *          -> per head [k_nope (nope_dim) | v (v_dim)]
 * Each head of q and k is [nope_dim | rope_dim]; k's rope part is k_rot,
 * the same for every head. */
typedef struct pe_mla_weights {
    size_t d_model, heads, q_lora_rank, kv_lora_rank, nope_dim, rope_dim, v_dim;
    double q_norm_eps, kv_norm_eps;
    const float *q_a;       /* [d_model][q_lora_rank], NULL when q_lora_rank is 0 */
    const float *q_a_norm;  /* [q_lora_rank] */
    const float *q_b;       /* [q_lora_rank or d_model][heads*(nope_dim+rope_dim)] */
    const float *kv_a;      /* [d_model][kv_lora_rank+rope_dim] */
    const float *kv_a_norm; /* [kv_lora_rank] */
    const float *kv_b;      /* [kv_lora_rank][heads*(nope_dim+v_dim)] */
} pe_mla_weights;

/* heads*(nope_dim + rope_dim): the width of q and of k. */
size_t pe_mla_qk_width(const pe_mla_weights *w);

/* 2*pe_mla_qk_width + heads*v_dim: a row of out. */
size_t pe_mla_width(const pe_mla_weights *w);

/* out[n][q | k | v] from z[n][d_model], unrotated. Matrix products are
 * float32 in-order fma chains as in pe_project_qkv (a row's bits depend
 * only on that row), the norms pe_group_rms_norm's. Returns PE_OK or
 * PE_ENOMEM (scratch buffers). */
pe_status pe_mla_project(const pe_mla_weights *w, const float *z, size_t n, float *out);

/* Pre-softmax scores of one sequence, no mask:
 *   scores[h][i][j] = scale * q_h[i].k_g(h)[j] + (bias ? bias[h][i][j] : 0)
 * with g(h) = h / (heads/kv_heads) (kv_heads divides heads). q rows are
 * q + i*q_stride (head h at offset h*head_dim), k rows likewise. scores is
 * [heads][t][t]. Each dot product is the in-order float32 fma chain over
 * head_dim (the same bits under any OpenMP team); scale and bias are
 * applied in double and rounded once. bias must not alias scores. */
void pe_attention_scores(const float *q, size_t q_stride, const float *k, size_t k_stride, size_t t,
                         size_t heads, size_t kv_heads, size_t head_dim, double scale,
                         const float *bias, float *scores);

/* RMSNorm of q or k after the projection, before the rotation, in place:
 * each row x + i*stride (i < n) holds `width` channels (a multiple of
 * `group`), and every run of `group` channels becomes
 *     g[j] * 1/sqrt(mean(g^2) + eps) * weight[j]
 * computed in double from the floats and rounded once. group = head_dim
 * normalises per head (Qwen3, Gemma 3; weight [head_dim] shared by the
 * heads), group = width over the whole projection (OLMo 2; weight
 * [width]). Architectures whose norm is x*(1 + w) pass 1 + w. eps > 0;
 * weight is borrowed [group], or NULL for none (Llama 4's L2Norm, a
 * weightless RMSNorm per head applied after the rotation). */
void pe_group_rms_norm(size_t n, size_t width, size_t group, const float *weight, double eps,
                       float *x, size_t stride);

/* LayerNorm of q or k after the projection, before the rotation, in
 * place, over the same groups as pe_group_rms_norm: every run of `group`
 * channels g becomes
 *     (g[j] - mean(g)) / sqrt(var(g) + eps) * w[j] + b[j]
 * (population variance), in double from the floats, rounded once. Group h
 * takes w = weight + h*weight_stride and b = bias + h*weight_stride:
 * weight_stride 0 shares one [group] weight (and bias) (Phi's
 * qk_layernorm, nn.LayerNorm(head_dim)), weight_stride = group gives every
 * head its own (Cohere's CohereLayerNorm((heads, head_dim)), StableLM's
 * StableLmLayerNormPerHead: weight [width], no bias). weight and bias are
 * borrowed, each NULL for none; eps > 0. */
void pe_group_layer_norm(size_t n, size_t width, size_t group, const float *weight,
                         const float *bias, size_t weight_stride, double eps, float *x,
                         size_t stride);

/* Llama 4's attention-temperature tuning of q on its no-RoPE layers
 * (modeling_llama4.py, Llama4TextAttention.forward), in place: row i
 * (i < n) of x + i*stride, `width` channels, is multiplied by
 *     s(p) = log(floor((p + 1) / floor_scale) + 1) * attn_scale + 1
 * with p = positions[i]. s is evaluated in float32 step by step as torch
 * does it (cache_position.float(), then each operation in float32) and the
 * product q * s is rounded to float32. floor_scale > 0. */
void pe_attn_temperature(size_t n, const int64_t *positions, double floor_scale, double attn_scale,
                         size_t width, float *x, size_t stride);

/* Mistral's query scale by position (Ministral 3, Mistral 4:
 * get_llama_4_attn_scale in modeling_ministral3.py), in place: row i of
 * x + i*stride, `width` channels, is multiplied by
 *     s(p) = 1 + beta * log(1 + floor(p / orig))
 * with p = positions[i] (the position id), evaluated in float32 as torch
 * does it (position_ids / orig is a float32 true division, each operation
 * after it float32); the product is rounded to float32. orig > 0. */
void pe_query_scale_mistral(size_t n, const int64_t *positions, double beta, double orig,
                            size_t width, float *x, size_t stride);

/* The tanh soft cap of pre-softmax scores, in place, then the bias:
 *     scores[i] = cap * tanh(scores[i] / cap) + (bias ? bias[i] : 0)
 * in double, rounded once (Gemma 2's attn_logit_softcapping, applied to the
 * scaled scores before the mask). cap > 0; bias is borrowed [n] or NULL and
 * must not alias scores. */
void pe_softcap_scores(float *scores, const float *bias, size_t n, double cap);

/* ---------------------------------------------------------------------- */
/* The built-in default model's weights                                     */
/* ---------------------------------------------------------------------- */

/* Deterministic weights, identical on every machine: a SplitMix64 stream
 * seeded with `seed` fills wq, then wk, then wv, each [d][d] row-major, with
 * Xavier-uniform values u in [-L, L), L = sqrt(6/(d+d)), computed as
 * u = L*(2*(r >> 11)*2^-53 - 1) in double and rounded to float32 (so a value
 * may round to exactly +-(float)L), where r is the next 64-bit output:
 *     state += 0x9E3779B97F4A7C15; z = state;
 *     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *     z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *     r = z ^ (z >> 31);
 * (uint64 arithmetic modulo 2^64; state starts at seed; seed 0 gives
 * r = 0xE220A8397B1DCDAF first). Each array holds d*d floats. */
void pe_default_weights(uint64_t seed, size_t d, float *wq, float *wk, float *wv);

#ifdef __cplusplus
}
#endif

/* The numeric search of POST /diagnose has its own header, diagnose/pe_diagnose.h,
 * which includes this one. */

#endif /* POSENC_H */

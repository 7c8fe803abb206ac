/*
 * scheme.h - a positional-encoding scheme and its parameters, decoded and
 * validated from a JSON `params` object.
 */
#ifndef SCHEME_H
#define SCHEME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "models/model_error.h"
#include "posenc.h"
#include "json/json_doc.h"

typedef enum scheme_kind {
    SCHEME_SINUSOIDAL = 0,
    SCHEME_LEARNED,
    SCHEME_ROPE,
    SCHEME_ALIBI,
    SCHEME_T5,
    SCHEME_NONE,
    SCHEME_ROPE2D /* vision encoders' 2-D rope: /encode only */
} scheme_kind;

/* NULL-terminated names, indexed by scheme_kind. */
extern const char *const scheme_names[];

/* Largest d_model, head count or head size accepted anywhere. */
#define SCHEME_MAX_DIM 65536

typedef struct scheme {
    scheme_kind kind;
    bool has_score_scale;
    double score_scale;

    double base;              /* sinusoidal, rope */
    pe_sin_layout sin_layout; /* sinusoidal */

    /* rope: 0 means "not given" for head_dim and rotary_dim */
    size_t head_dim;
    size_t rotary_dim;
    bool has_partial_rotary_factor;
    double partial_rotary_factor;
    pe_rope_layout rope_layout;
    bool rope_proportional;  /* rope_type "proportional" (pe_rope.proportional) */
    pe_rope_scaling scaling; /* short/long factor arrays point into the two below */
    double *short_factor;    /* owned */
    double *long_factor;     /* owned */
    size_t short_len, long_len;
    /* rope: multimodal RoPE (style PE_MROPE_NONE: 1-D). A loader sets it
     * from a config's mrope_section / mrope_interleaved (or writes
     * params.mrope, which /info then shows); its fit to rotary_dim is
     * checked per request (rope_plan_init). */
    pe_mrope mrope;
    double tokens_per_second; /* rope: mm_layout's video frame rate; 0: not given (2) */

    /* rope2d (head_dim above: 0 means the whole vector; base) */
    pe_rope2d_variant rope2d_variant;

    /* alibi: heads 0 means "not given" */
    size_t heads;
    pe_alibi_form alibi_form;
    pe_alibi_rounding alibi_rounding; /* params bf16, bias_divisor (0: none) */

    /* t5; given_*: the value came from params (not a default), so that
     * the bounds they set on each other are checked on merged params */
    size_t num_buckets;
    int64_t max_distance;
    bool bidirectional;
    bool given_num_buckets, given_max_distance;
} scheme;

/* Decode params (an object, or NULL for none) of the scheme `kind`. path is
 * the JSON path of params for messages ("params", "model.params"). Unknown
 * keys: DESC_E_JSON. On success *out may own arrays: free with scheme_free. */
int scheme_parse(scheme_kind kind, const json_t *params, const char *path, scheme *out,
                 desc_error *err);

/* scheme_parse() for a request: numeric arrays are read from doc (may be
 * NULL), and when base (may be NULL) is a scheme of the same kind, params
 * override its keys one by one (contract "Details settled"); otherwise
 * they start from the defaults. Every number, lists included, is read in
 * double. */
int scheme_decode(const json_doc *doc, scheme_kind kind, const json_t *params, const char *path,
                  const scheme *base, scheme *out, desc_error *err);

/* A deep copy (arrays included) of *from into *to: 0, or -1 on allocation
 * failure with *to empty. */
int scheme_copy(const scheme *from, scheme *to);

void scheme_free(scheme *s);

/* The rope params of positions in more than one dimension, present keys
 * over *s: mrope (an object: style and section; the section's sum is
 * checked against rotary_dim/2 later, where the width is known) and
 * tokens_per_second. */
int scheme_parse_multimodal(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                            desc_error *err);

/* rope2d's params (variant required; base default 10000, 100 for
 * gemma4_vision) over *s. */
int scheme_parse_rope2d(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                        desc_error *err);

/* The names of pe_mrope_style from PE_MROPE_CHUNKED on, NULL-terminated. */
extern const char *const scheme_mrope_styles[];

/* The names of pe_rope2d_variant, by its value, NULL-terminated. */
extern const char *const scheme_rope2d_variants[];

/* Whether a scheme adds a table to the embeddings (sinusoidal, learned). */
bool scheme_is_absolute(scheme_kind kind);

/* Whether the scaling defines an attention factor to report (yarn, longrope). */
bool scheme_reports_attention_factor(const scheme *s);

#endif /* SCHEME_H */

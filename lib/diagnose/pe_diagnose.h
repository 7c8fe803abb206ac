/*
 * pe_diagnose.h - the numeric search behind POST /diagnose: given what a
 * client's code computed (the subject) and what it meant to compute (the
 * claim), say whether they agree, and if not find the variant among the
 * known ways positional encodings go wrong that reproduces the subject.
 *
 * Arrays in, a verdict + findings + the best variant out; no JSON. The
 * search is exact rather than a grid: a RoPE pair (or a sin/cos column pair)
 * is a pure rotation, so the pairing is the one under which every pair keeps
 * its norm (up to one constant: the attention factor); the angle of each
 * pair is a line in position whose slope is the pair's frequency (base,
 * scaling bands, frequency formula, direction) and whose phase gives the
 * position offset. Frequencies are read by phase progression at a few
 * geometric lags, then matched against a FIXED list of candidate frequency
 * profiles (claimed/transformed/fitted bases x scalings); only a handful of
 * full renders decide the verdict. Work is O(subject size x a constant)
 * whatever the numbers (random, constant, huge finite): no data-driven
 * loop bounds.
 *
 * Ownership: every pointer in a subject or claim is borrowed for the call;
 * the result owns nothing except what pe_dx_result_free releases.
 */
#ifndef PE_DIAGNOSE_H
#define PE_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "posenc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The contract's finding codes (v1.1, in its table's order; then v1.2's). */
#define PE_DX_CODES(XX)                                                                            \
    XX(PE_DX_LAYOUT_SWAPPED, "layout_swapped")                                                     \
    XX(PE_DX_SIN_COS_SWAPPED, "sin_cos_swapped")                                                   \
    XX(PE_DX_ROTATION_REVERSED, "rotation_reversed")                                               \
    XX(PE_DX_POSITION_OFFSET, "position_offset")                                                   \
    XX(PE_DX_BASE_MISMATCH, "base_mismatch")                                                       \
    XX(PE_DX_FREQUENCY_FORMULA, "frequency_formula")                                               \
    XX(PE_DX_ROTARY_DIM_MISMATCH, "rotary_dim_mismatch")                                           \
    XX(PE_DX_HEAD_DIM_MISMATCH, "head_dim_mismatch")                                               \
    XX(PE_DX_SCALING_MISMATCH, "scaling_mismatch")                                                 \
    XX(PE_DX_ATTENTION_FACTOR, "attention_factor")                                                 \
    XX(PE_DX_EMBED_SCALE, "embed_scale")                                                           \
    XX(PE_DX_TRANSPOSED, "transposed")                                                             \
    XX(PE_DX_LOW_PRECISION, "low_precision")                                                       \
    XX(PE_DX_ALIBI_SLOPES, "alibi_slopes")                                                         \
    XX(PE_DX_ALIBI_FORM, "alibi_form")                                                             \
    XX(PE_DX_T5_DIRECTION, "t5_direction")                                                         \
    XX(PE_DX_T5_BUCKETS, "t5_buckets")                                                             \
    XX(PE_DX_POSITIONS_MISMATCH, "positions_mismatch")                                             \
    XX(PE_DX_MROPE_MISMATCH, "mrope_mismatch")                                                     \
    XX(PE_DX_ROPE2D_VARIANT, "rope2d_variant")

typedef enum pe_dx_code {
#define PE_DX_ENUM(e, s) e,
    PE_DX_CODES(PE_DX_ENUM)
#undef PE_DX_ENUM
        PE_DX_CODE_COUNT
} pe_dx_code;

/* The contract's name of a code ("layout_swapped"); "?" when out of range. */
const char *pe_dx_code_name(pe_dx_code code);

typedef enum pe_dx_verdict { PE_DX_MATCH = 0, PE_DX_EXPLAINED, PE_DX_UNEXPLAINED } pe_dx_verdict;

const char *pe_dx_verdict_name(pe_dx_verdict verdict);

/* Precision of the client's angle arithmetic (frequency, position, their
 * product, cos/sin each rounded to it). */
typedef enum pe_dx_precision {
    PE_DX_EXACT = 0, /* double, rounded to float32 once (posenc's own) */
    PE_DX_FLOAT32,
    PE_DX_BFLOAT16,
    PE_DX_FLOAT16
} pe_dx_precision;

/* "float32", "bfloat16", "float16" ("exact" for PE_DX_EXACT). */
const char *pe_dx_precision_name(pe_dx_precision precision);

/* x rounded to the precision (nearest, ties to even; float16 overflows to
 * inf past 65504). PE_DX_EXACT returns x. */
double pe_dx_round(pe_dx_precision precision, double x);

/* Where the lower precision acts (low_precision's evidence.stage). */
typedef enum pe_dx_stage {
    PE_DX_STAGE_ANGLES = 0, /* frequency, position, angle and cos/sin computed in it */
    PE_DX_STAGE_VALUES      /* exact angles; the cos/sin (table) values stored in it */
} pe_dx_stage;

/* An ALiBi form's contract name: "symmetric", "bloom", "mpt". */
const char *pe_dx_alibi_form_name(pe_alibi_form form);

/* How positions found from the phase differ from the claimed ones
 * (positions_mismatch's evidence.pattern). */
typedef enum pe_dx_pattern {
    PE_DX_PATTERN_OTHER = 0,
    PE_DX_PATTERN_REVERSED,  /* descending by 1 (Transformer-XL's klen-1 ... 0) */
    PE_DX_PATTERN_CONSTANT,  /* all equal (e.g. all zero) */
    PE_DX_PATTERN_RESTART,   /* ascending by 1, restarting per segment */
    PE_DX_PATTERN_FROM_MASK, /* cumsum(mask) - 1 with pads at one value (0 or 1) */
    PE_DX_PATTERN_OFFSET     /* a batch row: its claimed positions shifted by a
                                constant (rows shifted alike are position_offset) */
} pe_dx_pattern;

/* "other", "reversed", "constant", "restart", "from_mask", "offset". */
const char *pe_dx_pattern_name(pe_dx_pattern pattern);

/* The pattern of positions p[n] (n >= 1). */
pe_dx_pattern pe_dx_positions_pattern(const int64_t *p, size_t n);

/* The pattern of one batch row's positions found p[n] against its claimed
 * ones claimed[n]: PE_DX_PATTERN_OFFSET when p is claimed shifted by a
 * constant other than 0, else pe_dx_positions_pattern(p, n). */
pe_dx_pattern pe_dx_row_pattern(const int64_t *p, const int64_t *claimed, size_t n);

/* "angles", "values". */
const char *pe_dx_stage_name(pe_dx_stage stage);

/* Why a found base differs from the claimed one (frequency_formula). */
typedef enum pe_dx_formula {
    PE_DX_FORMULA_STANDARD = 0, /* exponent 2i/d */
    PE_DX_FORMULA_PAIR_INDEX,   /* i/d: base^(1/2) */
    PE_DX_FORMULA_D_MINUS_1,    /* 2i/(d-1): base^(d/(d-1)) */
    PE_DX_FORMULA_D_PLUS_1,     /* 2i/(d+1): base^(d/(d+1)) */
    PE_DX_FORMULA_HALF_MINUS_1  /* i/(d/2-1) (fairseq, tensor2tensor, Whisper,
                                   AllenNLP): base^(d/(d-2)) */
} pe_dx_formula;

#define PE_DX_FORMULA_COUNT 5

/* The base a formula amounts to for a claimed base over an exponent of
 * width d (the claimed base itself for the standard one; 0 when the
 * formula cannot be built at that d, e.g. d/2 - 1 = 0). */
double pe_dx_formula_base(pe_dx_formula formula, double base, size_t d);

/* Words for a formula, e.g. "pair index i/d instead of 2i/d". */
const char *pe_dx_formula_words(pe_dx_formula formula);

/* What the subject is (the contract's table of subjects, q/k/v aside). */
typedef enum pe_dx_kind {
    PE_DX_SUBJ_TABLE = 0,    /* a: [rows][cols] absolute table (claim sinusoidal) */
    PE_DX_SUBJ_ABS_ENCODED,  /* x, a: [rows][cols] embeddings and embed_scale*x + PE */
    PE_DX_SUBJ_ROPE_CACHE,   /* a = cos, b = sin: [rows][cols], cols = rotary_dim/2
                          or rotary_dim */
    PE_DX_SUBJ_ROPE_ENCODED, /* x, a: [rows][cols] vectors before and after RoPE */
    PE_DX_SUBJ_ALIBI_BIAS,   /* a: [heads][rows][rows] */
    PE_DX_SUBJ_ALIBI_SLOPES, /* a: [heads] */
    PE_DX_SUBJ_T5_BIAS       /* a: [heads][rows][rows]; the claim's t5.table */
} pe_dx_kind;

/* A subject. rows = tokens (also for biases); positions has `rows` entries
 * (the claim's positions BEFORE the variant's offset). All borrowed. */
typedef struct pe_dx_subject {
    pe_dx_kind kind;
    size_t rows, cols;        /* cols unused for biases and slopes */
    size_t heads;             /* biases and slopes */
    const float *x;           /* ABS_ENCODED, ROPE_ENCODED: [rows][cols]; ABS may
                          be NULL for zeros */
    const float *a;           /* the main array, see pe_dx_kind */
    const float *b;           /* ROPE_CACHE: sin */
    const int64_t *positions; /* [rows] */
    size_t batch;             /* rows is `batch` batch rows of rows/batch tokens,
                                 one after another (0 or 1: one row) */
    double budget_s;          /* the search's compute budget: seconds of this
                                 thread's CPU time (0: PE_DX_DEFAULT_BUDGET_S) */
    double deadline_;         /* pe_diagnose's own: leave 0 */
} pe_dx_subject;

#define PE_DX_DEFAULT_BUDGET_S 2.0

/* A variant: everything that determines a subject. The claim is one (its
 * flags false, offset 0, precision exact); `best` is another. */
typedef struct pe_dx_variant {
    /* every scheme */
    int64_t offset;            /* added to every position */
    pe_dx_precision precision; /* of the angle arithmetic (or of the values) */
    pe_dx_stage stage;         /* where precision acts */
    bool any_order;            /* bfloat16/float16 angles computed in an order
                                  not emulated (a power of a rounded reciprocal,
                                  rounded frequencies before a float32 phase):
                                  judged by the envelope such errors keep,
                                  growing with |angle|, not by one recipe */
    const int64_t *positions;  /* [rows], borrowed (a result's own: see below):
                                  the positions in place of the subject's; NULL
                                  = the subject's */
    bool transposed;           /* TABLE: the array is [d][tokens] */
    bool sin_cos_swapped;      /* TABLE, ROPE_CACHE */
    pe_dx_formula formula;     /* evidence: why base differs (sinusoidal, rope) */

    /* sinusoidal (TABLE, ABS_ENCODED) */
    double base;
    pe_sin_layout sin_layout;
    double embed_scale; /* ABS_ENCODED */

    /* rope (ROPE_CACHE, ROPE_ENCODED): rope.base is the EFFECTIVE base the
     * frequencies use (what /encode needs), rope.cache must be NULL, and
     * longrope factor lists are borrowed from the claim. */
    pe_rope rope;
    bool reversed;           /* rotation by -theta */
    bool head_dim_free;      /* claim only: no head size was given (the claim
                                rotates the whole vector); ROPE_ENCODED's
                                search tries the even divisors of the width */
    double attention_factor; /* the constant on every rotated pair */
    /* multimodal rope: with mrope.style set and positions3 given, slot j
     * of row t turns by positions3[t][pe_mrope_axis(j)] + offset (the
     * 1-D positions are then not read); else 1-D */
    pe_mrope mrope;
    const int64_t *positions3; /* [rows][3], borrowed */
    /* vision 2-D rope (ROPE_ENCODED; rope2d.head_dim 0: not rope2d): row t
     * turned by coords[t] = [row, col] (pe_rope2d_apply) */
    pe_rope2d rope2d;
    const int64_t *coords; /* [rows][2], borrowed */
    size_t frequency_dim;  /* evidence: the exponent's denominator when
                                 rotary_dim_mismatch names head_dim; else
                                 rope.rotary_dim */
    size_t zero_from;      /* rope, > 0: pairs from this index on turn by
                              frequency 0 (frequency_dim's inverse
                              frequencies zero-padded to rotary_dim/2);
                              posenc cannot render it for /encode, so best
                              is judged without it */

    /* alibi */
    pe_alibi_form alibi_form;
    double alibi_sign;    /* 1 or -1 (flipped against the form's formula) */
    const double *slopes; /* [heads]; borrowed (a result's own: see below),
                              NULL = the paper's */

    /* t5 */
    pe_t5 t5;         /* table borrowed from the claim */
    bool t5_reversed; /* rel = query - key */
} pe_dx_variant;

/* Initialise a claim with the defaults every scheme shares (offset 0,
 * exact, sign 1, embed_scale 1, attention factor from the scaling). */
void pe_dx_variant_init(pe_dx_variant *v);

typedef struct pe_dx_tolerance {
    double atol, rtol; /* |got - want| <= atol + rtol*|want| */
} pe_dx_tolerance;

/* How far a subject is from one variant. */
typedef struct pe_dx_errors {
    double max_abs, max_rel; /* max |got-want|; max |got-want|/max(|want|, atol),
                                always finite (FLT_MAX at most) */
    double rms;              /* sqrt(mean |got-want|^2) */
    double mismatched;       /* fraction outside tolerance */
    size_t worst;            /* flat index of max_abs (into a, then b) */
    double got, want;        /* at worst */
} pe_dx_errors;

typedef struct pe_dx_finding {
    pe_dx_code code;
    char message[320]; /* what differs, in numbers, and what to change */
} pe_dx_finding;

#define PE_DX_MAX_FINDINGS 16

/* The answer. Evidence for each finding is read off `best` (and the claim):
 *   layout_swapped: sin_layout / rope.layout; position_offset: offset;
 *   base_mismatch, frequency_formula: rope.base or base, formula;
 *   rotary_dim_mismatch: rope.rotary_dim, frequency_dim; head_dim_mismatch:
 *   rope.head_dim; scaling_mismatch: rope.scaling; attention_factor:
 *   attention_factor; embed_scale; low_precision: precision; alibi_slopes:
 *   slopes (+ slopes_differ); alibi_form: alibi_form, alibi_sign;
 *   t5_buckets: t5.num_buckets/max_distance/bidirectional;
 *   positions_mismatch: positions (n_positions of them), positions_pattern. */
typedef struct pe_dx_result {
    pe_dx_verdict verdict;
    pe_dx_errors claimed;     /* the subject against the claim */
    pe_dx_variant best;       /* explained: reproduces; else the closest */
    pe_dx_errors best_errors; /* the subject against best (exact angles) */
    pe_dx_errors explained;   /* the subject against best as judged: at its
                                 precision, with what that precision explains */
    size_t n_findings;
    pe_dx_finding findings[PE_DX_MAX_FINDINGS];
    double *slopes;                      /* owned: best.slopes when the search found its
                              own, else NULL */
    int64_t *positions;                  /* owned, [rows] or NULL: best.positions when
                              positions_mismatch recovered them */
    size_t n_positions;                  /* the subject's rows when positions is set */
    pe_dx_pattern positions_pattern;     /* positions_mismatch evidence: the
                                        pattern of every batch row that
                                        differs, when they share one */
    bool patterns_by_row;                /* those rows have different patterns
                                        (positions_pattern is then OTHER) */
    bool truncated;                      /* the budget ran out: the search stopped
                                        short (evidence.truncated) */
    bool *slopes_differ;                 /* owned, [heads]: alibi_slopes evidence */
    pe_rope_scaling dynamic_alternative; /* type DYNAMIC: the scaling that gives
                                            best's base from the claimed one at
                                            the subject's length and reproduces
                                            it too (scaling_mismatch evidence
                                            beside base_mismatch); else NONE */
    bool other_rule;                     /* positions_mismatch: best.positions3 are the
                                        claim's layout under the other mm_rule */
    bool triples_found;                  /* positions_mismatch: best.positions3 are
                                        triples read off the phases (held in
                                        positions, [rows][3]) */
} pe_dx_result;

/* Free what a result owns; accepts a zeroed result. */
void pe_dx_result_free(pe_dx_result *r);

/* The maximum error best leaves (evidence error_after): as judged at its
 * precision or at exact angles, whichever is the smaller (values rounded
 * to float16 may lie one unit off the emulated rounding yet within half a
 * unit of the exact values). */
double pe_dx_error_after(const pe_dx_result *r);

/* Diagnose. subject and claim as above (claim->rope.cache must be NULL).
 * Allocates scratch for the call (O(subject)); *out is written in full and
 * owns its slopes (free with pe_dx_result_free, also after an error).
 * Returns PE_OK, PE_ENOMEM, or PE_EINVAL (shapes the claim cannot have:
 * e.g. cols not a multiple of head_dim, a cache width that is neither
 * rotary_dim/2 nor rotary_dim, a T5 claim without a table or with another
 * head count, no positions, a position outside [0, 2^40], sizes that
 * overflow, a base or scaling pe_rope_frequencies refuses).
 * The claim's attention_factor is not read: it comes from its scaling.
 * Bounded time: O(subject x constant) - a fixed number of readings (<= 12),
 * candidate profiles (<= 640 of rotary_dim/2 frequencies), offsets (6),
 * T5 settings (<= 180 on 2*tokens samples) and full renders (<= ~16), and
 * phase lags (<= log2(tokens)); [4096][128] takes < 0.2 s on one core. */
pe_status pe_diagnose(const pe_dx_subject *subject, const pe_dx_variant *claim, pe_dx_tolerance tol,
                      pe_dx_result *out);

/* Diagnose a claim in more than one dimension (diagnose_nd.c): a
 * multimodal rope claim (claim->mrope and claim->positions3 set; subject
 * ROPE_ENCODED or ROPE_CACHE) or a rope2d claim (claim->rope2d.head_dim
 * and claim->coords set; subject ROPE_ENCODED). The variants tried, in
 * order, the first that reproduces the subject winning:
 *   mrope:  other_rule3 (the claim's layout under the other mm_rule, may
 *           be NULL: positions_mismatch, result->other_rule); every other
 *           style and section that fits (mrope_mismatch); every token as
 *           text (mrope_mismatch, style none, 1-D positions read from the
 *           phases by pe_diagnose, with what else it finds); on an encoded
 *           subject, triples read component by component off the phases
 *           of the slots the claim assigns to it (positions_mismatch,
 *           result->triples_found);
 *   rope2d: each other variant, at the claimed base and at the
 *           variants' own (rope2d_variant, base_mismatch).
 * Pointers in result->best are the claim's, other_rule3 or
 * result->positions. Returns as pe_diagnose. */
pe_status pe_diagnose_nd(const pe_dx_subject *subject, const pe_dx_variant *claim,
                         const int64_t *other_rule3, pe_dx_tolerance tol, pe_dx_result *out);

/* The subject a variant predicts, in the subject's shape (a then b for a
 * cache: out has 2*rows*cols floats; x is read from subject). Used by
 * pe_diagnose and useful to draw the error map under `best`. PE_EINVAL
 * (nothing written) for the shapes pe_diagnose refuses. */
pe_status pe_dx_render(const pe_dx_subject *subject, const pe_dx_variant *v, float *out);

/* The number of floats pe_dx_render writes for a subject (0 on overflow). */
size_t pe_dx_subject_size(const pe_dx_subject *subject);

#ifdef __cplusplus
}
#endif

#endif /* PE_DIAGNOSE_H */

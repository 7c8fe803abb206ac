/*
 * diagnose_common.h - what the diagnose*.c sources share; not public
 * (pe_diagnose.h is). Nothing here keeps state.
 */
#ifndef PE_DIAGNOSE_COMMON_H
#define PE_DIAGNOSE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "pe_diagnose.h"

#define DX_PI 3.14159265358979323846

/* Whether a derived parameter found equals the claimed one after float32
 * rounding: within a few float32 ulps of it (relative 2^-21), the slack of
 * a client's float32 arithmetic (an ALiBi slope from torch.pow, a base
 * read off float32 frequencies). */
bool pe_dx_float32_equal(double found, double want);

/* Shapes a subject can have under variant c, and sizes that fit: PE_OK or
 * PE_EINVAL (pe_diagnose's and pe_dx_render's first check). */
pe_status pe_dx_validate(const pe_dx_subject *s, const pe_dx_variant *c);

/* Angle wrapped into (-pi, pi]. */
double pe_dx_wrap(double a);

/* The subject against a prediction of the same size, with tolerance
 * atol + rtol*|want| + slack[e] (slack may be NULL for none). */
void pe_dx_compare(const float *got, const float *want, size_t n, pe_dx_tolerance tol,
                   const float *slack, pe_dx_errors *out);

/* True when every element is within tolerance. */
static inline bool dx_within(const pe_dx_errors *e)
{
    return e->mismatched == 0.0;
}

/* Largest |position| + 1 of the subject under an offset (seq_len for the
 * RoPE scalings that depend on it), and the position of row t. */
double pe_dx_seq_len(const pe_dx_subject *s, const int64_t *positions, int64_t offset);
int64_t pe_dx_position(const pe_dx_subject *s, const pe_dx_variant *v, size_t t);

/* Inverse frequencies of a rope variant into w[rotary_dim/2] (the variant's
 * own rope.base, scaling; seq_len from the subject) and the attention
 * factor the scaling implies. */
pe_status pe_dx_rope_freqs(const pe_dx_subject *s, const pe_dx_variant *v, double *w,
                           double *implied_factor);

/* This thread's CPU time in seconds. */
double pe_dx_cpu_seconds(void);

/* Whether the subject's search budget is spent (pe_diagnose set its
 * deadline; a subject without one never runs out). */
bool pe_dx_out_of_time(const pe_dx_subject *s);

/* llama3 scalings of factor f whose band reproduces the measured
 * frequencies m[half] at base and rotary width rd (diagnose_llama3.c):
 * low_freq_factor and high_freq_factor read off the band at the claim's
 * original context (and the claim's band at another context when that is
 * the same profile). Up to room into out; the count. */
size_t pe_dx_llama3_bands(const double *m, size_t half, double base, size_t rd, double f,
                          const pe_rope_scaling *claim, pe_rope_scaling *out, size_t room);

/* The dynamic NTK scaling (round factor and original context) that turns
 * the claimed base into best's at the subject's length and reproduces the
 * subject, when best is the claim with only its base changed and that
 * base is not round (diagnose_dynamic.c); *out type NONE otherwise. */
pe_status pe_dx_dynamic_alternative(const pe_dx_subject *s, const pe_dx_variant *c,
                                    const pe_dx_variant *b, pe_dx_tolerance tol,
                                    pe_rope_scaling *out);

/* Whether a half-precision values stage of v may also have rounded the
 * rotation itself: every value of the encoded subject is one of that
 * precision (a rotation handed back in its arrays' dtype, as MLX and JAX
 * do for float16/bfloat16 arrays; diagnose_render.c). */
bool pe_dx_output_in_precision(const pe_dx_subject *s, const pe_dx_variant *v);

/* ---- the angle core (diagnose_angles.c) ------------------------------- */

/* Phasors z[rows][pairs] (interleaved re, im) of one structural reading of
 * a subject: pair k belongs to in-head frequency k % half. */
typedef struct dx_phasors {
    size_t rows, pairs, half;
    double *z; /* owned: [rows][pairs][2] */
} dx_phasors;

/* Signed frequency per in-head pair, from the phase progression at lags
 * 1, 2, 4, ... between rows whose positions differ by the lag. Rows with no
 * such partner do not count; a pair with no signal gets 0. */
pe_status pe_dx_measure_freqs(const dx_phasors *ph, const int64_t *positions,
                              double *m /* [half] */);

/* The integer offset o that best aligns the phasors with angles
 * sign*w[i]*(p + o) (w precision-rounded by the caller), searched around
 * the estimate of the lowest frequency with a signal; and the coherence of
 * that fit in [0, 1] (1: a pure rotation at these frequencies). */
pe_status pe_dx_fit_offset(const dx_phasors *ph, const int64_t *positions, const double *w,
                           double sign, pe_dx_precision precision, int64_t *offset,
                           double *coherence);

/* Least-squares base from the high-frequency pairs of |m| (the first
 * quarter, at least two): |m_i| = a * base^(-2i/dim). Returns 0 when the
 * fit is not possible; *scale_out = a. */
double pe_dx_fit_base(const double *m, size_t half, size_t dim, double *scale_out);

/* The non-standard formula that makes `found` of the claimed base over
 * exponent width d (1e-9 relative), else PE_DX_FORMULA_STANDARD. */
pe_dx_formula pe_dx_formula_of(double claimed, double found, size_t d);

/* v rounded to `digits` significant decimal digits. */
double pe_dx_round_sig(double v, int digits);

/* max_i |(|m_i|) - round_P(w_i)| * span: the angle error a frequency profile
 * leaves over `span` positions. */
double pe_dx_profile_score(const double *m, const double *w, size_t half, pe_dx_precision precision,
                           double span);

/* Phasors of a subject read as variant v (not transposed; an encoded
 * table less v->embed_scale * x; rope: v's head, width, layout, sin/cos
 * order) and the signed frequency of each in-head pair into w (absolute:
 * cols/2, rope: rotary_dim/2; negative when v rotates by -theta). ph->z
 * is new (the caller frees it, also after an error). */
pe_status pe_dx_absolute_phasors(const pe_dx_subject *s, const pe_dx_variant *v, dx_phasors *ph,
                                 double *w);
pe_status pe_dx_rope_phasors(const pe_dx_subject *s, const pe_dx_variant *v, dx_phasors *ph,
                             double *w);

/* *ok: where a RoPE subject's phases drift from variant v's along lines
 * (angles computed finely), each pair's frequency is a number of v's
 * coarse precision (diagnose_drift.c). */
pe_status pe_dx_drift_within(const pe_dx_subject *s, const pe_dx_variant *v, bool *ok);

/* Each row's position from its phase: the lowest frequency with a signal
 * gives it within [-P/20, 19P/20) (P its period), every higher one refines
 * it; rounded, with out[t] the integer of the best coherence among the
 * rounding and its neighbours. *coherent: every row's coherence (sum of
 * Re(S_i e^{-i w_i p}) over sum |S_i|) is at least 0.8. A row without
 * any signal (every pair zero: a padding slot's zero vector) has no
 * position: out[t] = DX_NO_POSITION. */
#define DX_NO_POSITION INT64_MIN
pe_status pe_dx_phase_positions(const dx_phasors *ph, const double *w, int64_t *out,
                                bool *coherent);

/* positions_mismatch (diagnose_positions.c): the positions the phases of
 * the subject read as `base` show; when they differ from the claimed ones
 * (a constant shift: an offset), v is base with them (out->positions holds
 * them) and *explains says whether v reproduces the subject. */
pe_status pe_dx_try_positions(const pe_dx_subject *s, const pe_dx_variant *base,
                              pe_dx_tolerance tol, pe_dx_result *out, pe_dx_variant *v,
                              pe_dx_errors *e, bool *explains);

/* ---- per-kind searches; each fills *best with its closest variant ---- */

pe_status pe_dx_search_absolute(const pe_dx_subject *s, const pe_dx_variant *claim,
                                pe_dx_tolerance tol, pe_dx_variant *best);
/* rope: *alt is a second finalist (the roundest profile near the best
 * one), for subjects whose coarse angles blur the profile. */
pe_status pe_dx_search_rope(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_tolerance tol,
                            pe_dx_variant *best, pe_dx_variant *alt);
pe_status pe_dx_search_alibi(const pe_dx_subject *s, const pe_dx_variant *claim,
                             pe_dx_variant *best, double **slopes_out);
pe_status pe_dx_search_t5(const pe_dx_subject *s, const pe_dx_variant *claim, pe_dx_variant *best);

/* ---- significance (diagnose_significance.c) ---------------------------- */

/* The subject against v as judged (*e), and whether v explains it:
 * within tolerance, and at bfloat16/float16 (either stage) clearly closer to the
 * emulation than to the exact values. */
pe_status pe_dx_judge(const pe_dx_subject *s, const pe_dx_variant *v, pe_dx_tolerance tol,
                      pe_dx_errors *e, bool *explains);

/* Whether errors e explain (within) or partly explain (max error cut at
 * least tenfold) against the claim's. */
bool pe_dx_significant(const pe_dx_errors *claimed, const pe_dx_errors *e);

/* Drop every difference of *v from claim c that *v does not need: one
 * whose removal keeps it explaining (explains) or within twice its error
 * (a partial explanation). *e follows *v. */
pe_status pe_dx_simplify(const pe_dx_subject *s, const pe_dx_variant *c, pe_dx_tolerance tol,
                         bool explains, pe_dx_variant *v, pe_dx_errors *e);

/* Findings: the differences between claim and best, with messages. */
void pe_dx_findings(const pe_dx_subject *s, const pe_dx_variant *claim, const pe_dx_result *r,
                    pe_dx_finding *out, size_t *n);

/* pe_dx_render, also writing the slack the variant's precision explains
 * per element (slack may be NULL). */
pe_status pe_dx_render_slack(const pe_dx_subject *s, const pe_dx_variant *v, float *out,
                             float *slack);

/* Render and compare a variant: errors of the subject against it, with the
 * slack its precision explains. Allocates the prediction for the call. */
pe_status pe_dx_evaluate(const pe_dx_subject *s, const pe_dx_variant *v, pe_dx_tolerance tol,
                         pe_dx_errors *out);

/* pe_dx_evaluate, refuted cheaply when it can be: the first rows alone are
 * compared first, and only when they match is the whole compared. *full
 * says which errors *out holds (a probe's are a lower bound). */
pe_status pe_dx_evaluate_fast(const pe_dx_subject *s, const pe_dx_variant *v, pe_dx_tolerance tol,
                              pe_dx_errors *out, bool *full);

#endif /* PE_DIAGNOSE_COMMON_H */

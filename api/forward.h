/*
 * forward.h - the one attention forward pass of posenc (contract 1.2, "One
 * computation, one place"): what /apply answers, and what /diagnose
 * compares a q/k/v subject against, for every model posenc serves (the
 * built-in one, inline models, every loaded architecture).
 *
 *   z   = norm(embed_norm(embed_scale*x + PE + input_bias))  (attention_input)
 *   pre = [q | k | v] = project(z)        fused sgemm, or MLA's projections,
 *         then the q/k norms that come before the rotation (Qwen3, OLMo 2, Gemma 3)
 *   qkv = post_rope(rotate(pre))          rope (MLA: its rope channels only),
 *         then Llama 4's L2 norm and attention temperature
 *   bias, scores                          alibi/t5 bias, scale, soft cap, masks
 *   gate = z.w_gate + b_gate              gated attention, only when asked for
 *
 * Two steps, like every endpoint: forward_plan_init makes every check and
 * size before any allocation (the caller then reserves the budget), and
 * forward_run does the arithmetic, failing only for memory or a
 * non-finite input encoding.
 */
#ifndef FORWARD_H
#define FORWARD_H

#include <stdbool.h>
#include <stddef.h>

#include "api_error.h"
#include "relative.h"
#include "request.h"

/* Everything the pass will compute, decided before any arithmetic. */
typedef struct forward_plan {
    size_t rows;        /* batch * tokens */
    size_t qd, kvd, vd; /* widths of q, k and v in a row of qkv */
    size_t width;       /* qd + kvd + vd: a row of qkv */
    bool need_bias;     /* bias or scores asked for */
    bool need_scores;   /* scores asked for */
    bool need_gate;     /* the gate asked for (gated attention) */
    size_t per_row;     /* floats of bias (and of scores) per batch row */
    pe_absolute pe;     /* holds a table-cache reference (forward_plan_free) */
    rope_plan rope;     /* owns its frequencies; set for a rope scheme */
    bias_plan bias;     /* alibi, t5 */
    double score_scale; /* multiplies q.k */
    size_t rot_offset;  /* the rotation acts on channels [rot_offset, */
    size_t rot_width;   /*  rot_offset + rot_width) of every head_dim head */
} forward_plan;

/* The pass's arrays, each owned (NULL when not computed). */
typedef struct forward_result {
    float *z;      /* [rows][d_model] */
    float *pre;    /* [rows][width]: q|k|v as the rotation sees them (keep_pre
                      only): rotating its q and k gives qkv's (forward.c post_rope) */
    float *qkv;    /* [rows][width]: q|k|v as /apply returns them */
    float *bias;   /* [batch][heads][tokens][tokens] (need_bias) */
    float *scores; /* [batch][heads][tokens][tokens] (need_scores) */
    float *gate;   /* [rows][heads*head_dim] (need_gate) */
} forward_result;

/* Check the request against its model and plan the pass: d_model, t5's
 * table, a gate asked of a model without one, output sizes against the
 * caps, the absolute table, the rope and the bias. On failure *err says why; forward_plan_free(p) is due either
 * way (p must start zeroed). */
int forward_plan_init(const api_service *svc, const request *rq, bool need_bias, bool need_scores,
                      forward_plan *p, api_error *err);
void forward_plan_free(forward_plan *p);

/* Bytes forward_run will allocate (for the memory budget). */
size_t forward_work_bytes(const request *rq, const forward_plan *p, bool keep_pre);

/* Run the pass into *r (which must start zeroed; forward_result_free(r)
 * is due either way). keep_pre also keeps q|k|v before the rotation, for
 * /diagnose's variant search. */
int forward_run(const request *rq, const forward_plan *p, bool keep_pre, forward_result *r,
                api_error *err);
void forward_result_free(forward_result *r);

#endif /* FORWARD_H */

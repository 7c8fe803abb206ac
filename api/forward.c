/*
 * forward.c - the one attention forward pass (forward.h): /apply and
 * /diagnose both run this code, so they cannot disagree.
 */
#include "forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"

/* The sizes of q, k, v and the scores, each checked against the caps. */
static int plan_sizes(const api_service *svc, const request *rq, forward_plan *p, api_error *err)
{
    const model *m = rq->model;
    size_t t = rq->tokens, n = 0;

    p->rows = request_rows(rq);
    p->qd = m->heads * m->head_dim;
    p->kvd = m->kv_heads * m->head_dim;
    p->vd = model_v_width(m); /* kvd but for MLA (DeepSeek) */
    p->width = p->qd + p->kvd + p->vd;
    if (mul_size(p->rows, p->width, &n))
        return api_fail(err, API_E_TOO_LARGE, NULL, "q, k and v would be too large");
    if (request_check_output(svc, n, "q, k and v", err))
        return -1;
    if (!p->need_bias)
        return 0;
    if (mul_size(m->heads, t, &p->per_row) || mul_size(p->per_row, t, &p->per_row) ||
        mul_size(p->per_row, rq->batch, &n))
        return api_fail(err, API_E_TOO_LARGE, NULL, "scores would be too large");
    return request_check_output(svc, n, "scores", err);
}

/* `return: ["gate"]` needs a gated model. */
static int gate_check(const request *rq, api_error *err)
{
    if (!rq->outputs.wanted[OUT_GATE] || rq->model->gated)
        return 0;
    for (size_t i = 0; i < rq->outputs.count; i++)
        if (rq->outputs.order[i] == OUT_GATE) {
            jpath at = jpath_index("return", i);
            return api_fail(err, API_E_INVALID_REQUEST, at.s,
                            "%s: model '%s' has no attention gate (weights.w_gate)", at.s,
                            rq->model->name);
        }
    return 0;
}

int forward_plan_init(const api_service *svc, const request *rq, bool need_bias, bool need_scores,
                      forward_plan *p, api_error *err)
{
    const model *m = rq->model;
    const scheme *s = &rq->scheme;

    if (rq->d != m->d_model)
        return api_fail(err, API_E_INVALID_SHAPE, "embeddings",
                        "embeddings have d = %zu but model '%s' has d_model %zu", rq->d, m->name,
                        m->d_model);
    if (t5_table_check(rq, err) || gate_check(rq, err))
        return -1;
    p->need_bias = need_bias || need_scores;
    p->need_scores = need_scores;
    p->need_gate = rq->outputs.wanted[OUT_GATE];
    if (plan_sizes(svc, rq, p, err) || absolute_plan(svc, rq, &p->pe, err))
        return -1;
    /* MLA rotates the last rope_dim channels of each head (model_mla_rotate) */
    if (s->kind == SCHEME_ROPE2D)
        return api_fail(err, API_E_INVALID_SHAPE, "scheme",
                        "scheme rope2d (vision encoders' 2-D rope) is an /encode scheme: /apply "
                        "serves text attention layers");
    if (m->mla && rq->positions_nd)
        return api_fail(err, API_E_INVALID_REQUEST, "params.mrope",
                        "model '%s' uses multi-head latent attention, which has no multimodal "
                        "rope",
                        m->name);
    p->rot_offset = m->mla ? m->mla_w.nope_dim : 0;
    p->rot_width = m->mla ? m->mla_w.rope_dim : m->head_dim;
    if (s->kind == SCHEME_ROPE &&
        rope_plan_init(svc, rq, m->heads * p->rot_width, p->rot_width, &p->rope, err))
        return -1;
    if (p->need_bias && (s->kind == SCHEME_ALIBI || s->kind == SCHEME_T5) &&
        relative_plan(svc, rq, m->heads, &p->bias, err))
        return -1;
    p->score_scale = s->has_score_scale     ? s->score_scale
                     : s->kind == SCHEME_T5 ? 1.0
                                            : 1.0 / sqrt((double)m->head_dim);
    return 0;
}

void forward_plan_free(forward_plan *p)
{
    rope_plan_free(&p->rope);
    pe_cache_release(p->pe.cache);
    p->pe.cache = NULL;
}

size_t forward_work_bytes(const request *rq, const forward_plan *p, bool keep_pre)
{
    size_t qkv = p->rows * p->width * sizeof(float);
    size_t square = p->need_bias ? p->per_row * rq->batch * sizeof(float) : 0;

    size_t gate = p->need_gate ? p->rows * p->qd * sizeof(float) : 0;

    return p->rows * rq->d * sizeof(float) + qkv * (keep_pre ? 2 : 1) +
           square * (p->need_scores ? 2 : 1) + p->rows * sizeof(int64_t) + gate;
}

/* z = norm(embed_norm(embed_scale*x + PE + input_bias)), rounded to
 * float32 once, straight from the decoded input. */
static int attention_input(const request *rq, const forward_plan *p, float *z, api_error *err)
{
    const model *m = rq->model;
    pe_norm norm = {.kind = m->norm,
                    .eps = m->norm_eps,
                    .weight = m->weights[W_NORM_WEIGHT].data,
                    .bias = m->weights[W_NORM_BIAS].data};
    pe_norm embed_norm = {.kind = m->embed_norm,
                          .eps = m->embed_norm_eps,
                          .weight = m->weights[W_EMBED_NORM_WEIGHT].data,
                          .bias = m->weights[W_EMBED_NORM_BIAS].data};
    size_t bad = 0;

    /* embed_scale applies to the absolute schemes only */
    pe_input in = {.pe = &p->pe,
                   .embed_scale = p->pe.kind == PE_ABS_NONE ? 1.0 : rq->embed_scale,
                   .add = m->weights[W_INPUT_BIAS].data,
                   .pre_norm = &embed_norm,
                   .norm = &norm};
    pe_status st = pe_encode_input(&in, rq->x.data, rq->positions, p->rows, rq->d, z, &bad);
    return st == PE_OK ? 0 : absolute_fail(rq, &p->pe, st, bad, "encoded (z)", err);
}

/* q and k rotated in place: the whole of each head, or MLA's rope part. */
static void rotate(const request *rq, const forward_plan *p, float *qkv)
{
    const model *m = rq->model;
    const rope_plan *rp = &p->rope;

    if (rq->positions_nd) {
        pe_mrope_apply(&rp->rope, &rq->scheme.mrope, rp->inv_freq, rp->attention_factor,
                       rq->positions_nd, p->rows, p->qd, qkv, p->width, qkv, p->width);
        pe_mrope_apply(&rp->rope, &rq->scheme.mrope, rp->inv_freq, rp->attention_factor,
                       rq->positions_nd, p->rows, p->kvd, qkv + p->qd, p->width, qkv + p->qd,
                       p->width);
        return;
    }
    if (m->mla) {
        model_mla_rotate(m, &rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows,
                         qkv);
        return;
    }
    pe_rope_apply(&rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows, p->qd, qkv,
                  p->width, qkv, p->width);
    pe_rope_apply(&rp->rope, rp->inv_freq, rp->attention_factor, rq->positions, p->rows, p->kvd,
                  qkv + p->qd, p->width, qkv + p->qd, p->width);
}

/* What comes after the rotation (Llama 4), on qkv and, when kept, on pre:
 * a weightless per-head RMS norm and a per-token factor both commute with
 * a rotation (it keeps each head's norm), so rotating pre then gives qkv.
 * A weighted norm (HunYuan's) does not: /diagnose does not search such
 * models' q/k.
 * The attention temperature is read off each token's slot in its row
 * (Hugging Face's cache_position, contract 1.2), not off its position id:
 * they differ in a padded row. An `offset` stands for that many cached
 * tokens before the row (cache_position = offset + slot, as the position
 * ids are); explicit positions or a mask leave the slot alone. */
static int post_rope(const request *rq, const forward_plan *p, float *qkv, float *pre,
                     api_error *err)
{
    const model *m = rq->model;
    int64_t *slots = NULL; /* owned: [rows], the slot index of every row */

    if (m->attn_temperature) {
        slots = malloc(p->rows * sizeof *slots);
        if (!slots)
            return api_fail_oom(err);
        bool cached = rq->pos_field && strcmp(rq->pos_field, "offset") == 0;
        for (size_t r = 0; r < p->rows; r++)
            slots[r] = cached ? rq->positions[r] : (int64_t)(r % rq->tokens);
    }
    model_apply_post_rope(m, p->rows, slots, qkv);
    if (pre)
        model_apply_post_rope(m, p->rows, slots, pre);
    free(slots);
    /* Mistral's query scale reads the position ids (position_ids in HF) */
    model_apply_q_scale(m, p->rows, rq->positions, qkv, p->width);
    if (pre)
        model_apply_q_scale(m, p->rows, rq->positions, pre, p->width);
    return 0;
}

/* bias and scores of every batch row, masked as the request says. */
static int bias_and_scores(const request *rq, const forward_plan *p, forward_result *r,
                           api_error *err)
{
    const model *m = rq->model;
    size_t t = rq->tokens;

    r->bias = calloc(p->per_row * rq->batch, sizeof *r->bias);
    if (!r->bias)
        return api_fail_oom(err);
    if (rq->scheme.kind == SCHEME_ALIBI || rq->scheme.kind == SCHEME_T5)
        relative_fill(rq, &p->bias, r->bias);
    relative_mask_keys(rq, m->heads, r->bias);
    if (!p->need_scores)
        return 0;
    r->scores = malloc(p->per_row * rq->batch * sizeof *r->scores);
    if (!r->scores)
        return api_fail_oom(err);
    for (size_t b = 0; b < rq->batch; b++) {
        const float *q = r->qkv + b * t * p->width;
        float *bias = r->bias + b * p->per_row, *scores = r->scores + b * p->per_row;
        /* Gemma 2: the soft cap goes on the scaled scores, before the bias */
        bool capped = m->score_softcap > 0.0;
        pe_attention_scores(q, p->width, q + p->qd, p->width, t, m->heads, m->kv_heads, m->head_dim,
                            p->score_scale, capped ? NULL : bias, scores);
        if (capped)
            pe_softcap_scores(scores, bias, p->per_row, m->score_softcap);
    }
    /* a masked key's score is the mask's value itself, not value + mask */
    relative_mask_keys(rq, m->heads, r->scores);
    return 0;
}

int forward_run(const request *rq, const forward_plan *p, bool keep_pre, forward_result *r,
                api_error *err)
{
    const model *m = rq->model;
    size_t qkv_bytes = p->rows * p->width * sizeof(float);

    r->z = malloc(p->rows * rq->d * sizeof *r->z);
    r->qkv = malloc(qkv_bytes);
    if (!r->z || !r->qkv || (keep_pre && !(r->pre = malloc(qkv_bytes))))
        return api_fail_oom(err);
    if (attention_input(rq, p, r->z, err))
        return -1;
    if (model_project(m, r->z, p->rows, r->qkv))
        return api_fail_oom(err);
    if (p->need_gate) { /* only when asked: the default pass stays one product */
        r->gate = malloc(p->rows * p->qd * sizeof *r->gate);
        if (!r->gate)
            return api_fail_oom(err);
        model_project_gate(m, r->z, p->rows, r->gate);
    }
    model_apply_qk_norm(m, p->rows, r->qkv); /* Qwen3, OLMo 2, Gemma 3: before the rotation */
    if (keep_pre)
        memcpy(r->pre, r->qkv, qkv_bytes);
    if (rq->scheme.kind == SCHEME_ROPE)
        rotate(rq, p, r->qkv);
    if (post_rope(rq, p, r->qkv, r->pre, err))
        return -1;
    return p->need_bias ? bias_and_scores(rq, p, r, err) : 0;
}

void forward_result_free(forward_result *r)
{
    free(r->z);
    free(r->pre);
    free(r->qkv);
    free(r->bias);
    free(r->scores);
    free(r->gate);
    memset(r, 0, sizeof *r);
}

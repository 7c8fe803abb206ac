/*
 * relative.c - RoPE set-up and ALiBi/T5 biases for a request.
 */
#include "relative.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *model_label(const request *rq)
{
    return rq->model ? rq->model->name : "the request (no model)";
}

int t5_table_check(const request *rq, api_error *err)
{
    const tensor *table = rq->model ? &rq->model->weights[W_T5_BIAS] : NULL;

    if (rq->scheme.kind != SCHEME_T5 || (table && table->data))
        return 0;
    if (rq->model)
        return api_fail(err, API_E_MISSING_WEIGHT, "model",
                        "scheme t5 needs weights.t5_bias, which model '%s' lacks", rq->model->name);
    return api_fail(err, API_E_MISSING_WEIGHT, "model",
                    "scheme t5 needs weights.t5_bias, which %s lacks", model_label(rq));
}

int absolute_plan(const api_service *svc, const request *rq, pe_absolute *pe, api_error *err)
{
    *pe = (pe_absolute){.kind = PE_ABS_NONE};
    if (rq->scheme.kind == SCHEME_SINUSOIDAL) {
        *pe = (pe_absolute){.kind = PE_ABS_SINUSOIDAL,
                            .base = rq->scheme.base,
                            .layout = rq->scheme.sin_layout};
        pe->cache = pe_cache_sinusoidal(svc->pe_cache, pe->base, pe->layout, rq->d,
                                        &pe->cache_rows);
    } else if (rq->scheme.kind == SCHEME_LEARNED) {
        const tensor *table = rq->model ? &rq->model->weights[W_POSITION_TABLE] : NULL;
        if (!table || !table->data)
            return api_fail(err, API_E_MISSING_WEIGHT, "model",
                            "scheme learned needs weights.position_table, which %s lacks",
                            model_label(rq));
        if (table->dim[1] != rq->d)
            return api_fail(err, API_E_INVALID_SHAPE, rq->x.data ? "embeddings" : "shape",
                            "position_table has width %zu but the input has d = %zu", table->dim[1],
                            rq->d);
        *pe = (pe_absolute){.kind = PE_ABS_LEARNED,
                            .table = table->data,
                            .table_rows = table->dim[0]};
        /* checked here, before any arithmetic, not by the kernel */
        for (size_t i = 0; i < request_rows(rq); i++)
            if (rq->positions[i] < 0 || (uint64_t)rq->positions[i] >= pe->table_rows)
                return absolute_fail(rq, pe, PE_ERANGE, i, "", err);
    }
    return 0;
}

int absolute_fail(const request *rq, const pe_absolute *pe, pe_status st, size_t bad,
                  const char *what, api_error *err)
{
    if (st == PE_ERANGE)
        return api_fail(err, API_E_OUT_OF_RANGE, rq->pos_field,
                        "position %lld (row %zu) is at or beyond the learned table's "
                        "max_positions %zu",
                        (long long)rq->positions[bad], bad, pe->table_rows);
    if (st == PE_ENONFINITE)
        return api_fail(err, API_E_NON_FINITE, NULL,
                        "result %s element %zu is not a finite float32 (the computation "
                        "overflows)",
                        what, bad);
    return api_fail_oom(err);
}

/* params.mrope.section that does not fit rotary_dim/2 (or an ernie
 * section with s_h != s_w). */
static int mrope_fail(const scheme *s, size_t rotary, api_error *err)
{
    const size_t *sec = s->mrope.section;

    if (s->mrope.style == PE_MROPE_ERNIE && sec[1] != sec[2])
        return api_fail(err, API_E_INVALID_SHAPE, "params.mrope.section",
                        "params.mrope.section [%zu, %zu, %zu]: the ernie style needs s_h == s_w",
                        sec[0], sec[1], sec[2]);
    return api_fail(err, API_E_INVALID_SHAPE, "params.mrope.section",
                    "params.mrope.section [%zu, %zu, %zu] must sum to rotary_dim/2 = %zu", sec[0],
                    sec[1], sec[2], rotary / 2);
}

int rope_plan_init(const api_service *svc, const request *rq, size_t width, size_t fixed_head_dim,
                   rope_plan *plan, api_error *err)
{
    const scheme *s = &rq->scheme;
    size_t head_dim, rotary;

    memset(plan, 0, sizeof *plan);
    if (fixed_head_dim) {
        if (s->head_dim && s->head_dim != fixed_head_dim)
            return api_fail(err, API_E_INVALID_SHAPE, "params.head_dim",
                            "params.head_dim %zu differs from the model's head_dim %zu",
                            s->head_dim, fixed_head_dim);
        head_dim = fixed_head_dim;
    } else if (s->head_dim) {
        head_dim = s->head_dim;
    } else if (rq->model && rq->model->head_dim <= width && width % rq->model->head_dim == 0) {
        head_dim = rq->model->head_dim;
    } else {
        head_dim = width;
    }
    if (width % head_dim != 0)
        return api_fail(err, API_E_INVALID_SHAPE, "params.head_dim",
                        "d = %zu is not a multiple of head_dim %zu", width, head_dim);
    if (s->rotary_dim)
        rotary = s->rotary_dim;
    else if (s->has_partial_rotary_factor && !s->rope_proportional) /* else the whole head */
        rotary = (size_t)((double)head_dim * s->partial_rotary_factor);
    else
        rotary = head_dim;
    if (rotary < 2 || rotary % 2 != 0 || rotary > head_dim)
        return api_fail(err, API_E_INVALID_SHAPE, "params.rotary_dim",
                        "rotary_dim %zu must be even and in [2, head_dim = %zu]", rotary, head_dim);
    plan->rope = (pe_rope){.base = s->base,
                           .head_dim = head_dim,
                           .rotary_dim = rotary,
                           .layout = s->rope_layout,
                           .scaling = s->scaling,
                           .proportional = s->rope_proportional,
                           .proportion = s->has_partial_rotary_factor ? s->partial_rotary_factor
                                                                      : 1.0};
    if (s->scaling.type == PE_ROPE_SCALING_DYNAMIC && rotary == 2)
        return api_fail(err, API_E_INVALID_SHAPE, "params.rotary_dim",
                        "dynamic scaling needs rotary_dim > 2");
    if (s->scaling.type == PE_ROPE_SCALING_LONGROPE) {
        if (s->short_len != rotary / 2)
            return api_fail(err, API_E_INVALID_SHAPE, "params.scaling.short_factor",
                            "params.scaling.short_factor has %zu entries; rotary_dim/2 = %zu",
                            s->short_len, rotary / 2);
        if (s->long_len != rotary / 2)
            return api_fail(err, API_E_INVALID_SHAPE, "params.scaling.long_factor",
                            "params.scaling.long_factor has %zu entries; rotary_dim/2 = %zu",
                            s->long_len, rotary / 2);
    }
    if (pe_mrope_check(&s->mrope, rotary / 2) != PE_OK)
        return mrope_fail(s, rotary, err);
    plan->inv_freq = malloc(rotary / 2 * sizeof *plan->inv_freq);
    if (!plan->inv_freq)
        return api_fail_oom(err);
    if (pe_rope_frequencies(&plan->rope, (double)rq->max_position + 1.0, plan->inv_freq,
                            &plan->attention_factor) != PE_OK)
        return api_fail(err, API_E_INVALID_REQUEST, "params.scaling",
                        "params.scaling cannot be computed for rotary_dim %zu", rotary);
    plan->rope.cache = pe_cache_rope(svc->pe_cache, plan->inv_freq, rotary / 2,
                                     plan->attention_factor, &plan->rope.cache_rows);
    return 0;
}

void rope_plan_free(rope_plan *plan)
{
    if (!plan)
        return;
    free(plan->inv_freq);
    plan->inv_freq = NULL;
    pe_cache_release(plan->rope.cache);
    plan->rope.cache = NULL;
}

int relative_plan(const api_service *svc, const request *rq, size_t fixed_heads, bias_plan *plan,
                  api_error *err)
{
    const scheme *s = &rq->scheme;
    size_t heads, t = rq->tokens;

    memset(plan, 0, sizeof *plan);
    plan->kind = s->kind;
    if (s->kind == SCHEME_ALIBI) {
        if (fixed_heads && s->heads && s->heads != fixed_heads)
            return api_fail(err, API_E_INVALID_SHAPE, "params.heads",
                            "params.heads %zu differs from the model's %zu", s->heads, fixed_heads);
        heads = fixed_heads ? fixed_heads : s->heads ? s->heads : rq->model ? rq->model->heads : 0;
        if (!heads)
            return api_fail(err, API_E_INVALID_REQUEST, "params.heads",
                            "alibi needs params.heads (or a model)");
        plan->alibi_form = s->alibi_form;
        plan->alibi_rounding = s->alibi_rounding;
    } else {
        if (t5_table_check(rq, err)) /* after it, the model and its table are there */
            return -1;
        const tensor *table = &rq->model->weights[W_T5_BIAS];
        if (table->dim[0] != s->num_buckets)
            return api_fail(err, API_E_INVALID_SHAPE, "params.num_buckets",
                            "t5_bias has %zu buckets but params.num_buckets is %zu", table->dim[0],
                            s->num_buckets);
        heads = table->dim[1];
        if (fixed_heads && heads != fixed_heads)
            return api_fail(err, API_E_INVALID_SHAPE, "model",
                            "t5_bias has %zu heads but the model has %zu", heads, fixed_heads);
        plan->t5 = (pe_t5){.table = table->data,
                           .num_buckets = s->num_buckets,
                           .heads = heads,
                           .max_distance = s->max_distance,
                           .bidirectional = s->bidirectional};
    }
    if (mul_size(heads, t, &plan->per_row) || mul_size(plan->per_row, t, &plan->per_row) ||
        mul_size(plan->per_row, rq->batch, &plan->total))
        return api_fail(err, API_E_TOO_LARGE, NULL, "the bias would have too many elements");
    if (request_check_output(svc, plan->total, "bias", err))
        return -1;
    plan->heads = heads;
    return 0;
}

void relative_fill(const request *rq, const bias_plan *plan, float *bias)
{
    size_t t = rq->tokens;

    for (size_t b = 0; b < rq->batch; b++) {
        const int64_t *pos = rq->positions + b * t;
        if (plan->kind == SCHEME_ALIBI)
            pe_alibi_bias(plan->heads, plan->alibi_form, &plan->alibi_rounding, pos, t,
                          bias + b * plan->per_row);
        else
            pe_t5_bias(&plan->t5, pos, t, bias + b * plan->per_row);
    }
}

void relative_mask_keys(const request *rq, size_t heads, float *values)
{
    size_t t = rq->tokens;

    if (!rq->mask && !rq->causal)
        return;
    for (size_t b = 0; b < rq->batch; b++) {
        const uint8_t *mask = rq->mask ? rq->mask + b * t : NULL;
        for (size_t h = 0; h < heads; h++)
            for (size_t i = 0; i < t; i++) {
                float *row = values + ((b * heads + h) * t + i) * t;
                for (size_t j = 0; j < t; j++)
                    if (!request_key_visible(mask, rq->causal, i, j))
                        row[j] = RELATIVE_MASKED_KEY;
            }
    }
}

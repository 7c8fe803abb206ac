/*
 * diagnose_qkv.c - /diagnose for a q/k/v subject: posenc projects the
 * client's input with the model, then
 *   - v carries no position: if it differs, the projection differs
 *     (projection_mismatch, always unexplained);
 *   - under a rope claim, q and k are diagnosed as rotated vectors: x =
 *     posenc's q/k before rotation, a = the client's (pe_diagnose, kind
 *     ROPE_ENCODED). When that explains nothing, x permuted by the Meta <->
 *     Hugging Face permutation of the rotary dimensions is tried (either
 *     direction): if that explains it, the finding is weights_permuted;
 *   - under other claims q/k/v carry no rotation: any difference is a
 *     projection_mismatch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "json/array_writer.h"

enum { Q = 0, K = 1, V = 2 };

/* Everything computed for the answer; all buffers owned. */
typedef struct qkv_work {
    size_t rows, qd, kvd, width, cols[DX_ARRAYS];
    float *z, *qkv;         /* the attention input; [rows][width] before rotation */
    float *pre[DX_ARRAYS];  /* dense q, k, v before rotation */
    float *want[DX_ARRAYS]; /* the claim's q, k, v */
    pe_dx_errors claimed[DX_ARRAYS];
    pe_dx_result res[2]; /* q, k under rope */
    bool diagnosed[2], permuted[2];
    bool off[DX_ARRAYS]; /* differs before any rotation: projection_mismatch */
    float *permuted_x;   /* scratch for the permuted trial */
} qkv_work;

static void work_free(qkv_work *w)
{
    free(w->z);
    free(w->qkv);
    free(w->permuted_x);
    for (int i = 0; i < DX_ARRAYS; i++) {
        free(w->pre[i]);
        free(w->want[i]);
    }
    pe_dx_result_free(&w->res[0]);
    pe_dx_result_free(&w->res[1]);
}

/* Heads of a [rows][cols] array (head_dim wide) with a value outside tol. */
static void write_heads_differing(strbuf *sb, const float *got, const float *want, size_t rows,
                                  size_t cols, size_t head_dim, pe_dx_tolerance tol)
{
    size_t listed = 0;

    strbuf_putc(sb, '[');
    for (size_t h = 0; h < cols / head_dim; h++) {
        bool differs = false;
        for (size_t t = 0; t < rows && !differs; t++)
            for (size_t j = h * head_dim; j < (h + 1) * head_dim && !differs; j++) {
                double g = got[t * cols + j], wv = want[t * cols + j];
                differs = fabs(g - wv) > tol.atol + tol.rtol * fabs(wv);
            }
        if (differs)
            strbuf_printf(sb, "%s%zu", listed++ ? "," : "", h);
    }
    strbuf_putc(sb, ']');
}

/* Meta <-> HF permutation of the first `rotary` dims of every head:
 * to_hf moves Meta's pair (2i, 2i+1) to (i, i + rotary/2). */
static void permute_heads(const float *in, float *out, size_t rows, size_t cols, size_t head_dim,
                          size_t rotary, bool to_hf)
{
    memcpy(out, in, rows * cols * sizeof *out);
    for (size_t t = 0; t < rows; t++)
        for (size_t h = 0; h < cols / head_dim; h++) {
            const float *src = in + t * cols + h * head_dim;
            float *dst = out + t * cols + h * head_dim;
            for (size_t i = 0; i < rotary / 2; i++)
                for (size_t c = 0; c < 2; c++) {
                    if (to_hf)
                        dst[c * (rotary / 2) + i] = src[2 * i + c];
                    else
                        dst[2 * i + c] = src[c * (rotary / 2) + i];
                }
        }
}

/* z, the projection before rotation, and the claim's q/k/v. */
static int project(const api_service *svc, const diag_request *dr, const rope_plan *rope,
                   qkv_work *w, api_error *err)
{
    const request *rq = &dr->rq;
    const model *m = rq->model;
    pe_absolute pe;
    size_t bad = 0;
    int rc = -1;

    if (absolute_plan(svc, rq, &pe, err))
        return -1;
    w->z = malloc(w->rows * rq->d * sizeof *w->z);
    w->qkv = malloc(w->rows * w->width * sizeof *w->qkv);
    for (int i = 0; i < DX_ARRAYS; i++) {
        w->pre[i] = malloc(w->rows * w->cols[i] * sizeof(float));
        w->want[i] = malloc(w->rows * w->cols[i] * sizeof(float));
        if (!w->pre[i] || !w->want[i])
            goto oom;
    }
    if (!w->z || !w->qkv)
        goto oom;
    /* the input stage of /apply (apply.c attention_input) */
    pe_norm norm = {.kind = m->norm,
                    .eps = m->norm_eps,
                    .weight = m->weights[W_NORM_WEIGHT].data,
                    .bias = m->weights[W_NORM_BIAS].data};
    pe_norm embed_norm = {.kind = m->embed_norm,
                          .eps = m->embed_norm_eps,
                          .weight = m->weights[W_EMBED_NORM_WEIGHT].data,
                          .bias = m->weights[W_EMBED_NORM_BIAS].data};
    pe_input in = {.pe = &pe,
                   .embed_scale = pe.kind == PE_ABS_NONE ? 1.0 : rq->embed_scale,
                   .add = m->weights[W_INPUT_BIAS].data,
                   .pre_norm = &embed_norm,
                   .norm = &norm};
    pe_status st = pe_encode_input(&in, rq->x.data, rq->positions, w->rows, rq->d, w->z, &bad);
    if (st != PE_OK) {
        absolute_fail(rq, &pe, st, bad, "encoded (z)", err);
        goto done;
    }
    pe_project_qkv(&m->qkv, w->z, w->rows, w->qkv);
    size_t at[DX_ARRAYS] = {0, w->qd, w->qd + w->kvd};
    for (int i = 0; i < DX_ARRAYS; i++) {
        for (size_t t = 0; t < w->rows; t++)
            memcpy(w->pre[i] + t * w->cols[i], w->qkv + t * w->width + at[i],
                   w->cols[i] * sizeof(float));
        memcpy(w->want[i], w->pre[i], w->rows * w->cols[i] * sizeof(float));
    }
    if (rq->scheme.kind == SCHEME_ROPE)
        for (int i = Q; i <= K; i++)
            pe_rope_apply(&rope->rope, rope->inv_freq, rope->attention_factor, rq->positions,
                          w->rows, w->cols[i], w->pre[i], w->cols[i], w->want[i], w->cols[i]);
    rc = 0;
    goto done;
oom:
    api_fail_oom(err);
done:
    pe_cache_release(pe.cache);
    return rc;
}

/* pe_diagnose of the client's q (i = Q) or k against posenc's before
 * rotation; then the permuted trials when that explains nothing. */
static int diagnose_rotation(const diag_request *dr, const pe_dx_variant *claim, qkv_work *w, int i,
                             api_error *err)
{
    const request *rq = &dr->rq;
    pe_dx_subject subj = {.kind = PE_DX_SUBJ_ROPE_ENCODED,
                          .rows = w->rows,
                          .cols = w->cols[i],
                          .x = w->pre[i],
                          .a = dr->arr[i].data,
                          .positions = rq->positions};
    pe_status st = pe_diagnose(&subj, claim, dr->tol, &w->res[i]);
    if (st == PE_OK)
        diag_require_finite_best(&w->res[i]);

    w->diagnosed[i] = true;
    for (int to_hf = 1; st == PE_OK && w->res[i].verdict == PE_DX_UNEXPLAINED && to_hf >= 0;
         to_hf--) {
        pe_dx_result trial = {0};
        if (!w->permuted_x && !(w->permuted_x = malloc(w->rows * w->qd * sizeof(float))))
            return api_fail_oom(err);
        permute_heads(w->pre[i], w->permuted_x, w->rows, w->cols[i], claim->rope.head_dim,
                      claim->rope.rotary_dim, to_hf);
        subj.x = w->permuted_x;
        st = pe_diagnose(&subj, claim, dr->tol, &trial);
        if (st == PE_OK)
            diag_require_finite_best(&trial);
        if (st == PE_OK && trial.verdict != PE_DX_UNEXPLAINED) {
            pe_dx_result_free(&w->res[i]);
            w->res[i] = trial;
            w->permuted[i] = true;
        } else {
            pe_dx_result_free(&trial);
        }
    }
    if (st == PE_EINVAL)
        return api_fail(err, API_E_INVALID_SHAPE, dr->names[i],
                        "%s cannot be read under the claim (positions must lie in [0, 2^40])",
                        dr->names[i]);
    return st == PE_OK ? 0 : api_fail_oom(err);
}

static bool v_differs(const diag_request *dr, const qkv_work *w, int i)
{
    return dr->arr[i].data && w->claimed[i].mismatched > 0;
}

/* Whether a [rows][cols] differs from x before any rotation: a rotation
 * (with one constant factor) keeps |a_h| / |x_h| the same for every row
 * and head of head_dim. */
static bool norms_differ(const float *x, const float *a, size_t rows, size_t cols, size_t head_dim,
                         pe_dx_tolerance tol)
{
    double ratio = -1, slack = tol.atol * sqrt((double)head_dim);

    for (size_t t = 0; t < rows; t++)
        for (size_t h = 0; h < cols / head_dim; h++) {
            double nx = 0, na = 0;
            for (size_t j = h * head_dim; j < (h + 1) * head_dim; j++) {
                nx += (double)x[t * cols + j] * x[t * cols + j];
                na += (double)a[t * cols + j] * a[t * cols + j];
            }
            nx = sqrt(nx);
            na = sqrt(na);
            if (nx <= slack) {
                if (na > 2 * slack)
                    return true;
                continue;
            }
            if (ratio < 0)
                ratio = na / nx;
            else if (fabs(na / nx - ratio) > 1e-3 * ratio + slack / nx)
                return true;
        }
    return false;
}

/* Which arrays differ in their projection: v (it carries no position),
 * q/k under a claim without rotation, and q/k under rope when nothing
 * explains them and their head norms differ from posenc's. */
static void mark_projection(const diag_request *dr, qkv_work *w, bool rotation)
{
    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!rotation || i == V)
            w->off[i] = v_differs(dr, w, i);
        else
            w->off[i] = w->diagnosed[i] && w->res[i].verdict == PE_DX_UNEXPLAINED &&
                        !w->permuted[i] &&
                        norms_differ(w->pre[i], dr->arr[i].data, w->rows, w->cols[i],
                                     dr->rq.model->head_dim, dr->tol);
    }
}

static void write_findings(strbuf *sb, const diag_request *dr, const qkv_work *w, bool rotation,
                           bool projection)
{
    static const char *const names[] = {"q", "k", "v"};
    bool seen[PE_DX_CODE_COUNT] = {false}, first = true;
    const model *m = dr->rq.model;

    strbuf_puts(sb, ",\"findings\":[");
    if (projection) {
        char message[600] = "";
        for (int i = 0; i < DX_ARRAYS; i++)
            if (w->off[i]) {
                size_t used = strlen(message);
                snprintf(message + used, sizeof message - used,
                         "%s%s differs from posenc's projection (max error %.3g in %.3g%% of its "
                         "values) %s: the weights, norm or input differ, not the encoding.",
                         used ? " " : "", names[i], w->claimed[i].max_abs,
                         100 * w->claimed[i].mismatched,
                         i == V || !rotation ? "although it carries no position"
                                             : "before any rotation (its head norms differ)");
            }
        strbuf_puts(sb, "{\"code\":\"projection_mismatch\",\"message\":");
        strbuf_put_json_string(sb, message);
        strbuf_puts(sb, ",\"evidence\":{\"outputs\":[");
        bool any = false;
        for (int i = 0; i < DX_ARRAYS; i++)
            if (w->off[i]) {
                strbuf_printf(sb, "%s\"%s\"", any ? "," : "", names[i]);
                any = true;
            }
        strbuf_puts(sb, "],\"heads\":");
        int shown = w->off[V] ? V : w->off[Q] ? Q : K;
        write_heads_differing(sb, dr->arr[shown].data, w->want[shown], w->rows, w->cols[shown],
                              m->head_dim, dr->tol);
        strbuf_puts(sb, "}}");
        first = false;
    }
    if (rotation && (w->permuted[Q] || w->permuted[K])) {
        strbuf_printf(sb, "%s{\"code\":\"weights_permuted\",\"message\":", first ? "" : ",");
        strbuf_put_json_string(
            sb, w->permuted[Q] && w->permuted[K]
                    ? "q and k match once the rotary rows of Wq and Wk are permuted between the "
                      "Meta (pairs 2i, 2i+1) and Hugging Face (pairs i, i + rotary_dim/2) order: "
                      "the checkpoint's weights were converted for the other layout; convert them "
                      "(or use the rotation they were converted for)"
                : w->permuted[Q] ? "q matches once the rotary rows of Wq are permuted between "
                                   "the Meta and Hugging Face order"
                                 : "k matches once the rotary rows of Wk are permuted between "
                                   "the Meta and Hugging Face order");
        strbuf_puts(sb, ",\"evidence\":{}}");
        first = false;
    }
    for (int i = Q; rotation && i <= K; i++) {
        if (!w->diagnosed[i])
            continue;
        char prefix[8];
        snprintf(prefix, sizeof prefix, "%s: ", names[i]);
        for (size_t f = 0; f < w->res[i].n_findings; f++) {
            pe_dx_code code = w->res[i].findings[f].code;
            if (seen[code])
                continue;
            seen[code] = true;
            strbuf_puts(sb, first ? "" : ",");
            diag_write_finding(sb, &w->res[i], f, SCHEME_ROPE, 0, prefix);
            first = false;
        }
    }
    strbuf_putc(sb, ']');
}

static void write_error_maps(strbuf *sb, const diag_request *dr, const qkv_work *w)
{
    bool first = true;

    strbuf_puts(sb, ",\"error_map\":{");
    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!dr->arr[i].data)
            continue;
        size_t n = w->rows * w->cols[i];
        /* the claim's buffer becomes the map: it is not read again */
        for (size_t j = 0; j < n; j++)
            w->want[i][j] = fabsf(dr->arr[i].data[j] - w->want[i][j]);
        array_view v = array_dense(w->want[i], dr->arr[i].ndim, dr->arr[i].dim);
        strbuf_puts(sb, first ? "" : ",");
        array_write(sb, dr->names[i], &v, dr->rq.base64);
        first = false;
    }
    strbuf_putc(sb, '}');
}

static void write_answer(strbuf *sb, const diag_request *dr, const pe_dx_variant *claim,
                         qkv_work *w)
{
    const request *rq = &dr->rq;
    scheme_kind kind = rq->scheme.kind;
    bool rotation = kind == SCHEME_ROPE;
    mark_projection(dr, w, rotation);
    bool projection = w->off[Q] || w->off[K] || w->off[V];
    pe_dx_verdict verdict = PE_DX_MATCH;
    int worst = -1, from = w->diagnosed[Q] ? Q : K;
    double total = 0, bad = 0, best_abs = 0, best_rel = 0;

    for (int i = 0; i < DX_ARRAYS; i++) {
        if (!dr->arr[i].data)
            continue;
        if (worst < 0 || w->claimed[i].max_abs > w->claimed[worst].max_abs)
            worst = i;
        double n = (double)(w->rows * w->cols[i]);
        total += n;
        bad += n * w->claimed[i].mismatched;
        const pe_dx_errors *be = rotation && i != V ? &w->res[i].best_errors : &w->claimed[i];
        best_abs = fmax(best_abs, be->max_abs);
        best_rel = fmax(best_rel, be->max_rel);
        if (rotation && i != V && w->res[i].verdict > verdict)
            verdict = w->res[i].verdict;
        /* a permutation is structural: never a match */
        if (rotation && i != V && w->permuted[i] && verdict == PE_DX_MATCH)
            verdict = PE_DX_EXPLAINED;
        if ((!rotation || i == V) && w->claimed[i].mismatched > 0)
            verdict = PE_DX_UNEXPLAINED;
    }
    if (projection)
        verdict = PE_DX_UNEXPLAINED;
    pe_dx_errors all = w->claimed[worst];
    all.mismatched = total > 0 ? bad / total : 0;
    size_t index[2];
    diag_unflatten(all.worst, 2, dr->arr[worst].dim, index);

    strbuf_puts(sb, "{\"verdict\":");
    strbuf_put_json_string(sb, pe_dx_verdict_name(verdict));
    strbuf_putc(sb, ',');
    diag_write_claimed(sb, kind, claim, 0, &all, dr->names[worst], index, 2);
    write_findings(sb, dr, w, rotation, projection);
    /* best: an /apply request with the same model */
    const pe_dx_variant *best = rotation && w->diagnosed[from] ? &w->res[from].best : claim;
    strbuf_puts(sb, ",\"best\":{\"model\":");
    if (rq->owned_model) /* an inline model: the client sends it again */
        strbuf_puts(sb, "null");
    else
        strbuf_put_json_string(sb, rq->model->name);
    strbuf_puts(sb, ",\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[kind]);
    strbuf_puts(sb, ",\"params\":");
    diag_write_params(sb, kind, best, 0);
    strbuf_putc(sb, ',');
    diag_write_best_positions(sb, rq->positions, rq->tokens, best->offset);
    if (scheme_is_absolute(kind)) {
        strbuf_puts(sb, ",\"embed_scale\":");
        diag_put_double(sb, rq->embed_scale);
    }
    strbuf_puts(sb, ",\"max_abs_error\":");
    diag_put_float(sb, best_abs);
    strbuf_puts(sb, ",\"max_rel_error\":");
    diag_put_float(sb, best_rel);
    strbuf_putc(sb, '}');
}

int diag_diagnose_qkv(const api_service *svc, diag_request *dr, strbuf *sb, api_error *err)
{
    static const char *const names[] = {"q", "k", "v"};
    const request *rq = &dr->rq;
    const model *m = rq->model;
    qkv_work w = {0};
    rope_plan rope = {0};
    pe_dx_variant claim;
    int rc = -1;

    if (rq->batched || rq->d != m->d_model) {
        api_fail(err, API_E_INVALID_SHAPE, "embeddings",
                 "the input must be [tokens][d_model = %zu] for model '%s'", m->d_model, m->name);
        goto done;
    }
    w.rows = rq->tokens;
    w.qd = m->heads * m->head_dim;
    w.kvd = m->kv_heads * m->head_dim;
    w.width = w.qd + 2 * w.kvd;
    w.cols[Q] = w.qd;
    w.cols[K] = w.cols[V] = w.kvd;
    size_t n;
    if (mul_size(w.rows, w.width, &n) || request_check_output(svc, n, "q, k and v", err))
        goto done;
    for (int i = 0; i < DX_ARRAYS; i++)
        if (dr->arr[i].data && (dr->arr[i].dim[0] != w.rows || dr->arr[i].dim[1] != w.cols[i])) {
            api_fail(err, API_E_INVALID_SHAPE, names[i],
                     "%s must be [%zu][%zu] for this input and model '%s', not [%zu][%zu]",
                     names[i], w.rows, w.cols[i], m->name, dr->arr[i].dim[0], dr->arr[i].dim[1]);
            goto done;
        }
    if (rq->scheme.kind == SCHEME_ROPE) {
        if (diag_claim(svc, dr, w.qd, m->head_dim, &claim, &rope, err))
            goto done;
    } else {
        pe_dx_variant_init(&claim);
        claim.base = rq->scheme.base;
        claim.sin_layout = rq->scheme.sin_layout;
        claim.embed_scale = rq->embed_scale;
    }
    if (project(svc, dr, &rope, &w, err))
        goto done;
    for (int i = 0; i < DX_ARRAYS; i++)
        if (dr->arr[i].data)
            w.claimed[i] = diag_compare(dr->arr[i].data, w.want[i], w.rows * w.cols[i], dr->tol);
    for (int i = Q; rq->scheme.kind == SCHEME_ROPE && i <= K; i++)
        if (dr->arr[i].data && diagnose_rotation(dr, &claim, &w, i, err))
            goto done;
    write_answer(sb, dr, &claim, &w);
    if (dr->return_map)
        write_error_maps(sb, dr, &w);
    strbuf_putc(sb, '}');
    rc = 0;
done:
    work_free(&w);
    rope_plan_free(&rope);
    return rc;
}

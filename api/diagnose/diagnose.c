/*
 * diagnose.c - POST /diagnose: what is wrong with an encoding a client
 * computed (contract "POST /diagnose").
 *
 *   decode (diagnose_decode.c) -> plan: the claim and the subject as
 *   pe_diagnose reads them, every check and the output caps -> the search
 *   (lib/diagnose/pe_diagnose.h) -> the answer (diagnose_write.c).
 *
 * Response: {"verdict", "claimed", "findings", "best", ["error_map"]}.
 * q/k/v subjects take their own path (diagnose_qkv.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "diagnose_batch.h"
#include "diagnose_compare.h"
#include "diagnose_decode.h"
#include "diagnose_learned.h"
#include "diagnose_nd.h"
#include "diagnose_qkv.h"
#include "diagnose_write.h"
#include "json/array_writer.h"

/* Which claim schemes each subject can be read under. */
static int check_scheme(const diag_request *dr, pe_dx_kind *kind, api_error *err)
{
    scheme_kind s = dr->rq.scheme.kind;
    const char *want = NULL;

    switch (dr->kind) {
    case DX_TABLE:
        *kind = PE_DX_SUBJ_TABLE;
        want = s == SCHEME_SINUSOIDAL
                   ? NULL
                   : "a table subject is read under a sinusoidal or learned claim";
        break;
    case DX_ENCODED:
        *kind = s == SCHEME_ROPE || s == SCHEME_ROPE2D ? PE_DX_SUBJ_ROPE_ENCODED
                                                       : PE_DX_SUBJ_ABS_ENCODED;
        want = s == SCHEME_SINUSOIDAL || s == SCHEME_ROPE || s == SCHEME_ROPE2D
                   ? NULL
                   : "an encoded subject is read under a sinusoidal, learned, rope or rope2d "
                     "claim";
        break;
    case DX_CACHE:
        *kind = PE_DX_SUBJ_ROPE_CACHE;
        want = s == SCHEME_ROPE ? NULL : "a cos/sin subject is read under a rope claim";
        break;
    case DX_BIAS:
        *kind = s == SCHEME_T5 ? PE_DX_SUBJ_T5_BIAS : PE_DX_SUBJ_ALIBI_BIAS;
        want = s == SCHEME_ALIBI || s == SCHEME_T5
                   ? NULL
                   : "a bias subject is read under an alibi or t5 claim";
        break;
    case DX_SLOPES:
        *kind = PE_DX_SUBJ_ALIBI_SLOPES;
        want = s == SCHEME_ALIBI ? NULL : "a slopes subject is read under an alibi claim";
        break;
    case DX_QKV:
        break;
    }
    if (want)
        return api_fail(err, API_E_INVALID_REQUEST, "scheme", "%s, not %s", want, scheme_names[s]);
    return 0;
}

/* The claim's head count against the subject's (alibi, t5). */
static int check_heads(const diag_request *dr, const pe_dx_variant *claim, size_t heads,
                       api_error *err)
{
    const scheme *s = &dr->rq.scheme;

    if (s->kind == SCHEME_ALIBI && s->heads && s->heads != heads)
        return api_fail(err, API_E_INVALID_SHAPE, "params.heads",
                        "params.heads is %zu but the subject has %zu heads", s->heads, heads);
    if (s->kind == SCHEME_T5 && claim->t5.heads != heads)
        return api_fail(err, API_E_INVALID_SHAPE, dr->names[0],
                        "the model's t5_bias has %zu heads but the subject has %zu",
                        claim->t5.heads, heads);
    return 0;
}

/* The 422 of a subject the claim cannot read (pe_diagnose's PE_EINVAL). */
static int unreadable(const diag_request *dr, api_error *err)
{
    return api_fail(err, API_E_INVALID_SHAPE, dr->names[0],
                    "%s cannot be read under the claim (its width must fit head_dim and "
                    "rotary_dim, its heads the claim's, its positions [0, 2^40])",
                    dr->names[0]);
}

/* render(claim) into map[n], checked as /encode checks its result
 * (diag_check_claim_finite, each of a cache's two arrays), then turned into
 * the error map |subject - render(claim)|. */
static int render_claim_checked(const diag_request *dr, const pe_dx_subject *subj,
                                const pe_dx_variant *claim, size_t n, float *map, api_error *err)
{
    size_t half = dr->kind == DX_CACHE ? n / 2 : n;

    pe_status st = pe_dx_render(subj, claim, map);
    if (st == PE_EINVAL)
        return unreadable(dr, err);
    if (st != PE_OK)
        return api_fail_oom(err);
    for (int i = 0; i < (dr->kind == DX_CACHE ? 2 : 1); i++) {
        const tensor *t = &dr->arr[i];
        float *want = map + (size_t)i * half;
        const float *got = i ? subj->b : subj->a;
        if (diag_check_claim_finite(got, want, half, dr->names[i], t->ndim, t->dim, err))
            return -1;
        diag_error_map(got, want, half);
    }
    return 0;
}

/* The claim checked (render_claim_checked): before the search, and again
 * for the error map after it, so that the map's buffer is never held
 * beside the search's (*map: new, the caller frees; NULL when map is
 * false). */
static int check_claim(const diag_request *dr, const pe_dx_subject *subj,
                       const pe_dx_variant *claim, size_t n, bool map_wanted, float **map,
                       api_error *err)
{
    float *m = malloc(n * sizeof *m); /* owned until given to *map */

    *map = NULL;
    if (!m)
        return api_fail_oom(err);
    if (render_claim_checked(dr, subj, claim, n, m, err)) {
        free(m);
        return -1;
    }
    if (map_wanted)
        *map = m;
    else
        free(m);
    return 0;
}

/* The error map's shape: the subject's axes as sent, its batch axes of
 * size 1 when their rows were equal and read once. *bhtd_rows: the batch
 * rows of a bhtd subject's map (0 for other subjects). */
static size_t map_shape(const diag_request *dr, size_t half, size_t *dim, size_t *bhtd_rows)
{
    size_t ndim = dr->sent_ndim, inner = dr->arr[0].ndim;
    memcpy(dim, dr->sent_dim, ndim * sizeof *dim);
    *bhtd_rows = 0;
    if (dr->bhtd && ndim == 4) { /* [b][h][t][hd], b read once or each */
        dim[0] = half / (dim[1] * dim[2] * dim[3]);
        *bhtd_rows = dim[0];
    } else if (dr->batch <= 1) /* rows read once: the folded row */
        for (size_t a = 0; a < ndim; a++)
            dim[a] = a + inner < ndim ? 1 : dr->arr[0].dim[a + inner - ndim];
    return ndim;
}

/* The error map (|subject - render(claim)|, from check_claim: owned, may
 * be replaced) in the subject's arrays as sent. */
static int write_error_map(strbuf *sb, const diag_request *dr, float **owned, size_t n,
                           api_error *err)
{
    size_t half = dr->kind == DX_CACHE ? n / 2 : n, dim[TENSOR_MAX_NDIM], rows;
    size_t ndim = map_shape(dr, half, dim, &rows);
    if (rows) { /* read as [b][t][h*hd]: given back [b][h][t][hd] */
        float *sent = diag_heads_first(*owned, rows, dim[2], dim[1], dim[3]); /* new */
        if (!sent)
            return api_fail_oom(err);
        free(*owned);
        *owned = sent;
    }
    const float *map = *owned;

    strbuf_putc(sb, ',');
    if (dr->kind == DX_CACHE) {
        array_view cos = array_dense(map, ndim, dim);
        array_view sin = array_dense(map + half, ndim, dim);
        strbuf_puts(sb, "\"error_map\":{");
        array_write(sb, "cos", &cos, dr->rq.base64);
        strbuf_putc(sb, ',');
        array_write(sb, "sin", &sin, dr->rq.base64);
        strbuf_putc(sb, '}');
    } else {
        array_view v = array_dense(map, ndim, dim);
        array_write(sb, "error_map", &v, dr->rq.base64);
    }
    return 0;
}

static void write_answer(strbuf *sb, const diag_request *dr, const pe_dx_variant *claim,
                         const pe_dx_result *r, size_t heads, const diag_rows *rows)
{
    scheme_kind kind = dr->rq.scheme.kind;
    const tensor *main = &dr->arr[0];
    size_t flat = r->claimed.worst, index[TENSOR_MAX_NDIM] = {0};
    const char *array = NULL;

    if (dr->kind == DX_CACHE) {
        size_t n = tensor_count(main);
        array = flat >= n ? "sin" : "cos";
        flat = flat >= n ? flat - n : flat;
    }
    size_t ndim = diag_sent_index(dr, flat, index); /* every axis as sent */
    strbuf_puts(sb, "{\"verdict\":");
    strbuf_put_json_string(sb, pe_dx_verdict_name(r->verdict));
    strbuf_puts(sb, r->truncated ? ",\"truncated\":true," : ",");
    diag_write_claimed(sb, kind, claim, heads, &r->claimed, array, index, ndim);
    strbuf_puts(sb, ",\"findings\":[");
    for (size_t i = 0; i < r->n_findings; i++) {
        if (i)
            strbuf_putc(sb, ',');
        if (diag_nd_finding(dr, r, i))
            diag_write_nd_finding(sb, dr, r, i, dr->batch, dr->rq.tokens / dr->batch, "", rows);
        else
            diag_write_finding(sb, r, i, kind, heads, "", rows);
    }
    strbuf_puts(sb, "],\"best\":{\"scheme\":");
    strbuf_put_json_string(sb, scheme_names[kind]);
    strbuf_puts(sb, ",\"params\":");
    diag_write_params(sb, kind, &r->best, heads);
    if (dr->rq.model) { /* the model the claim named goes with best */
        strbuf_putc(sb, ',');
        diag_write_best_model(sb, &dr->rq, dr->model_json);
    }
    if (diag_nd_claim(dr)) {
        strbuf_putc(sb, ',');
        diag_write_nd_positions(sb, dr, r, dr->batch, dr->rq.tokens / dr->batch);
    } else if (dr->kind != DX_SLOPES) { /* slopes have no positions */
        strbuf_putc(sb, ',');
        diag_write_batch_positions(sb, r->best.positions ? r->best.positions : dr->rq.positions,
                                   dr->batch, dr->rq.tokens / dr->batch, r->best.offset);
    }
    if (kind == SCHEME_SINUSOIDAL) {
        strbuf_puts(sb, ",\"embed_scale\":");
        diag_put_double(sb, r->best.embed_scale);
    }
    strbuf_puts(sb, ",\"max_abs_error\":");
    diag_put_float(sb, r->best_errors.max_abs);
    strbuf_puts(sb, ",\"max_rel_error\":");
    diag_put_float(sb, r->best_errors.max_rel);
    strbuf_putc(sb, '}');
}

/* What a /diagnose holds of the memory budget, estimated from its plan
 * before the search: the decoded claim and subject, the
 * search's working copies of the subject, and the answer's text, which is
 * built whole and held until it is sent. */
#define DIAG_WORK_COPIES                                                                           \
    5                              /* the search: its phases (two), the predictions and their
                              slack (measured: 4.1 at [2048][1024]) */
#define DIAG_QKV_COPIES 6          /* q/k/v: the pass and its rotated views */
#define DIAG_TEXT_BYTES (64 << 10) /* the verdict, findings and best fit */
#define DIAG_MAP_VALUE_BYTES                                                                       \
    16                       /* one error_map value as text, at most: the
                                      longest float32 text (15) and a comma */
#define DIAG_MAP_ROW_BYTES 4 /* a row's brackets and comma */
/* Every subject but q/k/v: plan, search, answer into *sb. */
static int diagnose_arrays(const api_service *svc, const diag_request *dr, strbuf *sb,
                           api_error *err)
{
    const request *rq = &dr->rq;
    const tensor *main = &dr->arr[0];
    pe_dx_variant claim;
    pe_dx_result r = {0};
    rope_plan rope = {0};
    pe_dx_kind kind = PE_DX_SUBJ_TABLE;
    strbuf rows_json = {0}; /* evidence.rows of a batched subject */
    diag_rows rows = {0};
    float *map = NULL; /* owned: the claim's error map, with return_map */
    int rc = -1;

    if (rq->scheme.kind == SCHEME_LEARNED && (dr->kind == DX_TABLE || dr->kind == DX_ENCODED))
        return diag_diagnose_learned(svc, dr, sb, err);
    if (check_scheme(dr, &kind, err))
        return -1;
    size_t width = main->ndim == 2 ? main->dim[1] : 0;
    if (dr->kind == DX_CACHE) /* the cache is read with the claim's head_dim */
        width = rq->scheme.head_dim                ? rq->scheme.head_dim
                : rq->model && rq->model->head_dim ? rq->model->head_dim
                                                   : width;
    /* axes bhtd without params.head_dim: the head size is the last axis */
    size_t axis_head_dim = dr->bhtd && !rq->scheme.head_dim ? dr->sent_dim[3] : 0;
    if (diag_claim(svc, dr, width, axis_head_dim, &claim, &rope, err))
        goto done;
    /* no head size anywhere (rope_plan_init then rotates the whole vector):
     * the search finds it (contract 1.2, Head size) */
    const model *m = rq->model;
    bool nd = diag_nd_claim(dr);
    if (nd && rq->scheme.kind == SCHEME_ROPE)
        claim.positions3 = rq->positions_nd;
    claim.head_dim_free = !nd && kind == PE_DX_SUBJ_ROPE_ENCODED && !rq->scheme.head_dim &&
                          !dr->bhtd &&
                          !(m && m->head_dim && m->head_dim <= width && width % m->head_dim == 0);
    bool relative = dr->kind == DX_BIAS || dr->kind == DX_SLOPES;
    size_t heads = relative ? main->dim[0] : 0;
    if (check_heads(dr, &claim, heads, err))
        goto done;
    pe_dx_subject subj = {.kind = kind,
                          .rows = rq->tokens,
                          .cols = relative ? 0 : main->dim[1],
                          .heads = heads,
                          .x = rq->x.data,
                          .a = main->data,
                          .b = dr->arr[1].data,
                          .positions = rq->positions,
                          .batch = dr->batch,
                          .budget_s = (double)svc->limits.diagnose_ms / 1000.0};
    size_t n = pe_dx_subject_size(&subj);
    if (n == 0) {
        api_fail(err, API_E_TOO_LARGE, dr->names[0], "the subject has too many elements");
        goto done;
    }
    if (request_check_output(svc, n, "the subject", err) ||
        check_claim(dr, &subj, &claim, n, false, &map, err))
        goto done;
    pe_status st = nd ? pe_diagnose_nd(&subj, &claim, dr->other_rule3, dr->tol, &r)
                      : pe_diagnose(&subj, &claim, dr->tol, &r);
    if (st == PE_EINVAL) {
        unreadable(dr, err);
        goto done;
    }
    if (st != PE_OK) {
        api_fail_oom(err);
        goto done;
    }
    diag_require_finite_best(&r);
    if (r.n_findings && diag_rows_differing(&subj, &claim, dr->batch, dr->tol, &rows, &rows_json)) {
        api_fail_oom(err);
        goto done;
    }
    write_answer(sb, dr, &claim, &r, heads, rows.json ? &rows : NULL);
    if (dr->return_map) {
        if (check_claim(dr, &subj, &claim, n, true, &map, err))
            goto done;
        /* the map's text at its largest, reserved at once: growing the
         * answer by doubling would hold two copies of it */
        strbuf_reserve(sb, n * DIAG_MAP_VALUE_BYTES + dr->rq.tokens * DIAG_MAP_ROW_BYTES * 2);
        if (write_error_map(sb, dr, &map, n, err))
            goto done;
    }
    strbuf_putc(sb, '}');
    rc = 0;
done:
    free(map);
    free(rows.differs);
    strbuf_free(&rows_json);
    pe_dx_result_free(&r);
    rope_plan_free(&rope);
    return rc;
}

static size_t held_bytes(const diag_request *dr)
{
    size_t subject = 0;

    for (int i = 0; i < DX_ARRAYS; i++)
        if (dr->arr[i].data)
            subject += tensor_count(&dr->arr[i]);
    /* the search's copies, then (freed) the error map and its text: the
     * larger of the two phases is held, not their sum */
    size_t copies = dr->kind == DX_QKV ? DIAG_QKV_COPIES : DIAG_WORK_COPIES;
    size_t search = subject * sizeof(float) * copies;
    size_t map = dr->return_map ? subject * (sizeof(float) + DIAG_MAP_VALUE_BYTES) +
                                      dr->rq.tokens * DIAG_MAP_ROW_BYTES * DX_ARRAYS
                                : 0;
    /* an mm_layout claim's triples under the other mm_rule */
    size_t other_rule = dr->other_rule3 ? dr->rq.tokens * 3 * sizeof *dr->other_rule3 : 0;
    return request_held_bytes(&dr->rq) + other_rule + subject * sizeof(float) +
           (search > map ? search : map) + DIAG_TEXT_BYTES;
}

void api_diagnose(const api_service *svc, const api_budget *budget, const char *body, size_t len,
                  api_response *out)
{
    diag_request dr;
    api_error err;
    answer ans;
    reservation held = {0};

    memset(out, 0, sizeof *out);
    answer_init(&ans);
    if (diag_decode(svc, budget, body, len, &dr, &err) ||
        request_reserve(&dr.rq, held_bytes(&dr), &held, &err))
        goto fail;
    strbuf *sb = answer_text(&ans); /* the answer's one text segment */
    if (dr.kind == DX_QKV ? diag_diagnose_qkv(svc, &dr, sb, &err)
                          : diagnose_arrays(svc, &dr, sb, &err))
        goto fail;
    ans.held = held; /* released when the answer is sent (or written whole) */
    held = (reservation){0};
    if (answer_respond(&ans, out, dr.rq.tokens, stream_min_bytes(svc), &err))
        goto fail;
    goto done;
fail:
    api_respond_error(out, &err);
done:
    answer_free(&ans);
    reservation_release(&held);
    diag_request_free(&dr);
}

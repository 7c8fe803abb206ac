/*
 * test_apply.c - POST /apply: z = norm(embed_scale*x + PE) (or norm(x)),
 * Q/K/V with a naive double loop, rope rotation of q and k, GQA, biases,
 * every `return` choice, token_ids and inline weights in base64, checked
 * on the default model and on inline models.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "refs.h"
#include "tests.h"

/* Relative tolerance of q/k/v/scores against the row norm: the server
 * projects with float32 sgemm. */
#define PROJ_REL 2e-5
#define PROJ_ABS 1e-6

enum { SC_SIN, SC_LEARNED, SC_ROPE, SC_ALIBI, SC_T5, SC_NONE };

/* An inline test model (weights owned by the caller). */
typedef struct tmodel {
    size_t d, heads, kv_heads, hd;
    const char *scheme;
    const char *params; /* JSON object text or NULL */
    int norm;           /* 0 none, 1 layernorm, 2 rmsnorm */
    double eps;         /* 0: the default */
    bool base64;        /* weights as base64 + <name>_shape */
    const float *wq, *wk, *wv, *bq, *bk, *bv, *nw, *nb;
    const float *pos_table;
    size_t pt_rows;
    const float *t5;
    size_t t5_buckets;
    const float *emb;
    size_t vocab;
} tmodel;

static void put_weight(sbuf *b, bool *first, bool base64, const char *name, const float *v,
                       size_t rows, size_t cols)
{
    if (!v)
        return;
    sb_printf(b, "%s\"%s\":", *first ? "" : ",", name);
    *first = false;
    size_t sh[2] = {rows, cols};
    int nd = rows ? 2 : 1;
    const size_t *shp = rows ? sh : sh + 1;
    if (base64) {
        sb_base64_floats(b, v, rows ? rows * cols : cols);
        if (rows)
            sb_printf(b, ",\"%s_shape\":[%zu,%zu]", name, rows, cols);
        else
            sb_printf(b, ",\"%s_shape\":[%zu]", name, cols);
    } else {
        sb_farray(b, v, nd, shp);
    }
}

static void tmodel_json(sbuf *b, const tmodel *m)
{
    sb_printf(b,
              "{\"d_model\":%zu,\"heads\":%zu,\"kv_heads\":%zu,\"head_dim\":%zu,\"scheme\":\"%s\"",
              m->d, m->heads, m->kv_heads, m->hd, m->scheme);
    if (m->params)
        sb_printf(b, ",\"params\":%s", m->params);
    if (m->norm) {
        sb_printf(b, ",\"norm\":{\"type\":\"%s\"", m->norm == 1 ? "layernorm" : "rmsnorm");
        if (m->eps > 0)
            sb_printf(b, ",\"eps\":%.17g", m->eps);
        sb_puts(b, "}");
    }
    sb_puts(b, ",\"weights\":{");
    bool first = true;
    size_t qd = m->heads * m->hd, kd = m->kv_heads * m->hd;
    put_weight(b, &first, m->base64, "wq", m->wq, m->d, qd);
    put_weight(b, &first, m->base64, "wk", m->wk, m->d, kd);
    put_weight(b, &first, m->base64, "wv", m->wv, m->d, kd);
    put_weight(b, &first, m->base64, "bq", m->bq, 0, qd);
    put_weight(b, &first, m->base64, "bk", m->bk, 0, kd);
    put_weight(b, &first, m->base64, "bv", m->bv, 0, kd);
    put_weight(b, &first, m->base64, "norm_weight", m->nw, 0, m->d);
    put_weight(b, &first, m->base64, "norm_bias", m->nb, 0, m->d);
    put_weight(b, &first, m->base64, "position_table", m->pos_table, m->pt_rows, m->d);
    put_weight(b, &first, m->base64, "t5_bias", m->t5, m->t5_buckets, m->heads);
    put_weight(b, &first, m->base64, "token_embedding", m->emb, m->vocab, m->d);
    sb_puts(b, "}}");
}

/* What /apply should compute. */
typedef struct aref {
    const tmodel *m;
    size_t batch, t;    /* batch 0: unbatched */
    const float *x;     /* [rows][d] */
    const int64_t *pos; /* [rows] */
    double embed_scale;
    int scheme;
    long double base; /* sinusoidal */
    bool split;
    ref_rope_cfg rope; /* rope: head_dim = model hd */
    bool bloom;
    bool bidir;
    int num_buckets, max_distance;
    double score_scale;
    /* outputs */
    float *z;
    double *q, *k, *v, *bias, *scores;
} aref;

static size_t rows_of(const aref *a)
{
    return (a->batch ? a->batch : 1) * a->t;
}

static void aref_compute(aref *a)
{
    const tmodel *m = a->m;
    size_t rows = rows_of(a), d = m->d, nb = a->batch ? a->batch : 1, t = a->t;
    size_t qd = m->heads * m->hd, kd = m->kv_heads * m->hd;
    a->z = xmalloc(rows * d * sizeof *a->z);
    long double *pre = xmalloc(d * sizeof *pre), *post = xmalloc(d * sizeof *post);
    double *pe = xmalloc(d * sizeof *pe);
    for (size_t r = 0; r < rows; r++) {
        bool abs = a->scheme == SC_SIN || a->scheme == SC_LEARNED;
        if (a->scheme == SC_SIN)
            ref_sinusoidal_row(a->base, a->split, a->pos[r], d, pe);
        for (size_t j = 0; j < d; j++) {
            long double xv = (long double)a->x[r * d + j];
            if (!abs)
                pre[j] = xv;
            else if (a->scheme == SC_SIN)
                pre[j] = (long double)a->embed_scale * xv + (long double)pe[j];
            else
                pre[j] = (long double)a->embed_scale * xv +
                         (long double)m->pos_table[(size_t)a->pos[r] * d + j];
        }
        long double eps = m->eps > 0 ? (long double)m->eps : (m->norm == 1 ? 1e-5L : 1e-6L);
        ref_norm_row(m->norm, eps, m->nw, m->nb, pre, d, post);
        for (size_t j = 0; j < d; j++)
            a->z[r * d + j] = (float)post[j];
    }
    free(pre);
    free(post);
    free(pe);
    a->q = xmalloc(rows * qd * sizeof *a->q);
    a->k = xmalloc(rows * kd * sizeof *a->k);
    a->v = xmalloc(rows * kd * sizeof *a->v);
    ref_project(a->z, rows, d, m->wq, qd, m->bq, a->q);
    ref_project(a->z, rows, d, m->wk, kd, m->bk, a->k);
    ref_project(a->z, rows, d, m->wv, kd, m->bv, a->v);
    if (a->scheme == SC_ROPE) {
        ref_rope_cfg c = a->rope;
        c.head_dim = m->hd;
        double *tmp = xmalloc(rows * (qd > kd ? qd : kd) * sizeof *tmp);
        for (size_t r = 0; r < rows; r++) {
            ref_rope(&c, a->q + r * qd, a->pos + r, 1, qd, tmp);
            memcpy(a->q + r * qd, tmp, qd * sizeof *tmp);
            ref_rope(&c, a->k + r * kd, a->pos + r, 1, kd, tmp);
            memcpy(a->k + r * kd, tmp, kd * sizeof *tmp);
        }
        free(tmp);
    }
    size_t per = m->heads * t * t;
    a->bias = xcalloc(nb * per, sizeof *a->bias);
    a->scores = xmalloc(nb * per * sizeof *a->scores);
    for (size_t bi = 0; bi < nb; bi++) {
        const int64_t *p = a->pos + bi * t;
        if (a->scheme == SC_ALIBI) {
            ref_alibi_bias(m->heads, a->bloom, p, t, a->bias + bi * per);
        } else if (a->scheme == SC_T5) {
            float *fb = xmalloc(per * sizeof *fb);
            ref_t5_bias(m->t5, a->num_buckets, m->heads, a->max_distance, a->bidir, p, t, fb);
            ref_widen(fb, per, a->bias + bi * per);
            free(fb);
        }
        ref_scores(a->q + bi * t * qd, a->k + bi * t * kd, t, m->heads, m->kv_heads, m->hd,
                   a->score_scale, a->bias + bi * per, a->scores + bi * per);
    }
}

static void aref_free(aref *a)
{
    free(a->z);
    free(a->q);
    free(a->k);
    free(a->v);
    free(a->bias);
    free(a->scores);
}

/* POST the body and compare every field named in `returns` (comma list)
 * and check that nothing else of q/k/v/encoded/bias/scores is present. */
static void apply_check(const server *s, const char *label, const char *body, const aref *a,
                        const char *model_name, const char *scheme, const char *returns)
{
    const tmodel *m = a->m;
    http_resp r;
    http_post_json(s, "/apply", body, &r);
    if (!expect_ok(label, &r)) {
        http_resp_free(&r);
        return;
    }
    const char *mn = jstr(r.json, "model");
    CHECK(mn && strcmp(mn, model_name) == 0, label, "\"model\" is %s, want %s", mn ? mn : "(none)",
          model_name);
    const char *sc = jstr(r.json, "scheme");
    CHECK(sc && strcmp(sc, scheme) == 0, label, "\"scheme\" is %s, want %s", sc ? sc : "(none)",
          scheme);
    json_t *sh = json_object_get(r.json, "shape");
    CHECK(json_is_object(sh) && jint(sh, "tokens", -1) == (long long)a->t &&
              jint(sh, "d_model", -1) == (long long)m->d &&
              jint(sh, "heads", -1) == (long long)m->heads &&
              jint(sh, "kv_heads", -1) == (long long)m->kv_heads &&
              jint(sh, "head_dim", -1) == (long long)m->hd &&
              (a->batch ? jint(sh, "batch", -1) == (long long)a->batch
                        : json_object_get(sh, "batch") == NULL),
          label, "\"shape\" object is wrong: %.200s", r.body);

    size_t rows = rows_of(a), t = a->t, nb = a->batch ? a->batch : 1;
    size_t qd = m->heads * m->hd, kd = m->kv_heads * m->hd;
    static const char *const names[] = {"q", "k", "v", "encoded", "bias", "scores"};
    for (int i = 0; i < 6; i++) {
        const char *nm = names[i];
        char pat[16];
        snprintf(pat, sizeof pat, "%s", nm);
        bool wanted = false;
        for (const char *p = returns; p && *p;) {
            const char *comma = strchr(p, ',');
            size_t l = comma ? (size_t)(comma - p) : strlen(p);
            if (l == strlen(nm) && strncmp(p, nm, l) == 0)
                wanted = true;
            p = comma ? comma + 1 : NULL;
        }
        if (!wanted) {
            CHECK(json_object_get(r.json, nm) == NULL, label, "\"%s\" returned but not asked for",
                  nm);
            continue;
        }
        size_t shape[4];
        int nd = 0;
        if (a->batch)
            shape[nd++] = a->batch;
        if (i <= 3) {
            shape[nd++] = t;
            shape[nd++] = i == 0 ? qd : i == 3 ? m->d : kd;
        } else {
            shape[nd++] = m->heads;
            shape[nd++] = t;
            shape[nd++] = t;
        }
        farr arr;
        if (!get_farr(label, &r, nm, &arr))
            continue;
        if (check_shape(label, nm, &arr, nd, shape)) {
            if (i == 0)
                check_close_rownorm(label, "q", &arr, a->q, rows * qd, qd, PROJ_REL, PROJ_ABS);
            else if (i == 1)
                check_close_rownorm(label, "k", &arr, a->k, rows * kd, kd, PROJ_REL, PROJ_ABS);
            else if (i == 2)
                check_close_rownorm(label, "v", &arr, a->v, rows * kd, kd, PROJ_REL, PROJ_ABS);
            else if (i == 3) {
                double *zd = xmalloc(rows * m->d * sizeof *zd);
                ref_widen(a->z, rows * m->d, zd);
                check_close(label, "encoded (z)", &arr, zd, rows * m->d, ABS_ONCE, ULPS_ONCE);
                free(zd);
            } else if (i == 4) {
                check_close(label, "bias", &arr, a->bias, nb * m->heads * t * t, ABS_ONCE,
                            ULPS_ONCE);
            } else {
                check_close_rownorm(label, "scores", &arr, a->scores, nb * m->heads * t * t, t,
                                    PROJ_REL, 1e-5);
            }
        }
        farr_free(&arr);
    }
    http_resp_free(&r);
}

/* ---------------------------------------------------------------------- */
/* /apply cases as data                                                     */
/* ---------------------------------------------------------------------- */

/* Which model a case's body names. */
typedef enum {
    MODEL_IMPLICIT,      /* no "model": the default model */
    MODEL_NAMED_DEFAULT, /* "model":"default" */
    MODEL_INLINE         /* "model": the case's tmodel as JSON */
} model_form;

/* How a case's body carries its input. */
typedef enum {
    INPUT_JSON,   /* "embeddings": nested numbers */
    INPUT_BASE64, /* "embeddings": base64, with "shape" */
    INPUT_IN_TAIL /* none here: the tail carries "token_ids" */
} input_form;

/* One /apply request and what it must compute. The body is
 * {model, input, tail} (the parts present, in this order). */
typedef struct apply_case {
    const char *name;
    model_form model;
    input_form input;
    const char *tail;        /* the other members, e.g. "\"offset\":2"; NULL: none */
    aref ref;                /* the model (ref.m), the input and how to compute the answer */
    const char *want_scheme; /* the "scheme" the answer names */
    const char *want_arrays; /* the arrays it carries (comma list), and no others */
} apply_case;

static void put_input(sbuf *b, const apply_case *c)
{
    const aref *a = &c->ref;
    size_t d = a->m->d, sh[3] = {a->batch, a->t, d};
    sb_puts(b, "\"embeddings\":");
    if (c->input == INPUT_BASE64) {
        sb_base64_floats(b, a->x, rows_of(a) * d);
        if (a->batch)
            sb_printf(b, ",\"shape\":[%zu,%zu,%zu]", a->batch, a->t, d);
        else
            sb_printf(b, ",\"shape\":[%zu,%zu]", a->t, d);
    } else if (a->batch) {
        sb_farray(b, a->x, 3, sh);
    } else {
        sb_farray(b, a->x, 2, sh + 1);
    }
}

static void apply_body(sbuf *b, const apply_case *c)
{
    bool comma = false;
    sb_puts(b, "{");
    if (c->model == MODEL_NAMED_DEFAULT) {
        sb_puts(b, "\"model\":\"default\"");
        comma = true;
    } else if (c->model == MODEL_INLINE) {
        sb_puts(b, "\"model\":");
        tmodel_json(b, c->ref.m);
        comma = true;
    }
    if (c->input != INPUT_IN_TAIL) {
        sb_puts(b, comma ? "," : "");
        put_input(b, c);
        comma = true;
    }
    if (c->tail) {
        sb_puts(b, comma ? "," : "");
        sb_puts(b, c->tail);
    }
    sb_puts(b, "}");
}

/* Compute each case's reference, POST its body and compare the answer. */
static void run_apply_cases(const server *s, apply_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        apply_case *c = &cases[i];
        aref_compute(&c->ref);
        sbuf b;
        sb_init(&b);
        apply_body(&b, c);
        apply_check(s, c->name, b.s, &c->ref, c->model == MODEL_INLINE ? "inline" : "default",
                    c->want_scheme, c->want_arrays);
        sb_free(&b);
        aref_free(&c->ref);
    }
}

#define RUN_APPLY_CASES(s, table) run_apply_cases((s), (table), sizeof(table) / sizeof((table)[0]))

static float *rand_vec(trng *g, size_t n, float lo, float hi)
{
    float *v = xmalloc(n * sizeof *v);
    trng_fill(g, v, n, lo, hi);
    return v;
}

/* ---------------------------------------------------------------------- */
/* The default model                                                        */
/* ---------------------------------------------------------------------- */

uint64_t default_seed(const server *s)
{
    const char *env = getenv("POSENC_DEFAULT_SEED");
    if (env && *env)
        return strtoull(env, NULL, 0);
    uint64_t seed = 0; /* pe_default_weights' documented default */
    http_resp r;
    http_get(s, "/info", &r);
    json_t *models = r.json ? json_object_get(r.json, "models") : NULL;
    json_t *m0 = json_is_array(models) ? json_array_get(models, 0) : NULL;
    if (m0) {
        json_t *sd = json_object_get(m0, "seed");
        if (!sd && json_is_object(json_object_get(m0, "weights")))
            sd = json_object_get(json_object_get(m0, "weights"), "seed");
        if (json_is_integer(sd)) {
            seed = (uint64_t)json_integer_value(sd);
        } else {
            const char *src = jstr(m0, "source");
            const char *p = src ? strstr(src, "seed") : NULL;
            if (p) {
                p += 4;
                while (*p && (*p < '0' || *p > '9'))
                    p++;
                if (*p)
                    seed = strtoull(p, NULL, 0);
            }
        }
    }
    http_resp_free(&r);
    return seed;
}

static tmodel default_tmodel(const default_model *dm)
{
    return (tmodel){.d = DEFAULT_D,
                    .heads = DEFAULT_HEADS,
                    .kv_heads = DEFAULT_HEADS,
                    .hd = DEFAULT_HD,
                    .scheme = "sinusoidal",
                    .wq = dm->wq,
                    .wk = dm->wk,
                    .wv = dm->wv};
}

static void apply_default(const server *s, const default_model *dm)
{
    tmodel m = default_tmodel(dm);
    trng g;
    trng_seed(&g, 41);
    float *x5 = rand_vec(&g, 5 * DEFAULT_D, -1, 1);
    float *x23 = rand_vec(&g, 2 * 3 * DEFAULT_D, -1, 1);
    float *x2 = rand_vec(&g, 2 * DEFAULT_D, -2, 2);
    int64_t p5[] = {2, 3, 4, 5, 6}, p23[] = {0, 1, 2, 7, 3, 100}, p2[] = {1000000, 1000001};
    char scaled[200];
    snprintf(scaled, sizeof scaled,
             "\"positions\":[[0,1,2],[7,3,100]],\"embed_scale\":%.17g,"
             "\"params\":{\"score_scale\":0.25},\"encoding\":\"base64\","
             "\"return\":[\"q\",\"scores\",\"encoded\"]",
             sqrt(512.0));
    apply_case cases[] = {
        /* unbatched, offset 2, default return q,k,v */
        {.name = "POST /apply default model [5,512] offset 2",
         .tail = "\"offset\":2",
         .ref = {.m = &m,
                 .t = 5,
                 .x = x5,
                 .pos = p5,
                 .embed_scale = 1,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 1.0 / 8},
         .want_scheme = "sinusoidal",
         .want_arrays = "q,k,v"},
        /* the same, naming the model and asking for encoded too */
        {.name = "POST /apply model \"default\" positions, return encoded,v",
         .model = MODEL_NAMED_DEFAULT,
         .tail = "\"positions\":[2,3,4,5,6],\"return\":[\"encoded\",\"v\"]",
         .ref = {.m = &m,
                 .t = 5,
                 .x = x5,
                 .pos = p5,
                 .embed_scale = 1,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 1.0 / 8},
         .want_scheme = "sinusoidal",
         .want_arrays = "encoded,v"},
        /* batched with per-row positions, every return choice */
        {.name = "POST /apply default batch [2,3,512] per-row positions, all returns",
         .tail = "\"positions\":[[0,1,2],[7,3,100]],"
                 "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"bias\",\"scores\"]",
         .ref = {.m = &m,
                 .batch = 2,
                 .t = 3,
                 .x = x23,
                 .pos = p23,
                 .embed_scale = 1,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 1.0 / 8},
         .want_scheme = "sinusoidal",
         .want_arrays = "q,k,v,encoded,bias,scores"},
        /* explicit score_scale, embed_scale sqrt(512), base64 out */
        {.name = "POST /apply default embed_scale sqrt(512) score_scale 0.25 base64 out",
         .tail = scaled,
         .ref = {.m = &m,
                 .batch = 2,
                 .t = 3,
                 .x = x23,
                 .pos = p23,
                 .embed_scale = sqrt(512.0),
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 0.25},
         .want_scheme = "sinusoidal",
         .want_arrays = "q,scores,encoded"},
        /* base64 embeddings in */
        {.name = "POST /apply default base64 in [2,512] offset 1e6",
         .input = INPUT_BASE64,
         .tail = "\"offset\":1000000,\"return\":[\"k\",\"encoded\"]",
         .ref = {.m = &m,
                 .t = 2,
                 .x = x2,
                 .pos = p2,
                 .embed_scale = 1,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 1.0 / 8},
         .want_scheme = "sinusoidal",
         .want_arrays = "k,encoded"},
    };
    RUN_APPLY_CASES(s, cases);
    free(x5);
    free(x23);
    free(x2);
}

/* ---------------------------------------------------------------------- */
/* Inline models                                                           */
/* ---------------------------------------------------------------------- */

static void apply_norms(const server *s)
{
    trng g;
    trng_seed(&g, 51);
    size_t d = 8;
    float *wq = rand_vec(&g, 64, -0.5f, 0.5f), *wk = rand_vec(&g, 64, -0.5f, 0.5f),
          *wv = rand_vec(&g, 64, -0.5f, 0.5f);
    float *bq = rand_vec(&g, 8, -1, 1), *bk = rand_vec(&g, 8, -1, 1), *bv = rand_vec(&g, 8, -1, 1);
    float *nw = rand_vec(&g, 8, 0.5f, 1.5f), *nbias = rand_vec(&g, 8, -0.5f, 0.5f);
    float *x = rand_vec(&g, 2 * 3 * d, -2, 2);
    float *wk2 = rand_vec(&g, 8 * 4, -0.5f, 0.5f), *wv2 = rand_vec(&g, 8 * 4, -0.5f, 0.5f);

    /* layernorm (default eps 1e-5), biases, sinusoidal split via params;
     * then the same model with every weight in base64 */
    tmodel ln = {.d = d,
                 .heads = 2,
                 .kv_heads = 2,
                 .hd = 4,
                 .scheme = "sinusoidal",
                 .params = "{\"layout\":\"split\"}",
                 .norm = 1,
                 .wq = wq,
                 .wk = wk,
                 .wv = wv,
                 .bq = bq,
                 .bk = bk,
                 .bv = bv,
                 .nw = nw,
                 .nb = nbias};
    tmodel ln64 = ln;
    ln64.base64 = true;
    /* rmsnorm, explicit eps, GQA 4 heads over 2 kv heads, rope (half) */
    tmodel gqa = {.d = d,
                  .heads = 4,
                  .kv_heads = 2,
                  .hd = 2,
                  .scheme = "rope",
                  .norm = 2,
                  .eps = 1e-3,
                  .wq = wq,
                  .wk = wk2,
                  .wv = wv2,
                  .nw = nw};
    /* rope with head_dim 4, base 100 in the model's params */
    tmodel rope100 = {.d = d,
                      .heads = 2,
                      .kv_heads = 1,
                      .hd = 4,
                      .scheme = "rope",
                      .params = "{\"base\":100,\"layout\":\"half\"}",
                      .wq = wq,
                      .wk = wk2,
                      .wv = wv2};
    tmodel partial = rope100;
    partial.params = "{\"rotary_dim\":2}";
    int64_t p123[] = {1, 2, 3}, pb[] = {0, 5, 9, 3, 4, 1000}, p382[] = {3, 8, 2};
    const char *ln_tail = "\"offset\":1,\"embed_scale\":1.5,"
                          "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"scores\"]";
    apply_case cases[] = {
        {.name = "POST /apply inline layernorm+biases, split sinusoidal, embed_scale 1.5",
         .model = MODEL_INLINE,
         .tail = ln_tail,
         .ref = {.m = &ln,
                 .t = 3,
                 .x = x,
                 .pos = p123,
                 .embed_scale = 1.5,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .split = true,
                 .score_scale = 0.5},
         .want_scheme = "sinusoidal",
         .want_arrays = "q,k,v,encoded,scores"},
        {.name = "POST /apply inline layernorm, weights as base64 with <name>_shape",
         .model = MODEL_INLINE,
         .tail = ln_tail,
         .ref = {.m = &ln64,
                 .t = 3,
                 .x = x,
                 .pos = p123,
                 .embed_scale = 1.5,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .split = true,
                 .score_scale = 0.5},
         .want_scheme = "sinusoidal",
         .want_arrays = "q,k,v,encoded,scores"},
        {.name = "POST /apply inline rmsnorm eps 1e-3, GQA 4/2, rope half, batch (embed_scale "
                 "ignored)",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[[0,5,9],[3,4,1000]],\"embed_scale\":7,"
                 "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"bias\",\"scores\"]",
         .ref = {.m = &gqa,
                 .batch = 2,
                 .t = 3,
                 .x = x,
                 .pos = pb,
                 .embed_scale = 1,
                 .scheme = SC_ROPE,
                 .rope = {.base = 10000, .rotary_dim = 2},
                 .score_scale = 1 / sqrt(2.0)},
         .want_scheme = "rope",
         .want_arrays = "q,k,v,encoded,bias,scores"},
        /* the request's params override the model's key by key (base 100 stays) */
        {.name = "POST /apply rope model base 100, request layout interleaved (key override)",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[3,8,2],\"params\":{\"layout\":\"interleaved\"},"
                 "\"return\":[\"q\",\"k\",\"v\",\"scores\"]",
         .ref = {.m = &rope100,
                 .t = 3,
                 .x = x,
                 .pos = p382,
                 .scheme = SC_ROPE,
                 .rope = {.base = 100, .rotary_dim = 4, .interleaved = true},
                 .score_scale = 0.5},
         .want_scheme = "rope",
         .want_arrays = "q,k,v,scores"},
        /* partial rotary in /apply: rotary_dim 2 of head_dim 4 */
        {.name = "POST /apply rope rotary_dim 2 of head_dim 4",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[3,8,2],\"return\":[\"q\",\"k\",\"v\"]",
         .ref = {.m = &partial,
                 .t = 3,
                 .x = x,
                 .pos = p382,
                 .scheme = SC_ROPE,
                 .rope = {.base = 10000, .rotary_dim = 2},
                 .score_scale = 0.5},
         .want_scheme = "rope",
         .want_arrays = "q,k,v"},
        /* a request scheme different from the model's starts from its own
         * defaults: sinusoidal base 10000, not the rope model's base 100 */
        {.name = "POST /apply rope model with request scheme sinusoidal (its defaults)",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[3,8,2],\"scheme\":\"sinusoidal\",\"return\":[\"encoded\",\"q\"]",
         .ref = {.m = &rope100,
                 .t = 3,
                 .x = x,
                 .pos = p382,
                 .embed_scale = 1,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 0.5},
         .want_scheme = "sinusoidal",
         .want_arrays = "encoded,q"},
    };
    RUN_APPLY_CASES(s, cases);

    float *owned[] = {wk2, wv2, wq, wk, wv, bq, bk, bv, nw, nbias, x};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
}

/* token_ids out of range: 422 naming the index (and the id). */
static void apply_token_id_errors(const server *s, const tmodel *me)
{
    static const char *const tails[] = {"\"token_ids\":[1,6,0]", "\"token_ids\":[[0,1],[2,-1]]"};
    sbuf bodies[2];
    for (size_t i = 0; i < 2; i++) {
        sb_init(&bodies[i]);
        sb_puts(&bodies[i], "{\"model\":");
        tmodel_json(&bodies[i], me);
        sb_printf(&bodies[i], ",%s}", tails[i]);
    }
    const http_case cases[] = {
        {.name = "POST /apply token_ids [1,6,0] with vocab 6",
         .route = "/apply",
         .body = bodies[0].s,
         .status = 422,
         .code = "out_of_range",
         .field = "token_ids[1]",
         .msg_has = "6"},
        {.name = "POST /apply token_ids [[0,1],[2,-1]] (negative id)",
         .route = "/apply",
         .body = bodies[1].s,
         .status = 422,
         .code = "out_of_range",
         .field = "token_ids[1][1]"},
    };
    RUN_HTTP_CASES(s, cases);
    sb_free(&bodies[0]);
    sb_free(&bodies[1]);
}

static void apply_relative_and_tables(const server *s)
{
    trng g;
    trng_seed(&g, 61);
    size_t d = 8;
    float *wq = rand_vec(&g, 64, -0.5f, 0.5f), *wk = rand_vec(&g, 64, -0.5f, 0.5f),
          *wv = rand_vec(&g, 64, -0.5f, 0.5f);
    float *x = rand_vec(&g, 2 * 4 * d, -2, 2);
    float *wq6 = rand_vec(&g, 8 * 12, -0.5f, 0.5f), *wk6 = rand_vec(&g, 8 * 12, -0.5f, 0.5f),
          *wv6 = rand_vec(&g, 8 * 12, -0.5f, 0.5f);
    float *t5tab = rand_vec(&g, 32 * 2, -3, 3);
    float *table = rand_vec(&g, 6 * d, -1, 1);
    float *emb = rand_vec(&g, 6 * d, -1, 1);

    /* alibi model, 4 heads of 2 (non power of two handled in /encode) */
    tmodel ma = {.d = d,
                 .heads = 4,
                 .kv_heads = 4,
                 .hd = 2,
                 .scheme = "alibi",
                 .params = "{\"form\":\"bloom\"}",
                 .wq = wq,
                 .wk = wk,
                 .wv = wv};
    /* 6 heads alibi symmetric */
    tmodel m6 = {.d = d,
                 .heads = 6,
                 .kv_heads = 6,
                 .hd = 2,
                 .scheme = "alibi",
                 .wq = wq6,
                 .wk = wk6,
                 .wv = wv6};
    tmodel mt = {.d = d,
                 .heads = 2,
                 .kv_heads = 2,
                 .hd = 4,
                 .scheme = "t5",
                 .wq = wq,
                 .wk = wk,
                 .wv = wv,
                 .t5 = t5tab,
                 .t5_buckets = 32};
    tmodel ml = {.d = d,
                 .heads = 2,
                 .kv_heads = 2,
                 .hd = 4,
                 .scheme = "learned",
                 .wq = wq,
                 .wk = wk,
                 .wv = wv,
                 .pos_table = table,
                 .pt_rows = 6};
    tmodel mn = ml;
    mn.scheme = "none";
    mn.pos_table = NULL;
    /* token_ids with token_embedding: x is the embedding rows of the ids */
    tmodel me = {.d = d,
                 .heads = 2,
                 .kv_heads = 2,
                 .hd = 4,
                 .scheme = "sinusoidal",
                 .wq = wq,
                 .wk = wk,
                 .wv = wv,
                 .emb = emb,
                 .vocab = 6};
    static const int ids[] = {1, 5, 0, 2, 2, 3};
    float xe[6 * 8];
    for (int i = 0; i < 6; i++)
        memcpy(xe + i * 8, emb + ids[i] * 8, 8 * sizeof(float));
    int64_t pa[] = {0, 1, 2, 3}, p6[] = {0, 1, 2, 3, 10, 20, 30, 41}, pt[] = {0, 9, 40, 200};
    int64_t pl[] = {2, 3, 4}, pe[] = {0, 1, 2, 0, 1, 2};
    apply_case cases[] = {
        {.name = "POST /apply alibi bloom model: bias and scores",
         .model = MODEL_INLINE,
         .tail = "\"return\":[\"bias\",\"scores\",\"q\"]",
         .ref = {.m = &ma,
                 .t = 4,
                 .x = x,
                 .pos = pa,
                 .scheme = SC_ALIBI,
                 .bloom = true,
                 .score_scale = 1 / sqrt(2.0)},
         .want_scheme = "alibi",
         .want_arrays = "bias,scores,q"},
        {.name = "POST /apply alibi 6 heads symmetric, batch",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[[0,1,2,3],[10,20,30,41]],\"return\":[\"bias\",\"scores\"]",
         .ref = {.m = &m6,
                 .batch = 2,
                 .t = 4,
                 .x = x,
                 .pos = p6,
                 .scheme = SC_ALIBI,
                 .score_scale = 1 / sqrt(2.0)},
         .want_scheme = "alibi",
         .want_arrays = "bias,scores"},
        /* t5: scores use scale 1 by default; explicit score_scale 0.5 */
        {.name = "POST /apply t5 model: scores with scale 1",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[0,9,40,200],\"return\":[\"bias\",\"scores\",\"k\"]",
         .ref = {.m = &mt,
                 .t = 4,
                 .x = x,
                 .pos = pt,
                 .scheme = SC_T5,
                 .bidir = true,
                 .num_buckets = 32,
                 .max_distance = 128,
                 .score_scale = 1},
         .want_scheme = "t5",
         .want_arrays = "bias,scores,k"},
        {.name = "POST /apply t5 model: params.score_scale 0.5",
         .model = MODEL_INLINE,
         .tail = "\"positions\":[0,9,40,200],\"params\":{\"score_scale\":0.5},"
                 "\"return\":[\"scores\"]",
         .ref = {.m = &mt,
                 .t = 4,
                 .x = x,
                 .pos = pt,
                 .scheme = SC_T5,
                 .bidir = true,
                 .num_buckets = 32,
                 .max_distance = 128,
                 .score_scale = 0.5},
         .want_scheme = "t5",
         .want_arrays = "scores"},
        {.name = "POST /apply learned model offset 2",
         .model = MODEL_INLINE,
         .tail = "\"offset\":2,\"return\":[\"encoded\",\"q\",\"k\",\"v\"]",
         .ref = {.m = &ml,
                 .t = 3,
                 .x = x,
                 .pos = pl,
                 .embed_scale = 1,
                 .scheme = SC_LEARNED,
                 .score_scale = 0.5},
         .want_scheme = "learned",
         .want_arrays = "encoded,q,k,v"},
        /* none: z = x exactly */
        {.name = "POST /apply none model (embed_scale ignored)",
         .model = MODEL_INLINE,
         .tail = "\"embed_scale\":3,\"return\":[\"encoded\",\"q\",\"scores\"]",
         .ref = {.m = &mn, .t = 3, .x = x, .pos = pl, .scheme = SC_NONE, .score_scale = 0.5},
         .want_scheme = "none",
         .want_arrays = "encoded,q,scores"},
        /* token_ids with token_embedding, batched, embed_scale 2 */
        {.name = "POST /apply token_ids [[1,5,0],[2,2,3]] with token_embedding",
         .model = MODEL_INLINE,
         .input = INPUT_IN_TAIL,
         .tail = "\"token_ids\":[[1,5,0],[2,2,3]],\"embed_scale\":2,"
                 "\"return\":[\"encoded\",\"q\",\"v\"]",
         .ref = {.m = &me,
                 .batch = 2,
                 .t = 3,
                 .x = xe,
                 .pos = pe,
                 .embed_scale = 2,
                 .scheme = SC_SIN,
                 .base = 10000,
                 .score_scale = 0.5},
         .want_scheme = "sinusoidal",
         .want_arrays = "encoded,q,v"},
    };
    RUN_APPLY_CASES(s, cases);
    apply_token_id_errors(s, &me);

    float *owned[] = {wq, wk, wv, x, wq6, wk6, wv6, t5tab, table, emb};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
}

void test_apply(const server *s, const default_model *dm)
{
    apply_default(s, dm);
    apply_norms(s);
    apply_relative_and_tables(s);
}

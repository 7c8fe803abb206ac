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
    sb_printf(b, "{\"d_model\":%zu,\"heads\":%zu,\"kv_heads\":%zu,\"head_dim\":%zu,\"scheme\":\"%s\"",
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
    size_t batch, t;     /* batch 0: unbatched */
    const float *x;      /* [rows][d] */
    const int64_t *pos;  /* [rows] */
    double embed_scale;
    int scheme;
    long double base;    /* sinusoidal */
    bool split;
    ref_rope_cfg rope;   /* rope: head_dim = model hd */
    bool bloom;
    bool bidir;
    int num_buckets, max_distance;
    double score_scale;
    /* outputs */
    float *z;
    double *q, *k, *v, *bias, *scores;
} aref;

static size_t rows_of(const aref *a) { return (a->batch ? a->batch : 1) * a->t; }

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

/* "embeddings": x with the given shape. */
static void put_x(sbuf *b, const float *x, size_t batch, size_t t, size_t d)
{
    size_t sh[3] = {batch, t, d};
    sb_puts(b, "\"embeddings\":");
    if (batch)
        sb_farray(b, x, 3, sh);
    else
        sb_farray(b, x, 2, sh + 1);
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
    return (tmodel){.d = DEFAULT_D, .heads = DEFAULT_HEADS, .kv_heads = DEFAULT_HEADS,
                    .hd = DEFAULT_HD, .scheme = "sinusoidal",
                    .wq = dm->wq, .wk = dm->wk, .wv = dm->wv};
}

static void apply_default(const server *s, const default_model *dm)
{
    tmodel m = default_tmodel(dm);
    trng g;
    trng_seed(&g, 41);
    /* unbatched, offset 2, default return q,k,v */
    {
        size_t t = 5;
        float *x = xmalloc(t * DEFAULT_D * sizeof *x);
        trng_fill(&g, x, t * DEFAULT_D, -1, 1);
        int64_t pos[] = {2, 3, 4, 5, 6};
        aref a = {.m = &m, .t = t, .x = x, .pos = pos, .embed_scale = 1, .scheme = SC_SIN,
                  .base = 10000, .score_scale = 1.0 / 8};
        aref_compute(&a);
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{");
        put_x(&b, x, 0, t, DEFAULT_D);
        sb_puts(&b, ",\"offset\":2}");
        apply_check(s, "POST /apply default model [5,512] offset 2", b.s, &a, "default",
                    "sinusoidal", "q,k,v");
        sb_free(&b);
        /* the same, naming the model and asking for encoded too */
        sb_init(&b);
        sb_puts(&b, "{\"model\":\"default\",");
        put_x(&b, x, 0, t, DEFAULT_D);
        sb_puts(&b, ",\"positions\":[2,3,4,5,6],\"return\":[\"encoded\",\"v\"]}");
        apply_check(s, "POST /apply model \"default\" positions, return encoded,v", b.s, &a,
                    "default", "sinusoidal", "encoded,v");
        sb_free(&b);
        aref_free(&a);
        free(x);
    }
    /* batched with per-row positions, every return choice */
    {
        size_t bt = 2, t = 3;
        float *x = xmalloc(bt * t * DEFAULT_D * sizeof *x);
        trng_fill(&g, x, bt * t * DEFAULT_D, -1, 1);
        int64_t pos[] = {0, 1, 2, 7, 3, 100};
        aref a = {.m = &m, .batch = bt, .t = t, .x = x, .pos = pos, .embed_scale = 1,
                  .scheme = SC_SIN, .base = 10000, .score_scale = 1.0 / 8};
        aref_compute(&a);
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{");
        put_x(&b, x, bt, t, DEFAULT_D);
        sb_puts(&b, ",\"positions\":[[0,1,2],[7,3,100]],"
                    "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"bias\",\"scores\"]}");
        apply_check(s, "POST /apply default batch [2,3,512] per-row positions, all returns", b.s,
                    &a, "default", "sinusoidal", "q,k,v,encoded,bias,scores");
        sb_free(&b);
        aref_free(&a);

        /* explicit score_scale, embed_scale sqrt(512), base64 out */
        aref a2 = {.m = &m, .batch = bt, .t = t, .x = x, .pos = pos, .embed_scale = sqrt(512.0),
                   .scheme = SC_SIN, .base = 10000, .score_scale = 0.25};
        aref_compute(&a2);
        sb_init(&b);
        sb_puts(&b, "{");
        put_x(&b, x, bt, t, DEFAULT_D);
        sb_printf(&b, ",\"positions\":[[0,1,2],[7,3,100]],\"embed_scale\":%.17g,"
                      "\"params\":{\"score_scale\":0.25},\"encoding\":\"base64\","
                      "\"return\":[\"q\",\"scores\",\"encoded\"]}",
                  sqrt(512.0));
        apply_check(s, "POST /apply default embed_scale sqrt(512) score_scale 0.25 base64 out", b.s,
                    &a2, "default", "sinusoidal", "q,scores,encoded");
        sb_free(&b);
        aref_free(&a2);
        free(x);
    }
    /* base64 embeddings in */
    {
        size_t t = 2;
        float *x = xmalloc(t * DEFAULT_D * sizeof *x);
        trng_fill(&g, x, t * DEFAULT_D, -2, 2);
        int64_t pos[] = {1000000, 1000001};
        aref a = {.m = &m, .t = t, .x = x, .pos = pos, .embed_scale = 1, .scheme = SC_SIN,
                  .base = 10000, .score_scale = 1.0 / 8};
        aref_compute(&a);
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{\"embeddings\":");
        sb_base64_floats(&b, x, t * DEFAULT_D);
        sb_puts(&b, ",\"shape\":[2,512],\"offset\":1000000,\"return\":[\"k\",\"encoded\"]}");
        apply_check(s, "POST /apply default base64 in [2,512] offset 1e6", b.s, &a, "default",
                    "sinusoidal", "k,encoded");
        sb_free(&b);
        aref_free(&a);
        free(x);
    }
}

/* ---------------------------------------------------------------------- */
/* Inline models                                                           */
/* ---------------------------------------------------------------------- */

static float *rand_vec(trng *g, size_t n, float lo, float hi)
{
    float *v = xmalloc(n * sizeof *v);
    trng_fill(g, v, n, lo, hi);
    return v;
}

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

    /* layernorm (default eps 1e-5), biases, sinusoidal split via params */
    tmodel m = {.d = d, .heads = 2, .kv_heads = 2, .hd = 4, .scheme = "sinusoidal",
                .params = "{\"layout\":\"split\"}", .norm = 1, .wq = wq, .wk = wk, .wv = wv,
                .bq = bq, .bk = bk, .bv = bv, .nw = nw, .nb = nbias};
    int64_t pos[] = {1, 2, 3};
    aref a = {.m = &m, .t = 3, .x = x, .pos = pos, .embed_scale = 1.5, .scheme = SC_SIN,
              .base = 10000, .split = true, .score_scale = 0.5};
    aref_compute(&a);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &m);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"offset\":1,\"embed_scale\":1.5,"
                "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"scores\"]}");
    apply_check(s, "POST /apply inline layernorm+biases, split sinusoidal, embed_scale 1.5", b.s,
                &a, "inline", "sinusoidal", "q,k,v,encoded,scores");
    sb_free(&b);
    aref_free(&a);

    /* the same model with every weight in base64 */
    m.base64 = true;
    aref_compute(&a);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &m);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"offset\":1,\"embed_scale\":1.5,"
                "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"scores\"]}");
    apply_check(s, "POST /apply inline layernorm, weights as base64 with <name>_shape", b.s, &a,
                "inline", "sinusoidal", "q,k,v,encoded,scores");
    sb_free(&b);
    aref_free(&a);
    m.base64 = false;

    /* rmsnorm, explicit eps, GQA 4 heads over 2 kv heads, rope (half) */
    float *wk2 = rand_vec(&g, 8 * 4, -0.5f, 0.5f), *wv2 = rand_vec(&g, 8 * 4, -0.5f, 0.5f);
    tmodel r = {.d = d, .heads = 4, .kv_heads = 2, .hd = 2, .scheme = "rope", .norm = 2,
                .eps = 1e-3, .wq = wq, .wk = wk2, .wv = wv2, .nw = nw};
    int64_t pb[] = {0, 5, 9, 3, 4, 1000};
    aref ar = {.m = &r, .batch = 2, .t = 3, .x = x, .pos = pb, .embed_scale = 1,
               .scheme = SC_ROPE, .rope = {.base = 10000, .rotary_dim = 2},
               .score_scale = 1 / sqrt(2.0)};
    aref_compute(&ar);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &r);
    sb_puts(&b, ",");
    put_x(&b, x, 2, 3, d);
    sb_puts(&b, ",\"positions\":[[0,5,9],[3,4,1000]],\"embed_scale\":7,"
                "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"bias\",\"scores\"]}");
    apply_check(s, "POST /apply inline rmsnorm eps 1e-3, GQA 4/2, rope half, batch (embed_scale "
                   "ignored)",
                b.s, &ar, "inline", "rope", "q,k,v,encoded,bias,scores");
    sb_free(&b);
    aref_free(&ar);

    /* rope with head_dim 4, interleaved through the request's params,
     * which override the model's key by key (base 100 stays). */
    tmodel r2 = {.d = d, .heads = 2, .kv_heads = 1, .hd = 4, .scheme = "rope",
                 .params = "{\"base\":100,\"layout\":\"half\"}", .wq = wq, .wk = wk2, .wv = wv2};
    int64_t p3[] = {3, 8, 2};
    aref a2 = {.m = &r2, .t = 3, .x = x, .pos = p3, .scheme = SC_ROPE,
               .rope = {.base = 100, .rotary_dim = 4, .interleaved = true},
               .score_scale = 0.5};
    aref_compute(&a2);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &r2);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"positions\":[3,8,2],\"params\":{\"layout\":\"interleaved\"},"
                "\"return\":[\"q\",\"k\",\"v\",\"scores\"]}");
    apply_check(s, "POST /apply rope model base 100, request layout interleaved (key override)",
                b.s, &a2, "inline", "rope", "q,k,v,scores");
    sb_free(&b);
    aref_free(&a2);

    /* partial rotary in /apply: rotary_dim 2 of head_dim 4 */
    tmodel r3 = r2;
    r3.params = "{\"rotary_dim\":2}";
    aref a3 = {.m = &r3, .t = 3, .x = x, .pos = p3, .scheme = SC_ROPE,
               .rope = {.base = 10000, .rotary_dim = 2}, .score_scale = 0.5};
    aref_compute(&a3);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &r3);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"positions\":[3,8,2],\"return\":[\"q\",\"k\",\"v\"]}");
    apply_check(s, "POST /apply rope rotary_dim 2 of head_dim 4", b.s, &a3, "inline", "rope",
                "q,k,v");
    sb_free(&b);
    aref_free(&a3);

    /* a request scheme different from the model's starts from its own
     * defaults: sinusoidal base 10000, not the rope model's base 100 */
    aref a4 = {.m = &r2, .t = 3, .x = x, .pos = p3, .embed_scale = 1, .scheme = SC_SIN,
               .base = 10000, .score_scale = 0.5};
    aref_compute(&a4);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &r2);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"positions\":[3,8,2],\"scheme\":\"sinusoidal\",\"return\":[\"encoded\",\"q\"]}");
    apply_check(s, "POST /apply rope model with request scheme sinusoidal (its defaults)", b.s,
                &a4, "inline", "sinusoidal", "encoded,q");
    sb_free(&b);
    aref_free(&a4);

    free(wk2);
    free(wv2);
    free(wq);
    free(wk);
    free(wv);
    free(bq);
    free(bk);
    free(bv);
    free(nw);
    free(nbias);
    free(x);
}

static void apply_relative_and_tables(const server *s)
{
    trng g;
    trng_seed(&g, 61);
    size_t d = 8;
    float *wq = rand_vec(&g, 64, -0.5f, 0.5f), *wk = rand_vec(&g, 64, -0.5f, 0.5f),
          *wv = rand_vec(&g, 64, -0.5f, 0.5f);
    float *x = rand_vec(&g, 2 * 4 * d, -2, 2);
    sbuf b;

    /* alibi model, 4 heads of 2 (non power of two handled in /encode) */
    tmodel ma = {.d = d, .heads = 4, .kv_heads = 4, .hd = 2, .scheme = "alibi",
                 .params = "{\"form\":\"bloom\"}", .wq = wq, .wk = wk, .wv = wv};
    int64_t pa[] = {0, 1, 2, 3};
    aref aa = {.m = &ma, .t = 4, .x = x, .pos = pa, .scheme = SC_ALIBI, .bloom = true,
               .score_scale = 1 / sqrt(2.0)};
    aref_compute(&aa);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &ma);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 4, d);
    sb_puts(&b, ",\"return\":[\"bias\",\"scores\",\"q\"]}");
    apply_check(s, "POST /apply alibi bloom model: bias and scores", b.s, &aa, "inline", "alibi",
                "bias,scores,q");
    sb_free(&b);
    aref_free(&aa);

    /* 6 heads alibi symmetric, batched */
    float *wq6 = rand_vec(&g, 8 * 12, -0.5f, 0.5f), *wk6 = rand_vec(&g, 8 * 12, -0.5f, 0.5f),
          *wv6 = rand_vec(&g, 8 * 12, -0.5f, 0.5f);
    tmodel m6 = {.d = d, .heads = 6, .kv_heads = 6, .hd = 2, .scheme = "alibi", .wq = wq6,
                 .wk = wk6, .wv = wv6};
    int64_t p6[] = {0, 1, 2, 3, 10, 20, 30, 41};
    aref a6 = {.m = &m6, .batch = 2, .t = 4, .x = x, .pos = p6, .scheme = SC_ALIBI,
               .score_scale = 1 / sqrt(2.0)};
    aref_compute(&a6);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &m6);
    sb_puts(&b, ",");
    put_x(&b, x, 2, 4, d);
    sb_puts(&b, ",\"positions\":[[0,1,2,3],[10,20,30,41]],\"return\":[\"bias\",\"scores\"]}");
    apply_check(s, "POST /apply alibi 6 heads symmetric, batch", b.s, &a6, "inline", "alibi",
                "bias,scores");
    sb_free(&b);
    aref_free(&a6);
    free(wq6);
    free(wk6);
    free(wv6);

    /* t5: scores use scale 1 by default; explicit score_scale 0.5 */
    float t5tab[32 * 2];
    for (int i = 0; i < 64; i++)
        t5tab[i] = trng_uniform(&g, -3, 3);
    tmodel mt = {.d = d, .heads = 2, .kv_heads = 2, .hd = 4, .scheme = "t5", .wq = wq, .wk = wk,
                 .wv = wv, .t5 = t5tab, .t5_buckets = 32};
    int64_t pt[] = {0, 9, 40, 200};
    aref at = {.m = &mt, .t = 4, .x = x, .pos = pt, .scheme = SC_T5, .bidir = true,
               .num_buckets = 32, .max_distance = 128, .score_scale = 1};
    aref_compute(&at);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &mt);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 4, d);
    sb_puts(&b, ",\"positions\":[0,9,40,200],\"return\":[\"bias\",\"scores\",\"k\"]}");
    apply_check(s, "POST /apply t5 model: scores with scale 1", b.s, &at, "inline", "t5",
                "bias,scores,k");
    sb_free(&b);
    aref_free(&at);
    at.score_scale = 0.5;
    aref_compute(&at);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &mt);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 4, d);
    sb_puts(&b, ",\"positions\":[0,9,40,200],\"params\":{\"score_scale\":0.5},"
                "\"return\":[\"scores\"]}");
    apply_check(s, "POST /apply t5 model: params.score_scale 0.5", b.s, &at, "inline", "t5",
                "scores");
    sb_free(&b);
    aref_free(&at);

    /* learned table model */
    float *table = rand_vec(&g, 6 * d, -1, 1);
    tmodel ml = {.d = d, .heads = 2, .kv_heads = 2, .hd = 4, .scheme = "learned", .wq = wq,
                 .wk = wk, .wv = wv, .pos_table = table, .pt_rows = 6};
    int64_t pl[] = {2, 3, 4};
    aref al = {.m = &ml, .t = 3, .x = x, .pos = pl, .embed_scale = 1, .scheme = SC_LEARNED,
               .score_scale = 0.5};
    aref_compute(&al);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &ml);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"offset\":2,\"return\":[\"encoded\",\"q\",\"k\",\"v\"]}");
    apply_check(s, "POST /apply learned model offset 2", b.s, &al, "inline", "learned",
                "encoded,q,k,v");
    sb_free(&b);
    aref_free(&al);

    /* none: z = x exactly */
    tmodel mn = ml;
    mn.scheme = "none";
    mn.pos_table = NULL;
    aref an = {.m = &mn, .t = 3, .x = x, .pos = pl, .scheme = SC_NONE, .score_scale = 0.5};
    aref_compute(&an);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &mn);
    sb_puts(&b, ",");
    put_x(&b, x, 0, 3, d);
    sb_puts(&b, ",\"embed_scale\":3,\"return\":[\"encoded\",\"q\",\"scores\"]}");
    apply_check(s, "POST /apply none model (embed_scale ignored)", b.s, &an, "inline", "none",
                "encoded,q,scores");
    sb_free(&b);
    aref_free(&an);

    /* token_ids with token_embedding, batched, embed_scale 2 */
    float *emb = rand_vec(&g, 6 * d, -1, 1);
    tmodel me = {.d = d, .heads = 2, .kv_heads = 2, .hd = 4, .scheme = "sinusoidal", .wq = wq,
                 .wk = wk, .wv = wv, .emb = emb, .vocab = 6};
    static const int ids[] = {1, 5, 0, 2, 2, 3};
    float xe[6 * 8];
    for (int i = 0; i < 6; i++)
        memcpy(xe + i * 8, emb + ids[i] * 8, 8 * sizeof(float));
    int64_t pe[] = {0, 1, 2, 0, 1, 2};
    aref ae = {.m = &me, .batch = 2, .t = 3, .x = xe, .pos = pe, .embed_scale = 2,
               .scheme = SC_SIN, .base = 10000, .score_scale = 0.5};
    aref_compute(&ae);
    sb_init(&b);
    sb_puts(&b, "{\"model\":");
    tmodel_json(&b, &me);
    sb_puts(&b, ",\"token_ids\":[[1,5,0],[2,2,3]],\"embed_scale\":2,"
                "\"return\":[\"encoded\",\"q\",\"v\"]}");
    apply_check(s, "POST /apply token_ids [[1,5,0],[2,2,3]] with token_embedding", b.s, &ae,
                "inline", "sinusoidal", "encoded,q,v");
    sb_free(&b);
    aref_free(&ae);

    /* token id out of range: 422 naming the index */
    {
        const char *L = "POST /apply token_ids [1,6,0] with vocab 6";
        sb_init(&b);
        sb_puts(&b, "{\"model\":");
        tmodel_json(&b, &me);
        sb_puts(&b, ",\"token_ids\":[1,6,0]}");
        http_resp r;
        http_post_json(s, "/apply", b.s, &r);
        if (expect_error(L, &r, 422, "out_of_range", "token_ids[1]")) {
            const char *msg = jstr(json_object_get(r.json, "error"), "message");
            CHECK(msg && strstr(msg, "6"), L, "message should name id 6: %s", msg ? msg : "");
        }
        http_resp_free(&r);
        sb_free(&b);
        L = "POST /apply token_ids [[0,1],[2,-1]] (negative id)";
        sb_init(&b);
        sb_puts(&b, "{\"model\":");
        tmodel_json(&b, &me);
        sb_puts(&b, ",\"token_ids\":[[0,1],[2,-1]]}");
        http_post_json(s, "/apply", b.s, &r);
        expect_error(L, &r, 422, "out_of_range", "token_ids[1][1]");
        http_resp_free(&r);
        sb_free(&b);
    }
    free(emb);
    free(table);
    free(wq);
    free(wk);
    free(wv);
    free(x);
}

void test_apply(const server *s, const default_model *dm)
{
    apply_default(s, dm);
    apply_norms(s);
    apply_relative_and_tables(s);
}

/*
 * test_fields.c - contract 1.2 "Array names and shapes, the same
 * everywhere" over HTTP: a base64 `embeddings` is shaped by
 * `embeddings_shape` on /encode, /apply and /diagnose (and by its alias
 * `shape`), and the answers are the formulas' values, computed here from
 * the references (refs.h). The refusals (both names given, a shape without
 * its array) are data: tests/http/cases/errors/400-invalid_request-*-shape-*.
 */
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

enum { FT = 3 };       /* tokens of every case */
#define FIELD_REL 2e-5 /* as test_apply.c's projections */
#define FIELD_ABS 1e-6

/* {"embeddings": base64 of x [rows][d], "<shape_key>": shape, <tail>} */
static char *shaped_body(const float *x, size_t rows, size_t d, const size_t *shape, int ndim,
                         const char *shape_key, const char *tail)
{
    sbuf b;

    sb_init(&b);
    sb_puts(&b, "{\"embeddings\":");
    sb_base64_floats(&b, x, rows * d);
    sb_printf(&b, ",\"%s\":[", shape_key);
    for (int i = 0; i < ndim; i++)
        sb_printf(&b, "%s%zu", i ? "," : "", shape[i]);
    sb_printf(&b, "]%s}", tail);
    return b.s;
}

/* /encode, batched [2][FT][6], sinusoidal: embed_scale·x + PE per row. */
static void encode_cases(const server *s)
{
    enum { B = 2, D = 6 };
    static const size_t shape[3] = {B, FT, D};
    static const char *const keys[] = {"embeddings_shape", "shape"};
    float x[B * FT * D];
    double want[B * FT * D];
    int64_t pos[B * FT];
    trng r;

    trng_seed(&r, 1717);
    trng_fill(&r, x, B * FT * D, -2.0f, 2.0f);
    for (size_t i = 0; i < B * FT; i++)
        pos[i] = (int64_t)(i % FT);
    ref_absolute_sinusoidal(x, 1.0, 10000.0L, false, pos, B * FT, D, want);
    for (size_t k = 0; k < 2; k++) {
        char label[64];
        snprintf(label, sizeof label, "/encode base64 with %s", keys[k]);
        char *body = shaped_body(x, B * FT, D, shape, 3, keys[k], "");
        post_compare(s, "/encode", label, body, "encoded", 3, shape, want, ABS_ONCE, ULPS_ONCE);
        free(body);
    }
}

/* The default model's q of x [FT][512] under `scheme` none (z = x) or
 * sinusoidal (z = round(x + PE)), in double. *z_out gets z (caller frees). */
static double *default_q(const default_model *dm, const float *x, bool sinusoidal, float **z_out)
{
    size_t n = FT * DEFAULT_D;
    float *z = xmalloc(n * sizeof *z);
    double *q = xmalloc(n * sizeof *q);

    if (sinusoidal) {
        int64_t pos[FT] = {0, 1, 2};
        double *zd = xmalloc(n * sizeof *zd);
        ref_absolute_sinusoidal(x, 1.0, 10000.0L, false, pos, FT, DEFAULT_D, zd);
        ref_round_f32(zd, n, z);
        free(zd);
    } else {
        memcpy(z, x, n * sizeof *z);
    }
    ref_project(z, FT, DEFAULT_D, dm->wq, DEFAULT_D, NULL, q);
    *z_out = z;
    return q;
}

/* /apply on the default model with base64 embeddings + embeddings_shape. */
static void apply_case(const server *s, const default_model *dm, const float *x)
{
    static const size_t shape[2] = {FT, DEFAULT_D};
    float *z;
    double *q = default_q(dm, x, false, &z);
    http_resp resp;
    farr got;

    char *body = shaped_body(x, FT, DEFAULT_D, shape, 2, "embeddings_shape",
                             ",\"scheme\":\"none\",\"return\":[\"q\"]");
    if (post_read(s, "/apply", "/apply base64 with embeddings_shape", body, "q", 2, shape, &resp,
                  &got)) {
        check_close_rownorm("/apply base64 with embeddings_shape", "q", &got, q, FT * DEFAULT_D,
                            DEFAULT_D, FIELD_REL, FIELD_ABS);
        farr_free(&got);
    }
    http_resp_free(&resp);
    free(body);
    free(q);
    free(z);
}

/* POST a /diagnose body; expect 200 and `verdict`. */
static void expect_verdict(const server *s, const char *label, const char *body,
                           const char *verdict)
{
    http_resp r;

    http_post_json(s, "/diagnose", body, &r);
    if (expect_ok(label, &r)) {
        const char *v = jstr(r.json, "verdict");
        CHECK(v && strcmp(v, verdict) == 0, label, "verdict %s, want %s (body: %.400s)",
              v ? v : "(none)", verdict, r.body);
    }
    http_resp_free(&r);
}

/* /diagnose: a q subject and an encoded subject whose base64 embeddings
 * are shaped by embeddings_shape; both are the claim's own values. */
static void diagnose_cases(const server *s, const default_model *dm, const float *x)
{
    static const size_t shape[2] = {FT, DEFAULT_D};
    size_t n = FT * DEFAULT_D;
    float *z;
    double *q = default_q(dm, x, true, &z);
    float *qf = xmalloc(n * sizeof *qf);
    sbuf tail;

    ref_round_f32(q, n, qf);
    sb_init(&tail);
    sb_puts(&tail, ",\"scheme\":\"sinusoidal\",\"q\":");
    sb_farray(&tail, qf, 2, shape);
    char *body = shaped_body(x, FT, DEFAULT_D, shape, 2, "embeddings_shape", tail.s);
    expect_verdict(s, "/diagnose q subject, base64 embeddings with embeddings_shape", body,
                   "match");
    free(body);
    sb_free(&tail);
    sb_init(&tail);
    sb_puts(&tail, ",\"scheme\":\"sinusoidal\",\"encoded\":");
    sb_farray(&tail, z, 2, shape);
    body = shaped_body(x, FT, DEFAULT_D, shape, 2, "embeddings_shape", tail.s);
    expect_verdict(s, "/diagnose encoded subject, base64 embeddings with embeddings_shape", body,
                   "match");
    free(body);
    sb_free(&tail);
    free(qf);
    free(q);
    free(z);
}

void test_fields(const server *s, const default_model *dm)
{
    float *x = xmalloc(FT * DEFAULT_D * sizeof *x);
    trng r;

    trng_seed(&r, 1718);
    trng_fill(&r, x, FT * DEFAULT_D, -1.0f, 1.0f);
    encode_cases(s);
    apply_case(s, dm, x);
    diagnose_cases(s, dm, x);
    free(x);
}

/*
 * test_diagnose_batch.c - /diagnose subjects with batch axes (contract 1.2
 * "/diagnose, version 2", subjects of any batch shape), over HTTP: the
 * layouts real code hands over, computed here in double from the RoPE
 * formula (half layout, as GPT-NeoX and Hugging Face Llama rotate):
 *   - a cos/sin cache [1][1][seq][dim] stored in float16 (GPT-NeoX);
 *   - cos/sin [batch][seq][dim] whose rows sit at different positions, with
 *     positions [batch][seq] claimed, and without them;
 *   - embeddings/encoded [batch][heads][tokens][head_dim] with axes "bhtd"
 *     (PyTorch's q.view(b, t, h, hd).transpose(1, 2));
 *   - embeddings whose batch rows are equal with encoded rows that differ;
 *   - a bias whose batch rows differ: refused, never read from one row.
 * Run as part of the "diagnose" group (test_diagnose_v2 calls it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

enum { B = 2, H = 2, T = 24, HD = 16, W = H * HD };

/* The rotation angle of pair i at position p, base `base`, head_dim HD. */
static double angle_at(double p, size_t i, double base)
{
    return p * pow(base, -2.0 * (double)i / (double)HD);
}

static double angle(double p, size_t i)
{
    return angle_at(p, i, 10000.0);
}

/* cos/sin of cat(freqs, freqs) at positions pos[T] into c[T][HD], s[T][HD];
 * half: round the values to float16. */
static void cache_rows(const double *pos, bool half, float *c, float *s)
{
    for (size_t t = 0; t < T; t++)
        for (size_t col = 0; col < HD; col++) {
            double a = angle(pos[t], col % (HD / 2));
            c[t * HD + col] = half ? (float)(_Float16)cos(a) : (float)cos(a);
            s[t * HD + col] = half ? (float)(_Float16)sin(a) : (float)sin(a);
        }
}

/* The start of a rope cache request: claim head_dim 16, cos and sin. */
static void put_cache(sbuf *b, const float *c, const float *sn, int ndim, const size_t *shape)
{
    sb_init(b);
    sb_puts(b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":16},\"cos\":");
    sb_farray(b, c, ndim, shape);
    sb_puts(b, ",\"sin\":");
    sb_farray(b, sn, ndim, shape);
}

static bool post_body(const server *s, const char *label, sbuf *b, const char *verdict,
                      http_resp *r)
{
    http_post_json(s, "/diagnose", b->s, r);
    sb_free(b);
    if (!expect_ok(label, r))
        return false;
    const char *v = jstr(r->json, "verdict");
    CHECK(v && strcmp(v, verdict) == 0, label, "verdict %s, want %s (body: %.600s)",
          v ? v : "(none)", verdict, r->body);
    return v && strcmp(v, verdict) == 0;
}

static void fp16_cache_1_1(const server *s)
{
    static float c[T * HD], sn[T * HD];
    double pos[T];
    for (size_t t = 0; t < T; t++)
        pos[t] = (double)t;
    cache_rows(pos, true, c, sn);
    const char *label = "batch: fp16 cos/sin [1][1][seq][dim] -> low_precision";
    size_t shape[] = {1, 1, T, HD};
    sbuf b;
    put_cache(&b, c, sn, 4, shape);
    sb_puts(&b, "}");
    http_resp r;
    if (post_body(s, label, &b, "explained", &r))
        CHECK(diagnose_finding(&r, "low_precision") &&
                  json_array_size(json_object_get(r.json, "findings")) == 1,
              label, "low_precision alone: %.500s", r.body);
    http_resp_free(&r);
}

/* Row 0 at 0..T-1, row 1 left-padded by 5 (pads at 1, then 0..). */
static void per_row_positions(const server *s, bool claimed)
{
    static float c[B * T * HD], sn[B * T * HD];
    double pos[B][T];
    for (size_t t = 0; t < T; t++) {
        pos[0][t] = (double)t;
        pos[1][t] = t < 5 ? 1.0 : (double)(t - 5);
    }
    for (size_t r = 0; r < B; r++)
        cache_rows(pos[r], false, c + r * T * HD, sn + r * T * HD);
    const char *label = claimed ? "batch: cos/sin [2][seq][dim], positions [2][seq] -> match"
                                : "batch: cos/sin [2][seq][dim] at other positions, claimed "
                                  "0.. -> positions_mismatch";
    size_t shape[] = {B, T, HD};
    sbuf b;
    put_cache(&b, c, sn, 3, shape);
    if (claimed) {
        sb_puts(&b, ",\"positions\":[");
        for (size_t r = 0; r < B; r++)
            for (size_t t = 0; t < T; t++)
                sb_printf(&b, "%s%.0f%s",
                          t   ? ","
                          : r ? ",["
                              : "[",
                          pos[r][t], t + 1 < T ? "" : "]");
        sb_puts(&b, "]");
    }
    sb_puts(&b, "}");
    http_resp r;
    bool ok = post_body(s, label, &b, claimed ? "match" : "explained", &r);
    if (ok) { /* best.positions per row, as /encode reads [batch][tokens] */
        const json_t *bp = json_object_get(json_object_get(r.json, "best"), "positions");
        const json_t *row1 = json_array_get(bp, 1);
        CHECK(json_array_size(bp) == B && json_array_size(row1) == T &&
                  json_integer_value(json_array_get(row1, 0)) == 1 &&
                  json_integer_value(json_array_get(row1, T - 1)) == T - 6,
              label, "best.positions [2][%d] with row 1 from 1 to %d: %.300s", T, T - 6, r.body);
    }
    if (ok && !claimed) {
        const json_t *f = diagnose_finding(&r, "positions_mismatch");
        const json_t *found = json_object_get(json_object_get(f, "evidence"), "positions");
        CHECK(f != NULL, label, "positions_mismatch among %.500s", r.body);
        /* the positions found, flat or per row, end with row 1's */
        size_t n = json_array_size(found);
        const json_t *last = n ? json_array_get(found, n - 1) : NULL;
        if (json_is_array(last))
            last = json_array_get(last, json_array_size(last) - 1);
        CHECK(json_integer_value(last) == T - 6, label, "last position found %lld, want %d",
              (long long)json_integer_value(last), T - 6);
        /* row 0 is right under the claim: only row 1 is the finding's */
        const json_t *rows = json_object_get(json_object_get(f, "evidence"), "rows");
        CHECK(json_array_size(rows) == 1 && json_integer_value(json_array_get(rows, 0)) == 1, label,
              "evidence.rows [1]: %.500s", r.body);
    }
    http_resp_free(&r);
}

/* Two equal rows of a cos/sin cache at 0..T-1, the claim's positions per
 * row with row 1 shifted: the rows are read one by one (not folded), and
 * only row 1 is wrong (evidence.rows [1]). */
static void equal_rows_per_row_claim(const server *s)
{
    static float c[B * T * HD], sn[B * T * HD];
    double pos[T];
    for (size_t t = 0; t < T; t++)
        pos[t] = (double)t;
    for (size_t r = 0; r < B; r++)
        cache_rows(pos, false, c + r * T * HD, sn + r * T * HD);
    const char *label = "batch: equal cos/sin rows, positions [2][seq] with row 1 claimed +3";
    size_t shape[] = {B, T, HD};
    sbuf b;
    put_cache(&b, c, sn, 3, shape);
    sb_puts(&b, ",\"positions\":[[");
    for (size_t t = 0; t < T; t++)
        sb_printf(&b, "%s%zu", t ? "," : "", t);
    sb_puts(&b, "],[");
    for (size_t t = 0; t < T; t++)
        sb_printf(&b, "%s%zu", t ? "," : "", t + 3);
    sb_puts(&b, "]]}");
    http_resp r;
    if (post_body(s, label, &b, "explained", &r)) {
        const json_t *f = json_array_get(json_object_get(r.json, "findings"), 0);
        const json_t *rows = json_object_get(json_object_get(f, "evidence"), "rows");
        CHECK(json_array_size(rows) == 1 && json_integer_value(json_array_get(rows, 0)) == 1, label,
              "evidence.rows [1]: %.500s", r.body);
    }
    http_resp_free(&r);
}

/* n values in [-1, 1) from seed. */
static void fill_uniform(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0);
    }
}

/* x[T][W] rotated (half layout, heads of HD, base `base`) at positions
 * first .. first + T - 1 into y[T][W]. */
static void rotate_rows_at(const float *x, double first, double base, float *y)
{
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < HD / 2; i++) {
                double a = angle_at(first + (double)t, i, base);
                size_t ea = t * W + h * HD + i, eb = ea + HD / 2;
                y[ea] = (float)(x[ea] * cos(a) - x[eb] * sin(a));
                y[eb] = (float)(x[eb] * cos(a) + x[ea] * sin(a));
            }
}

static void rotate_rows(const float *x, double first, float *y)
{
    rotate_rows_at(x, first, 10000.0, y);
}

/* [B][T][H][HD] -> [B][H][T][HD] */
static void heads_first(const float *x, float *out)
{
    for (size_t r = 0; r < B; r++)
        for (size_t t = 0; t < T; t++)
            for (size_t h = 0; h < H; h++)
                for (size_t k = 0; k < HD; k++)
                    out[((r * H + h) * T + t) * HD + k] = x[(r * T + t) * W + h * HD + k];
}

/* The error map of a bhtd subject under a claim of base 500000: the
 * subject's own axes [B][H][T][HD], each value |subject - claim| there
 * (before, it came back folded as [B*T][H*HD]); worst.index names the
 * largest of them. */
static void check_bhtd_map(const char *label, const http_resp *r, const float *x, const float *ys)
{
    static float want[B * T * W], want_sent[B * T * W];
    static double err[B * T * W];
    for (size_t b = 0; b < B; b++)
        rotate_rows_at(x + b * T * W, 0, 500000.0, want + b * T * W);
    heads_first(want, want_sent);
    size_t worst = 0;
    for (size_t e = 0; e < B * T * W; e++) {
        err[e] = fabs((double)ys[e] - want_sent[e]);
        worst = err[e] > err[worst] ? e : worst;
    }
    farr map;
    size_t shape[] = {B, H, T, HD};
    if (get_farr(label, r, "error_map", &map) && check_shape(label, "error_map", &map, 4, shape))
        check_close(label, "error_map vs |subject - claim| in [b][h][t][hd]", &map, err, B * T * W,
                    2e-6, 8);
    const json_t *index = json_object_get(json_object_get(json_object_get(r->json, "claimed"),
                                                          "worst"),
                                          "index");
    size_t want_index[] = {worst / (H * T * HD), worst / (T * HD) % H, worst / HD % T, worst % HD};
    bool same = json_array_size(index) == 4;
    for (size_t a = 0; same && a < 4; a++)
        same = (size_t)json_integer_value(json_array_get(index, a)) == want_index[a];
    CHECK(same, label, "claimed.worst.index is [%zu,%zu,%zu,%zu] as sent: %.200s", want_index[0],
          want_index[1], want_index[2], want_index[3], r->body);
    farr_free(&map);
}

/* x[B][T][W] rotated per row (half layout, heads of HD) at 0..T-1, both
 * sent as [B][H][T][HD]. */
static void bhtd(const server *s)
{
    static float x[B * T * W], y[B * T * W], xs[B * T * W], ys[B * T * W];
    fill_uniform(x, B * T * W, 7);
    for (size_t r = 0; r < B; r++)
        rotate_rows(x + r * T * W, 0, y + r * T * W);
    heads_first(x, xs);
    heads_first(y, ys);
    size_t shape[] = {B, H, T, HD};
    for (int variant = 0; variant < 2; variant++) {
        const char *label = variant ? "batch: axes bhtd, claimed base 500000 -> base_mismatch"
                                    : "batch: embeddings/encoded [b][h][t][hd], axes bhtd -> match";
        sbuf b;
        sb_init(&b);
        sb_printf(&b,
                  "{\"scheme\":\"rope\",\"axes\":\"bhtd\",\"params\":{\"head_dim\":16,"
                  "\"base\":%s},%s\"embeddings\":",
                  variant ? "500000" : "10000", variant ? "\"return_map\":true," : "");
        sb_farray(&b, xs, 4, shape);
        sb_puts(&b, ",\"encoded\":");
        sb_farray(&b, ys, 4, shape);
        sb_puts(&b, "}");
        http_resp r;
        if (post_body(s, label, &b, variant ? "explained" : "match", &r) && variant) {
            const json_t *f = diagnose_finding(&r, "base_mismatch");
            double found = json_number_value(
                json_object_get(json_object_get(f, "evidence"), "base"));
            CHECK(f && fabs(found - 10000.0) < 1.0, label, "base found %g: %.400s", found, r.body);
            check_bhtd_map(label, &r, x, ys);
        }
        http_resp_free(&r);
    }
}

/* Embeddings whose two rows are equal, encoded whose row 1 sits 3
 * positions on, the claim's positions the default: both arrays are read
 * row by row (before, the embeddings folded to one row and the encoded
 * did not: 422 "encoded is [48][32] but embeddings are [24][32]"), and
 * only row 1 is the finding's. */
static void equal_embeddings_differing_encoded(const server *s)
{
    static float x[B * T * W], y[B * T * W];
    const char *label = "batch: equal embeddings rows, encoded row 1 at 3.. -> positions_mismatch";
    fill_uniform(x, T * W, 11);
    memcpy(x + T * W, x, T * W * sizeof *x);
    rotate_rows(x, 0, y);
    rotate_rows(x + T * W, 3, y + T * W);
    size_t shape[] = {B, T, W};
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":16},\"embeddings\":");
    sb_farray(&b, x, 3, shape);
    sb_puts(&b, ",\"encoded\":");
    sb_farray(&b, y, 3, shape);
    sb_puts(&b, "}");
    http_resp r;
    if (post_body(s, label, &b, "explained", &r)) {
        const json_t *f = diagnose_finding(&r, "positions_mismatch");
        const json_t *rows = json_object_get(json_object_get(f, "evidence"), "rows");
        CHECK(f && json_array_size(rows) == 1 && json_integer_value(json_array_get(rows, 0)) == 1,
              label, "positions_mismatch with evidence.rows [1]: %.500s", r.body);
    }
    http_resp_free(&r);
}

static void refused(const server *s)
{
    sbuf b;
    http_resp r;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"alibi\",\"bias\":[[[[0,-1],[-1,0]]],[[[0,-2],[-2,0]]]]}");
    http_post_json(s, "/diagnose", b.s, &r);
    expect_error("batch: a bias whose batch rows differ -> 422", &r, 422, "invalid_shape", "bias");
    http_resp_free(&r);
    sb_free(&b);
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",\"axes\":\"bhtd\",\"cos\":[[1,1]],\"sin\":[[0,0]]}");
    http_post_json(s, "/diagnose", b.s, &r);
    expect_error("batch: axes bhtd with a cos/sin subject -> 400", &r, 400, "invalid_request",
                 "axes");
    http_resp_free(&r);
    sb_free(&b);
}

void test_diagnose_batch(const server *s)
{
    fp16_cache_1_1(s);
    per_row_positions(s, true);
    per_row_positions(s, false);
    equal_rows_per_row_claim(s);
    bhtd(s);
    equal_embeddings_differing_encoded(s);
    refused(s);
}

/*
 * test_diagnose_nd.c - /diagnose of claims in more than one dimension over
 * HTTP (contract 1.3): subjects computed here in double from the formulas
 * (multimodal rope: slot j turns by the component its style assigns;
 * vision 2-D rope: each variant's slots), with triples written out by hand
 * from Qwen's rule and transformers >= 5.3's. Each explained answer's
 * evidence is read in full, and its `best`, sent back to /encode with the
 * same embeddings, must reproduce the subject (contract: best is an
 * /encode request). Refusals name their field.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

enum { HD = 16, HALF = HD / 2, W = 2 * HD };

/* [text 2][image 1 x 4 x 6][text 2][video 2 x 4 x 4][text 2], merge 2:
 * 2 + 6 + 2 + 8 + 2 = 20 tokens. */
#define LAYOUT                                                                                     \
    "\"mm_layout\":[{\"text\":2},{\"image\":[1,4,6]},{\"text\":2},{\"video\":[2,4,4],"             \
    "\"seconds_per_grid\":1},{\"text\":2}],\"merge\":2"

enum { T = 20 };

/* The layout's triples under Qwen's rule (each segment one past the largest
 * id so far) and transformers >= 5.3's (+max(h, w)/merge after vision),
 * with tokens_per_second 3: frames 3 apart. Written out by hand. */
static const int64_t qwen_ids[T][3] =
    {{0, 0, 0},    {1, 1, 1},                                                 /* text */
     {2, 2, 2},    {2, 2, 3},   {2, 2, 4},  {2, 3, 2},  {2, 3, 3}, {2, 3, 4}, /* image 2 x 3 */
     {5, 5, 5},    {6, 6, 6},                                                 /* text: max 4 + 1 */
     {7, 7, 7},    {7, 7, 8},   {7, 8, 7},  {7, 8, 8},                        /* frame 0 */
     {10, 7, 7},   {10, 7, 8},  {10, 8, 7}, {10, 8, 8},                       /* frame 1: +3 */
     {11, 11, 11}, {12, 12, 12}};                                             /* text: max 10 + 1 */
static const int64_t hf_ids[T][3] = {{0, 0, 0},  {1, 1, 1},   {2, 2, 2},  {2, 2, 3},
                                     {2, 2, 4},  {2, 3, 2},   {2, 3, 3},  {2, 3, 4},
                                     {5, 5, 5},  {6, 6, 6}, /* start 2 + max(2, 3) = 5 */
                                     {7, 7, 7},  {7, 7, 8},   {7, 8, 7},  {7, 8, 8},
                                     {10, 7, 7}, {10, 7, 8},  {10, 8, 7}, {10, 8, 8},
                                     {9, 9, 9},  {10, 10, 10}}; /* start 7 + max(2, 2) = 9 */

typedef enum { CHUNKED, INTERLEAVED, TEXT } style;

/* The component that turns slot j: chunked [4, 2, 2], interleaved with the
 * same section (h at 1, 4 below 6; w at 2, 5 below 6; t elsewhere). */
static int component(style st, size_t j)
{
    if (st == CHUNKED)
        return j < 4 ? 0 : j < 6 ? 1 : 2;
    if (st == INTERLEAVED)
        return j % 3 == 1 && j < 6 ? 1 : j % 3 == 2 && j < 6 ? 2 : 0;
    return 0;
}

/* x rotated per head of HD (rotate-half, base 10000) at triples pos. */
static void mrope(const float *x, const int64_t (*pos)[3], size_t n, style st, float *y)
{
    for (size_t t = 0; t < n; t++)
        for (size_t h0 = 0; h0 < W; h0 += HD)
            for (size_t j = 0; j < HALF; j++) {
                double a = (double)pos[t][component(st, j)] * pow(10000.0, -2.0 * j / HD);
                double x0 = x[t * W + h0 + j], x1 = x[t * W + h0 + j + HALF];
                y[t * W + h0 + j] = (float)(x0 * cos(a) - x1 * sin(a));
                y[t * W + h0 + j + HALF] = (float)(x1 * cos(a) + x0 * sin(a));
            }
}

/* The finding `code` is the answer's only one but low_precision. */
static const json_t *sole_finding(const char *label, const http_resp *r, const char *code)
{
    const json_t *f = diagnose_finding(r, code);
    size_t n = json_array_size(json_object_get(r->json, "findings"));
    CHECK(f && n == 1, label, "findings: want only %s, got %.600s", code, r->body);
    return f;
}

/* best sent to /encode with the embeddings x[T][W] reproduces y. */
static void best_reproduces(const server *s, const char *label, const http_resp *r, const float *x,
                            const float *y, size_t n)
{
    json_t *best = json_deep_copy(json_object_get(r->json, "best"));
    size_t shape[2] = {n, W};
    sbuf emb;
    char what[200];
    double want[T * W];

    snprintf(what, sizeof what, "%s: best sent to /encode", label);
    if (!best) {
        CHECK(false, what, "no best");
        return;
    }
    json_object_del(best, "max_abs_error");
    json_object_del(best, "max_rel_error");
    char *text = json_dumps(best, JSON_COMPACT);
    json_decref(best);
    sb_init(&emb);
    sb_farray(&emb, x, 2, shape);
    size_t len = strlen(text) + emb.len + 32;
    char *body = xmalloc(len);
    snprintf(body, len, "%.*s,\"embeddings\":%s}", (int)strlen(text) - 1, text, emb.s);
    for (size_t i = 0; i < n * W; i++)
        want[i] = y[i];
    post_compare(s, "/encode", what, body, "encoded", 2, shape, want, 1e-4, 0);
    free(body);
    free(text);
    sb_free(&emb);
}

/* The body of a claim: rope with mrope `claim_style`, x and y, then tail. */
static char *mrope_body(const float *x, const float *y, size_t n, const char *claim_style,
                        const char *tail)
{
    size_t shape[2] = {n, W};
    sbuf b;
    sb_init(&b);
    sb_printf(&b,
              "{\"scheme\":\"rope\",\"params\":{\"head_dim\":%d,\"tokens_per_second\":3,"
              "\"mrope\":{\"style\":\"%s\",\"section\":[4,2,2]}},\"embeddings\":",
              HD, claim_style);
    sb_farray(&b, x, 2, shape);
    sb_puts(&b, ",\"encoded\":");
    sb_farray(&b, y, 2, shape);
    sb_printf(&b, ",%s}", tail);
    return b.s;
}

/* evidence.positions is [[the triples of ids]] (one row). */
static void check_triples(const char *label, const json_t *f, const int64_t (*ids)[3])
{
    const json_t *rows = json_object_get(json_object_get(f, "evidence"), "positions");
    const json_t *row = json_array_get(rows, 0);
    bool ok = json_array_size(rows) == 1 && json_array_size(row) == T;
    for (size_t t = 0; ok && t < T; t++)
        for (size_t c = 0; c < 3; c++)
            ok = ok && json_integer_value(json_array_get(json_array_get(row, t), c)) == ids[t][c];
    char *text = json_dumps(rows, JSON_COMPACT); /* new: freed below */
    CHECK(ok, label, "evidence.positions: want the triples found, got %.400s",
          text ? text : "(none)");
    free(text);
}

static void mm_rule_found(const server *s, const float *x)
{
    float y[T * W];
    http_resp r;
    const char *label = "diagnose nd: transformers >= 5.3 subject, claimed with mm_rule qwen";

    mrope(x, hf_ids, T, CHUNKED, y);
    char *body = mrope_body(x, y, T, "chunked", LAYOUT ",\"mm_rule\":\"qwen\"");
    if (expect_diagnosis(s, label, body, "explained", &r)) {
        const json_t *f = sole_finding(label, &r, "positions_mismatch");
        const json_t *ev = json_object_get(f, "evidence");
        CHECK(f && jstr(ev, "pattern") && strcmp(jstr(ev, "pattern"), "mm_rule") == 0 &&
                  jstr(ev, "mm_rule") && strcmp(jstr(ev, "mm_rule"), "hf") == 0,
              label, "evidence: want pattern mm_rule, mm_rule hf: %.400s", r.body);
        if (f)
            check_triples(label, f, hf_ids);
        best_reproduces(s, label, &r, x, y, T);
    }
    http_resp_free(&r);
    free(body);
    label = "diagnose nd: the same claimed with mm_rule hf is match";
    body = mrope_body(x, y, T, "chunked", LAYOUT ",\"mm_rule\":\"hf\"");
    if (expect_diagnosis(s, label, body, "match", &r))
        CHECK(json_array_size(json_object_get(r.json, "findings")) == 0, label, "findings: %.300s",
              r.body);
    http_resp_free(&r);
    free(body);
}

static void style_found(const server *s, const float *x)
{
    float y[T * W];
    http_resp r;
    const char *label = "diagnose nd: interleaved subject claimed chunked";

    mrope(x, qwen_ids, T, INTERLEAVED, y);
    char *body = mrope_body(x, y, T, "chunked", LAYOUT ",\"mm_rule\":\"qwen\"");
    if (expect_diagnosis(s, label, body, "explained", &r)) {
        const json_t *f = sole_finding(label, &r, "mrope_mismatch");
        const json_t *ev = json_object_get(f, "evidence"), *sec = json_object_get(ev, "section");
        CHECK(f && jstr(ev, "style") && strcmp(jstr(ev, "style"), "interleaved") == 0 &&
                  json_integer_value(json_array_get(sec, 0)) == 4 &&
                  json_integer_value(json_array_get(sec, 1)) == 2 &&
                  json_integer_value(json_array_get(sec, 2)) == 2,
              label, "evidence: want style interleaved, section [4, 2, 2]: %.400s", r.body);
        best_reproduces(s, label, &r, x, y, T);
    }
    http_resp_free(&r);
    free(body);
}

static void text_found(const server *s, const float *x)
{
    int64_t flat[T][3];
    float y[T * W];
    http_resp r;
    const char *label = "diagnose nd: every token turned as text, claimed with vision triples";

    for (size_t t = 0; t < T; t++)
        flat[t][0] = flat[t][1] = flat[t][2] = (int64_t)t;
    mrope(x, flat, T, TEXT, y);
    char *body = mrope_body(x, y, T, "chunked", LAYOUT ",\"mm_rule\":\"qwen\"");
    if (expect_diagnosis(s, label, body, "explained", &r)) {
        const json_t *f = sole_finding(label, &r, "mrope_mismatch");
        const json_t *ev = json_object_get(f, "evidence");
        const json_t *row = json_array_get(json_object_get(ev, "positions"), 0);
        bool ok = f && jstr(ev, "style") && strcmp(jstr(ev, "style"), "text") == 0 &&
                  json_array_size(json_object_get(ev, "positions")) == 1 &&
                  json_array_size(row) == T;
        for (size_t t = 0; ok && t < T; t++)
            ok = json_integer_value(json_array_get(row, t)) == (json_int_t)t;
        CHECK(ok, label, "evidence: want style text, positions [[0 .. %d]]: %.500s", T - 1, r.body);
        CHECK(!json_object_get(json_object_get(json_object_get(r.json, "best"), "params"), "mrope"),
              label, "best.params has no mrope (1-D rope): %.300s", r.body);
        best_reproduces(s, label, &r, x, y, T);
    }
    http_resp_free(&r);
    free(body);
}

/* Triples of another derivation, claimed explicitly (no layout): the
 * video's frames 1 apart and the text after it one past them. */
static void triples_found(const server *s, const float *x)
{
    int64_t got[T][3];
    float y[T * W];
    http_resp r;
    sbuf claim;
    const char *label = "diagnose nd: frames 1 apart where the claim has 3, read off the phases";

    memcpy(got, qwen_ids, sizeof got);
    for (size_t t = 14; t < 18; t++)
        got[t][0] = 8; /* frame 1 at 7 + 1 */
    got[18][0] = got[18][1] = got[18][2] = 9;
    got[19][0] = got[19][1] = got[19][2] = 10;
    mrope(x, got, T, CHUNKED, y);
    sb_init(&claim);
    sb_puts(&claim, "\"positions\":[");
    for (size_t t = 0; t < T; t++)
        sb_printf(&claim, "%s[%lld,%lld,%lld]", t ? "," : "", (long long)qwen_ids[t][0],
                  (long long)qwen_ids[t][1], (long long)qwen_ids[t][2]);
    sb_puts(&claim, "]");
    char *body = mrope_body(x, y, T, "chunked", claim.s);
    if (expect_diagnosis(s, label, body, "explained", &r)) {
        const json_t *f = sole_finding(label, &r, "positions_mismatch");
        const json_t *ev = json_object_get(f, "evidence");
        CHECK(f && jstr(ev, "pattern") && strcmp(jstr(ev, "pattern"), "other") == 0 &&
                  !json_object_get(ev, "mm_rule"),
              label, "evidence: want pattern other, no mm_rule: %.400s", r.body);
        if (f)
            check_triples(label, f, (const int64_t(*)[3])got);
        best_reproduces(s, label, &r, x, y, T);
    }
    http_resp_free(&r);
    sb_free(&claim);
    free(body);
}

/* vLLM's cache: cos/sin [T][HD/2] at the triples, section [2, 2, 4] read as
 * [4, 2, 2]. */
static void cache_section_found(const server *s)
{
    float c[T * HALF], sn[T * HALF];
    size_t shape[2] = {T, HALF};
    http_resp r;
    sbuf b;
    const char *label = "diagnose nd: cos/sin [T][rot/2] of section [2, 2, 4], claimed [4, 2, 2]";

    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < HALF; j++) {
            int comp = j < 2 ? 0 : j < 4 ? 1 : 2;
            double a = (double)qwen_ids[t][comp] * pow(10000.0, -2.0 * j / HD);
            c[t * HALF + j] = (float)cos(a);
            sn[t * HALF + j] = (float)sin(a);
        }
    sb_init(&b);
    sb_printf(&b,
              "{\"scheme\":\"rope\",\"params\":{\"head_dim\":%d,\"tokens_per_second\":3,"
              "\"mrope\":{\"section\":[4,2,2]}},\"cos\":",
              HD);
    sb_farray(&b, c, 2, shape);
    sb_puts(&b, ",\"sin\":");
    sb_farray(&b, sn, 2, shape);
    sb_puts(&b, "," LAYOUT ",\"mm_rule\":\"qwen\"}");
    if (expect_diagnosis(s, label, b.s, "explained", &r)) {
        const json_t *f = sole_finding(label, &r, "mrope_mismatch");
        const json_t *sec = json_object_get(json_object_get(f, "evidence"), "section");
        CHECK(f && json_integer_value(json_array_get(sec, 0)) == 2 &&
                  json_integer_value(json_array_get(sec, 1)) == 2 &&
                  json_integer_value(json_array_get(sec, 2)) == 4,
              label, "evidence.section: want [2, 2, 4]: %.400s", r.body);
    }
    http_resp_free(&r);
    sb_free(&b);
}

/* Two batch rows, the second left-padded by 2 (its pads at [0, 0, 0]), both
 * turned by the other rule: evidence per row, best [batch][tokens][3]. */
static void batch_rows(const server *s, const float *x)
{
    enum { P = 2, TT = T + P };
    int64_t row0[TT][3] = {{0}}, row1[TT][3] = {{0}};
    float xb[2 * TT * W], yb[2 * TT * W];
    http_resp r;
    const char *label = "diagnose nd: [2][22][32], row 1 padded, both by the other rule";

    for (size_t t = 0; t < T; t++)
        for (size_t c = 0; c < 3; c++) {
            row0[t][c] = hf_ids[t][c]; /* row 0: its two pads at the end */
            row1[t + P][c] = hf_ids[t][c];
        }
    memset(xb, 0, sizeof xb);
    for (size_t b = 0; b < 2; b++)
        memcpy(xb + b * TT * W + (b ? P * W : 0), x, sizeof(float) * T * W);
    mrope(xb, row0, TT, CHUNKED, yb);
    mrope(xb + TT * W, row1, TT, CHUNKED, yb + TT * W);
    size_t shape[3] = {2, TT, W};
    sbuf b;
    sb_init(&b);
    sb_printf(&b,
              "{\"scheme\":\"rope\",\"params\":{\"head_dim\":%d,\"tokens_per_second\":3,"
              "\"mrope\":{\"section\":[4,2,2]}},\"embeddings\":",
              HD);
    sb_farray(&b, xb, 3, shape);
    sb_puts(&b, ",\"encoded\":");
    sb_farray(&b, yb, 3, shape);
    sb_puts(&b, "," LAYOUT ",\"mm_rule\":\"qwen\",\"attention_mask\":[[");
    for (size_t t = 0; t < TT; t++)
        sb_printf(&b, "%s%d", t ? "," : "", t < T);
    sb_puts(&b, "],[");
    for (size_t t = 0; t < TT; t++)
        sb_printf(&b, "%s%d", t ? "," : "", t >= P);
    sb_puts(&b, "]]}");
    if (expect_diagnosis(s, label, b.s, "explained", &r)) {
        const json_t *f = sole_finding(label, &r, "positions_mismatch");
        const json_t *ev = json_object_get(f, "evidence");
        const json_t *pos = json_object_get(ev, "positions");
        const json_t *rows = json_object_get(ev, "rows");
        const json_t *r1 = json_array_get(pos, 1);
        CHECK(json_array_size(rows) == 2 && json_array_size(pos) == 2 &&
                  json_array_size(r1) == TT &&
                  json_integer_value(json_array_get(json_array_get(r1, 0), 0)) == 0 &&
                  json_integer_value(json_array_get(json_array_get(r1, TT - 1), 0)) == 10 &&
                  json_integer_value(json_array_get(json_array_get(r1, P + 3), 2)) == 3,
              label, "evidence: rows [0, 1], a triple list per row: %.600s", r.body);
        const json_t *bp = json_object_get(json_object_get(r.json, "best"), "positions");
        CHECK(json_array_size(bp) == 2 && json_array_size(json_array_get(bp, 0)) == TT, label,
              "best.positions [2][%d][3]: %.300s", TT, r.body);
    }
    http_resp_free(&r);
    sb_free(&b);
}

/* Gemma 4's vision rope (two rotate-half heads of D/2, by col then row,
 * base 100) where pixtral at base 10000 is claimed: rope2d_variant and
 * base_mismatch; best with the pairs reproduces it. */
static void rope2d_found(const server *s, const float *x)
{
    enum { GH = 4, GW = 5, N = GH * GW, Q = HD / 4 };
    float y[N * W];
    http_resp r;
    const char *label = "diagnose nd: gemma4_vision subject, pixtral claimed";

    for (size_t t = 0; t < N; t++) {
        double coord[2] = {(double)(t % GW), (double)(t / GW)}; /* col, then row */
        for (size_t h0 = 0; h0 < W; h0 += HD)
            for (size_t g = 0; g < 2; g++)
                for (size_t i = 0; i < Q; i++) {
                    size_t a = h0 + g * 2 * Q + i, b = a + Q;
                    double ang = coord[g] * pow(100.0, -2.0 * i / (HD / 2));
                    y[t * W + a] = (float)(x[t * W + a] * cos(ang) - x[t * W + b] * sin(ang));
                    y[t * W + b] = (float)(x[t * W + b] * cos(ang) + x[t * W + a] * sin(ang));
                }
    }
    size_t shape[2] = {N, W};
    sbuf b;
    sb_init(&b);
    sb_printf(&b,
              "{\"scheme\":\"rope2d\",\"params\":{\"variant\":\"pixtral\",\"head_dim\":%d},"
              "\"grid\":{\"h\":4,\"w\":5},\"embeddings\":",
              HD);
    sb_farray(&b, x, 2, shape);
    sb_puts(&b, ",\"encoded\":");
    sb_farray(&b, y, 2, shape);
    sb_puts(&b, "}");
    if (expect_diagnosis(s, label, b.s, "explained", &r)) {
        const json_t *v = diagnose_finding(&r, "rope2d_variant");
        const json_t *bm = diagnose_finding(&r, "base_mismatch");
        const json_t *ev = json_object_get(v, "evidence");
        CHECK(v && bm && jstr(ev, "variant") && strcmp(jstr(ev, "variant"), "gemma4_vision") == 0 &&
                  json_number_value(json_object_get(json_object_get(bm, "evidence"), "base")) ==
                      100.0,
              label, "want rope2d_variant gemma4_vision and base_mismatch 100: %.500s", r.body);
        best_reproduces(s, label, &r, x, y, N);
    }
    http_resp_free(&r);
    sb_free(&b);
}

/* The default model's q for x[6][512] at vision triples under `style`
 * (section [16, 8, 8]), as /apply answers it; the request's tail into
 * *tail (new). */
static bool apply_q(const server *s, const float *x, const char *mstyle, farr *q, char **tail)
{
    static const size_t shape[2] = {6, DEFAULT_D};
    sbuf b;
    http_resp r;

    sb_init(&b);
    sb_printf(&b,
              "\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[16,8,8],\"style\":\"%s\"}},"
              "\"positions\":[0,1,[2,2,2],[2,2,3],[2,3,2],[4,4,4]],\"embeddings\":",
              mstyle);
    sb_farray(&b, x, 2, shape);
    size_t len = b.len + 32;
    char *body = xmalloc(len);
    snprintf(body, len, "{%s,\"return\":[\"q\"]}", b.s);
    http_post_json(s, "/apply", body, &r);
    free(body);
    bool ok = expect_ok("diagnose nd: /apply q at vision triples", &r) &&
              get_farr("diagnose nd: /apply q", &r, "q", q);
    http_resp_free(&r);
    *tail = b.s;
    return ok;
}

/* q/k/v of a model under a multimodal claim: /apply's own q is a match,
 * the interleaved q under a chunked claim is mrope_mismatch (named for q),
 * with best's triples; rope2d on q/k/v is refused naming scheme. */
static void qkv_subjects(const server *s)
{
    static float x[6 * DEFAULT_D];
    farr q = {0}, qi = {0};
    char *chunked = NULL, *interleaved = NULL;
    trng g;

    trng_seed(&g, 1304);
    trng_fill(&g, x, 6 * DEFAULT_D, -1.0f, 1.0f);
    if (apply_q(s, x, "chunked", &q, &chunked) && apply_q(s, x, "interleaved", &qi, &interleaved)) {
        const farr *subjects[] = {&q, &qi};
        for (size_t i = 0; i < 2; i++) {
            const char *label = i ? "diagnose nd: q/k/v, interleaved q under a chunked claim"
                                  : "diagnose nd: q/k/v, /apply's own q at vision triples";
            sbuf b;
            http_resp r;
            size_t shape[2] = {6, subjects[i]->n / 6};
            sb_init(&b);
            sb_printf(&b, "{%s,\"q\":", chunked);
            sb_farray(&b, subjects[i]->v, 2, shape);
            sb_puts(&b, "}");
            if (expect_diagnosis(s, label, b.s, i ? "explained" : "match", &r) && i) {
                const json_t *f = sole_finding(label, &r, "mrope_mismatch");
                const json_t *ev = json_object_get(f, "evidence");
                const char *msg = jstr(f, "message");
                const json_t *bp = json_object_get(json_object_get(r.json, "best"), "positions");
                CHECK(f && jstr(ev, "style") && strcmp(jstr(ev, "style"), "interleaved") == 0 &&
                          msg && strncmp(msg, "q: ", 3) == 0 && json_array_size(bp) == 6 &&
                          json_integer_value(json_array_get(json_array_get(bp, 3), 2)) == 3,
                      label, "want q's mrope_mismatch interleaved, best's triples: %.600s", r.body);
            }
            http_resp_free(&r);
            sb_free(&b);
        }
    }
    farr_free(&q);
    farr_free(&qi);
    free(chunked);
    free(interleaved);
}

static void refusals(const server *s)
{
    static const struct {
        const char *body, *field;
        long status;
    } cases[] = {
        {"{\"scheme\":\"rope2d\",\"params\":{\"variant\":\"pixtral\"},\"grid\":{\"h\":1,\"w\":2},"
         "\"cos\":[[1,1],[1,1]],\"sin\":[[0,0],[0,0]]}",
         "scheme", 400},
        {"{\"scheme\":\"rope\",\"params\":{\"head_dim\":4,\"mrope\":{\"section\":[1,0,1]}},"
         "\"mm_layout\":[{\"text\":3}],\"mm_rule\":\"qwen\",\"embeddings\":[[1,0,0,0],[1,0,0,0]],"
         "\"encoded\":[[1,0,0,0],[1,0,0,0]]}",
         "mm_layout", 422},
        {"{\"scheme\":\"rope\",\"params\":{\"head_dim\":4,\"mrope\":{\"section\":[1,0,1]}},"
         "\"mm_layout\":[{\"text\":2}],\"embeddings\":[[1,0,0,0],[1,0,0,0]],"
         "\"encoded\":[[1,0,0,0],[1,0,0,0]]}",
         "mm_rule", 400},
        {"{\"scheme\":\"rope2d\",\"params\":{\"variant\":\"pixtral\"},\"positions\":[[0,0],[0,1]],"
         "\"model\":{\"d_model\":4,\"heads\":1,\"scheme\":\"rope\",\"weights\":{\"wq\":[[1,0,0,0],"
         "[0,1,0,0],[0,0,1,0],[0,0,0,1]],\"wk\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],\"wv\":[["
         "1,"
         "0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}},\"embeddings\":[[1,0,0,0],[0,1,0,0]],\"q\":[[0]]"
         "}",
         "scheme", 400},
        {"{\"scheme\":\"rope\",\"params\":{\"head_dim\":4},\"grid\":{\"h\":1,\"w\":2},"
         "\"embeddings\":[[1,0,0,0],[1,0,0,0]],\"encoded\":[[1,0,0,0],[1,0,0,0]]}",
         "grid", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char label[96];
        http_resp r;
        snprintf(label, sizeof label, "diagnose nd: refusal %zu names %s", i, cases[i].field);
        http_post_json(s, "/diagnose", cases[i].body, &r);
        CHECK(r.status == cases[i].status, label, "status %ld, want %ld: %.300s", r.status,
              cases[i].status, r.body);
        const char *field = jstr(json_object_get(r.json, "error"), "field");
        CHECK(field && strcmp(field, cases[i].field) == 0, label, "field %s: %.300s",
              field ? field : "(none)", r.body);
        http_resp_free(&r);
    }
}

/* The echoed positions of a batched mm_layout request: [tokens][3] (the
 * hand-written Qwen triples) when the rows are alike, on /encode and
 * /apply; [batch][tokens][3] when a mask makes them differ. */
static void echo_shapes(const server *s)
{
    static float x[2 * (T + 1) * DEFAULT_D];
    static const char *const paths[] = {"/encode", "/apply"};

    for (size_t i = 0; i < 2; i++) {
        for (size_t masked = 0; masked < 2; masked++) {
            size_t tt = T + masked, shape[3] = {2, tt, DEFAULT_D};
            char label[128];
            http_resp r;
            sbuf b;
            snprintf(label, sizeof label, "diagnose nd: %s batched mm_layout%s echoes %s", paths[i],
                     masked ? " with a mask" : "", masked ? "[batch][tokens][3]" : "[tokens][3]");
            sb_init(&b);
            sb_printf(&b,
                      "{\"scheme\":\"rope\",\"params\":{%s\"tokens_per_second\":3,\"mrope\":"
                      "{\"section\":[16,8,8]}},\"mm_rule\":\"qwen\"," LAYOUT ",\"embeddings\":",
                      i ? "" : "\"head_dim\":64,"); /* /apply: the model's */
            sb_farray(&b, x, 3, shape);
            if (masked) { /* row 0 padded at its end, row 1 at its start */
                sb_puts(&b, ",\"attention_mask\":[[");
                for (size_t t = 0; t < tt; t++)
                    sb_printf(&b, "%s%d", t ? "," : "", t < T);
                sb_puts(&b, "],[0");
                for (size_t t = 1; t < tt; t++)
                    sb_puts(&b, ",1");
                sb_puts(&b, "]]");
            }
            sb_puts(&b, "}");
            http_post_json(s, paths[i], b.s, &r);
            sb_free(&b);
            const json_t *pos = json_object_get(r.json, "positions");
            bool ok = r.status == 200;
            if (!masked) {
                ok = ok && json_array_size(pos) == T;
                for (size_t t = 0; ok && t < T; t++)
                    for (size_t c = 0; c < 3; c++)
                        ok = json_integer_value(json_array_get(json_array_get(pos, t), c)) ==
                             qwen_ids[t][c];
            } else {
                const json_t *r1 = json_array_get(pos, 1);
                ok = ok && json_array_size(pos) == 2 && json_array_size(r1) == tt &&
                     json_integer_value(json_array_get(json_array_get(r1, 0), 0)) == 0 &&
                     json_integer_value(json_array_get(json_array_get(r1, tt - 1), 0)) == 12;
            }
            CHECK(ok, label, "status %ld: %.400s", r.status, r.body);
            http_resp_free(&r);
        }
    }
}

void test_diagnose_nd(const server *s)
{
    float x[T * W];
    trng r;

    trng_seed(&r, 1303);
    trng_fill(&r, x, T * W, -1.0f, 1.0f);
    mm_rule_found(s, x);
    style_found(s, x);
    text_found(s, x);
    triples_found(s, x);
    cache_section_found(s);
    batch_rows(s, x);
    rope2d_found(s, x);
    refusals(s);
    qkv_subjects(s);
    echo_shapes(s);
}

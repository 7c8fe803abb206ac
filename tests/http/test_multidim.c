/*
 * test_multidim.c - positions in more than one dimension over HTTP
 * (contract 1.3): params.mrope gives 1-D RoPE's bits for text tokens on
 * /apply of the default model (explicit, masked and offset positions) and
 * on a streamed bare table; vision triples against three 1-D references
 * (ref_rope at t, at h and at w) picked slot by slot with the chunked rule;
 * mm_layout's echoed positions written out by hand from both rules; each
 * refusal names its field.
 */
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

#define MROPE "\"params\":{\"mrope\":{\"section\":[16,8,8],\"style\":\"%s\"}}"

/* Two bodies whose q and k must agree bit for bit. */
static void same_bits(const server *s, const char *path, const char *label, const char *a,
                      const char *b, const char *key)
{
    http_resp ra, rb;
    farr fa = {0}, fb = {0};

    http_post_json(s, path, a, &ra);
    http_post_json(s, path, b, &rb);
    if (expect_ok(label, &ra) && expect_ok(label, &rb) && get_farr(label, &ra, key, &fa) &&
        get_farr(label, &rb, key, &fb))
        check_exact(label, key, &fb, fa.v, fa.n);
    farr_free(&fa);
    farr_free(&fb);
    http_resp_free(&ra);
    http_resp_free(&rb);
}

/* The default model (d_model 512, head_dim 64: 32 frequency slots) with
 * scheme rope: text triples, the mask and the offset are 1-D RoPE. */
static void text_is_1d(const server *s)
{
    static const char *const styles[] = {"chunked", "interleaved", "ernie"};
    enum { T = 4, D = 512 };
    static const size_t shape[2] = {T, D};
    float x[T * D];
    trng r;
    sbuf emb;

    trng_seed(&r, 77);
    trng_fill(&r, x, T * D, -1.0f, 1.0f);
    sb_init(&emb);
    sb_farray(&emb, x, 2, shape);
    for (size_t i = 0; i < 3; i++) {
        char mrope[128], *a, *b;
        snprintf(mrope, sizeof mrope, MROPE, styles[i]);
        const char *tails[][2] = {
            {"\"positions\":[5,0,9000,3]", "\"positions\":[[5,5,5],0,[9000,9000,9000],3]"},
            {"\"attention_mask\":[0,1,1,1],\"causal\":true",
             "\"attention_mask\":[0,1,1,1],\"causal\":true"},
            {"\"offset\":123456", "\"offset\":123456"},
        };
        for (size_t k = 0; k < 3; k++) {
            char label[160];
            a = xmalloc(emb.len + 256);
            b = xmalloc(emb.len + 384);
            snprintf(a, emb.len + 256, "{\"scheme\":\"rope\",\"embeddings\":%s,%s}", emb.s,
                     tails[k][0]);
            snprintf(b, emb.len + 384, "{\"scheme\":\"rope\",%s,\"embeddings\":%s,%s}", mrope,
                     emb.s, tails[k][1]);
            snprintf(label, sizeof label, "POST /apply mrope %s, text (%s) = 1-D rope", styles[i],
                     tails[k][1]);
            same_bits(s, "/apply", label, a, b, "q");
            same_bits(s, "/apply", label, a, b, "k");
            free(a);
            free(b);
        }
    }
    sb_free(&emb);
    /* a bare table big enough to stream in 1-D: the triples' path is not
     * streamed, and its bits are the same */
    same_bits(s, "/encode", "POST /encode bare rope table 4096 x 64: mrope text = streamed 1-D",
              "{\"scheme\":\"rope\",\"shape\":[4096,64],\"offset\":7}",
              "{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[16,8,8]}},"
              "\"shape\":[4096,64],\"offset\":7}",
              "encoded");
}

/* Chunked [4, 2, 2] on 16-wide heads: slot j takes the pair of the 1-D
 * rotation at the component it is assigned. */
static void vision_triples(const server *s)
{
    enum { T = 3, D = 32, HALF = 8 };
    static const size_t shape[2] = {T, D};
    static const int64_t pos3[T][3] = {{4, 1, 2}, {9, 9, 9}, {100000, 7, 30}};
    ref_rope_cfg cfg = {.base = 10000, .head_dim = 16, .rotary_dim = 16};
    float x[T * D];
    double xd[T * D], by[3][T * D], want[T * D];
    int64_t comp[T];
    trng r;
    sbuf b;
    http_resp resp;
    farr got = {0};
    const char *L = "POST /encode mrope chunked [4,2,2], vision triples";

    trng_seed(&r, 78);
    trng_fill(&r, x, T * D, -1.0f, 1.0f);
    ref_widen(x, T * D, xd);
    for (int c = 0; c < 3; c++) {
        for (int t = 0; t < T; t++)
            comp[t] = pos3[t][c];
        ref_rope(&cfg, xd, comp, T, D, by[c]);
    }
    for (int t = 0; t < T; t++)
        for (int h = 0; h < D; h += 16)
            for (int j = 0; j < HALF; j++) {
                int c = j < 4 ? 0 : j < 6 ? 1 : 2;
                want[t * D + h + j] = by[c][t * D + h + j];
                want[t * D + h + j + HALF] = by[c][t * D + h + j + HALF];
            }
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":16,\"mrope\":{\"section\":[4,2,2]}},"
                "\"embeddings\":");
    sb_farray(&b, x, 2, shape);
    sb_puts(&b, ",\"positions\":[[4,1,2],[9,9,9],[100000,7,30]]}");
    http_post_json(s, "/encode", b.s, &resp);
    if (expect_ok(L, &resp) && get_farr(L, &resp, "encoded", &got))
        check_close(L, "encoded", &got, want, T * D, 1e-6, 2);
    farr_free(&got);
    http_resp_free(&resp);
    sb_free(&b);
}

/* [text 2][video 2x2x2, 1 s a grid][text 1] at 3 tokens a second, merge 2,
 * after one pad slot. By hand: text 0, 1; the video from 2, frames 3 apart
 * ([2,2,2], [5,2,2]); then "qwen" starts at 1 + 5, "hf" at 2 + 2/2. */
static void layout_by_hand(const server *s)
{
    static const struct {
        const char *rule, *want;
    } cases[] = {
        {"qwen", "[[0,0,0],[0,0,0],[1,1,1],[2,2,2],[5,2,2],[6,6,6]]"},
        {"hf", "[[0,0,0],[0,0,0],[1,1,1],[2,2,2],[5,2,2],[3,3,3]]"},
    };
    for (size_t i = 0; i < 2; i++) {
        char body[512], label[64];
        http_resp r;
        snprintf(body, sizeof body,
                 "{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]},"
                 "\"tokens_per_second\":3},\"shape\":[6,8],\"attention_mask\":[0,1,1,1,1,1],"
                 "\"mm_layout\":[{\"text\":2},{\"video\":[2,2,2],\"seconds_per_grid\":1.9},"
                 "{\"text\":1}],\"mm_rule\":\"%s\"}",
                 cases[i].rule);
        snprintf(label, sizeof label, "POST /encode mm_layout rule %s", cases[i].rule);
        http_post_json(s, "/encode", body, &r);
        if (expect_ok(label, &r)) {
            char *got = json_dumps(json_object_get(r.json, "positions"), JSON_COMPACT);
            CHECK(got && strcmp(got, cases[i].want) == 0, label, "positions %s, want %s",
                  got ? got : "(none)", cases[i].want);
            free(got);
        }
        http_resp_free(&r);
    }
}

static void refusals(const server *s)
{
    static const struct {
        const char *body, *code, *field;
        long status;
    } cases[] = {
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[1,1,1]}},\"shape\":[2,8]}",
         "invalid_shape", "params.mrope.section", 422},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"style\":\"ernie\"}},\"shape\":[2,8]}",
         "invalid_request", "params.mrope.section", 400},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1],\"x\":1}},"
         "\"shape\":[2,8]}",
         "invalid_request", "params.mrope.x", 400},
        {"{\"scheme\":\"rope\",\"shape\":[2,8],\"positions\":[[1,2,3],0]}", "invalid_shape",
         "positions", 422},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]}},\"shape\":[2,8],"
         "\"mm_layout\":[{\"text\":2}],\"mm_rule\":\"hf\",\"positions\":[0,1]}",
         "invalid_request", "positions", 400},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]}},\"shape\":[2,8],"
         "\"mm_layout\":[{\"image\":[1,3,2]}],\"mm_rule\":\"hf\"}",
         "invalid_shape", "mm_layout[0].image", 422},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]}},\"shape\":[2,8],"
         "\"mm_layout\":[{\"text\":2}]}",
         "invalid_request", "mm_rule", 400},
        /* a grid whose token count overflows size_t, frames past 2^53 apart */
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]}},\"shape\":[2,8],"
         "\"mm_layout\":[{\"image\":[2147483647,2147483646,2147483646]}],\"mm_rule\":\"hf\"}",
         "too_large", "mm_layout", 422},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]}},\"shape\":[2,8],"
         "\"mm_layout\":[{\"video\":[2,2,2],\"seconds_per_grid\":1e300}],\"mm_rule\":\"hf\"}",
         "too_large", "mm_layout[0].seconds_per_grid", 422},
        {"{\"scheme\":\"rope\",\"shape\":[2,8],\"positions\":[0,1],\"positions_shape\":[2]}",
         "invalid_request", "positions_shape", 400},
        {"{\"scheme\":\"rope\",\"params\":{\"mrope\":{\"section\":[2,1,1]}},\"table\":[[1,0,0,0,"
         "0,0,0,0]]}",
         "invalid_request", "scheme", 400}, /* /diagnose reads no rope claim on a table */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[320];
        http_resp r;
        const char *path = strstr(cases[i].body, "\"table\"") ? "/diagnose" : "/encode";
        snprintf(label, sizeof label, "POST %s %s", path, cases[i].body);
        http_post_json(s, path, cases[i].body, &r);
        expect_error(label, &r, cases[i].status, cases[i].code, cases[i].field);
        http_resp_free(&r);
    }
}

void test_multidim(const server *s)
{
    text_is_1d(s);
    vision_triples(s);
    layout_by_hand(s);
    refusals(s);
}

/*
 * test_mask.c - padding-aware positions over HTTP (contract v1.1,
 * "Padding-aware positions"): attention_mask and causal on /apply and
 * /encode. References are computed here, in double, from the contract's
 * formulas: positions written out by hand from Hugging Face's rule
 * (cumsum(mask) - 1, 1 where the mask is 0), the rotation by ref_rope, the
 * projection by ref_project and the scores by ref_scores, a masked key's
 * value float32's lowest.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

enum { MB = 3, MT = 5, MD = 8, MH = 2, MHD = 4 };

/* Row 0 unpadded, row 1 left-padded by two, row 2 right-padded by two: the
 * three real tokens of rows 1 and 2 are row 0's first three. */
static const int64_t mask_rows[MB][MT] = {{1, 1, 1, 1, 1}, {0, 0, 1, 1, 1}, {1, 1, 1, 0, 0}};
/* By hand from generate()'s position_ids = cumsum(mask) - 1, then
 * masked_fill_(mask == 0, 1). */
static const int64_t mask_positions[MB][MT] = {{0, 1, 2, 3, 4}, {1, 1, 0, 1, 2}, {0, 1, 2, 1, 1}};
/* The slot of row 0 whose embedding fills each slot (-1: padding). */
static const int source_slot[MB][MT] = {{0, 1, 2, 3, 4}, {-1, -1, 0, 1, 2}, {0, 1, 2, -1, -1}};

typedef struct mask_case {
    float x[MB][MT][MD]; /* the padded batch; padding slots hold noise */
    float wq[MD * MH * MHD], wk[MD * MH * MHD], wv[MD * MH * MHD];
} mask_case;

static void mask_case_init(mask_case *c)
{
    trng r;
    float real[MT][MD];

    trng_seed(&r, 1313);
    trng_fill(&r, &real[0][0], MT * MD, -1.0f, 1.0f);
    trng_fill(&r, c->wq, MD * MH * MHD, -0.5f, 0.5f);
    trng_fill(&r, c->wk, MD * MH * MHD, -0.5f, 0.5f);
    trng_fill(&r, c->wv, MD * MH * MHD, -0.5f, 0.5f);
    for (int b = 0; b < MB; b++)
        for (int t = 0; t < MT; t++) {
            if (source_slot[b][t] >= 0)
                memcpy(c->x[b][t], real[source_slot[b][t]], sizeof c->x[b][t]);
            else
                trng_fill(&r, c->x[b][t], MD, -3.0f, 3.0f);
        }
}

/* The /apply body: an inline rope model, the batch, then `tail`. */
static char *mask_body(const mask_case *c, const char *tail)
{
    static const size_t wshape[2] = {MD, MH * MHD}, xshape[3] = {MB, MT, MD};
    sbuf b;

    sb_init(&b);
    sb_printf(&b,
              "{\"model\":{\"d_model\":%d,\"heads\":%d,\"head_dim\":%d,\"scheme\":\"rope\","
              "\"weights\":{\"wq\":",
              MD, MH, MHD);
    sb_farray(&b, c->wq, 2, wshape);
    sb_puts(&b, ",\"wk\":");
    sb_farray(&b, c->wk, 2, wshape);
    sb_puts(&b, ",\"wv\":");
    sb_farray(&b, c->wv, 2, wshape);
    sb_puts(&b, "}},\"embeddings\":");
    sb_farray(&b, &c->x[0][0][0], 3, xshape);
    sb_printf(&b, ",%s}", tail);
    return b.s;
}

/* q, k (rotated at mask_positions) and scores of the whole batch, with
 * keys masked by the mask and, when causal, by slot order (key slot j after
 * query slot i, as Hugging Face's causal mask: contract 1.2). */
static void mask_reference(const mask_case *c, bool causal, double *q, double *scores)
{
    enum { W = MH * MHD, PER = MH * MT * MT };
    ref_rope_cfg rope = {.base = 10000, .head_dim = MHD, .rotary_dim = MHD};
    double y[MT * W], k[MB * MT * W];

    for (int b = 0; b < MB; b++) {
        ref_project(&c->x[b][0][0], MT, MD, c->wq, W, NULL, y);
        ref_rope(&rope, y, mask_positions[b], MT, W, q + b * MT * W);
        ref_project(&c->x[b][0][0], MT, MD, c->wk, W, NULL, y);
        ref_rope(&rope, y, mask_positions[b], MT, W, k + b * MT * W);
        double *s = scores + b * PER;
        ref_scores(q + b * MT * W, k + b * MT * W, MT, MH, MH, MHD, 0.5, NULL, s);
        for (int h = 0; h < MH; h++)
            for (int i = 0; i < MT; i++)
                for (int j = 0; j < MT; j++) {
                    bool hidden = !mask_rows[b][j] || (causal && j > i);
                    if (hidden)
                        s[(h * MT + i) * MT + j] = -FLT_MAX;
                }
    }
}

/* check_close, except that a masked value (want -FLT_MAX) must be exactly
 * -FLT_MAX: check_close's ulp tolerance at FLT_MAX is infinite. */
static void check_masked(const char *label, const char *what, const farr *a, const double *want,
                         size_t n, double abs_tol, double ulps)
{
    if (!CHECK(a->n == n, label, "%s has %zu values, want %zu", what, a->n, n))
        return;
    farr rest = *a;
    double *w = xmalloc(n * sizeof *w);
    size_t masked = 0, wrong = 0, first = n;
    rest.v = xmalloc(n * sizeof *rest.v);
    memcpy(rest.v, a->v, n * sizeof *rest.v);
    for (size_t i = 0; i < n; i++) {
        w[i] = want[i];
        if (want[i] != -FLT_MAX)
            continue;
        masked++;
        if (a->v[i] != -FLT_MAX && wrong++ == 0)
            first = i;
        rest.v[i] = 0.0f;
        w[i] = 0.0;
    }
    CHECK(masked > 0 && wrong == 0, label,
          "%s: %zu of %zu masked values are not -3.4028235e38 (first [%zu] = %.9g)", what, wrong,
          masked, first, first < n ? a->v[first] : 0.0);
    check_close(label, what, &rest, w, n, abs_tol, ulps);
    free(rest.v);
    free(w);
}

static void mask_apply(const server *s, const mask_case *c, bool causal)
{
    enum { W = MH * MHD, PER = MH * MT * MT };
    const char *L = causal ? "POST /apply attention_mask + causal (left and right padding)"
                           : "POST /apply attention_mask (left and right padding)";
    static const size_t qshape[3] = {MB, MT, W}, sshape[4] = {MB, MH, MT, MT};
    double q[MB * MT * W], scores[MB * PER];
    char tail[256];
    http_resp r;
    farr fq = {0}, fs = {0};

    snprintf(tail, sizeof tail,
             "\"attention_mask\":[[1,1,1,1,1],[0,0,1,1,1],[1,1,1,0,0]],%s"
             "\"return\":[\"q\",\"scores\"]",
             causal ? "\"causal\":true," : "");
    char *body = mask_body(c, tail);
    mask_reference(c, causal, q, scores);
    http_post_json(s, "/apply", body, &r);
    if (expect_ok(L, &r) && get_farr(L, &r, "q", &fq) && check_shape(L, "q", &fq, 3, qshape) &&
        get_farr(L, &r, "scores", &fs) && check_shape(L, "scores", &fs, 4, sshape)) {
        check_close(L, "q", &fq, q, MB * MT * W, 1e-6, 8);
        check_masked(L, "scores", &fs, scores, MB * PER, 1e-6, 8);
        /* the masked value itself, not value + mask */
        CHECK(fs.v[PER + 0] == -FLT_MAX && fs.v[2 * PER + 4] == -FLT_MAX, L,
              "a masked key's score is %.9g / %.9g, want -3.4028235e38", fs.v[PER + 0],
              fs.v[2 * PER + 4]);
        /* left and right padding: the real tokens' q is the unpadded row's
         * (to float32 rounding: sgemm may sum other rows in another order) */
        double worst = 0;
        for (int b = 1; b < MB; b++)
            for (int t = 0; t < MT; t++)
                for (int j = 0; source_slot[b][t] >= 0 && j < W; j++) {
                    double e = fabs((double)fq.v[(b * MT + t) * W + j] -
                                    (double)fq.v[source_slot[b][t] * W + j]);
                    worst = e > worst ? e : worst;
                }
        CHECK(worst <= 1e-6, L,
              "padded rows' real tokens must get the unpadded row's q: differs by %.3g", worst);
    }
    farr_free(&fq);
    farr_free(&fs);
    http_resp_free(&r);
    free(body);
}

/* causal alone (no mask): keys in later slots hidden, whatever the
 * positions say (explicit positions out of slot order: contract 1.2). */
static void causal_only(const server *s)
{
    const char *L = "POST /encode alibi causal with positions [2,0,1]";
    static const int64_t pos[3] = {2, 0, 1};
    static const size_t shape[3] = {2, 3, 3};
    double want[2 * 3 * 3];
    farr f = {0};
    http_resp r;

    ref_alibi_bias(2, false, pos, 3, want);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                if (j > i)
                    want[(h * 3 + i) * 3 + j] = -FLT_MAX;
    http_post_json(s, "/encode",
                   "{\"shape\":[3,4],\"scheme\":\"alibi\",\"params\":{\"heads\":2},"
                   "\"positions\":[2,0,1],\"causal\":true}",
                   &r);
    if (expect_ok(L, &r) && get_farr(L, &r, "bias", &f) && check_shape(L, "bias", &f, 3, shape))
        check_masked(L, "bias", &f, want, 18, 1e-7, 1);
    farr_free(&f);
    http_resp_free(&r);
}

/* /encode alibi with a right-padded mask: positions from the mask
 * (default rule), the padded key's bias float32's lowest. */
static void encode_alibi_mask(const server *s)
{
    const char *L = "POST /encode alibi attention_mask [1,1,0,1]";
    static const int64_t pos[4] = {0, 1, 1, 2}; /* cumsum - 1; 1 where masked */
    static const size_t shape[3] = {2, 4, 4};
    double want[2 * 4 * 4];
    farr f = {0};
    http_resp r;

    ref_alibi_bias(2, true, pos, 4, want);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++)
            want[(h * 4 + i) * 4 + 2] = -FLT_MAX;
    http_post_json(s, "/encode",
                   "{\"shape\":[4,4],\"scheme\":\"alibi\",\"params\":{\"heads\":2,"
                   "\"form\":\"bloom\"},\"attention_mask\":[1,1,0,1]}",
                   &r);
    if (expect_ok(L, &r) && get_farr(L, &r, "bias", &f) && check_shape(L, "bias", &f, 3, shape))
        check_masked(L, "bias", &f, want, 32, 1e-7, 1);
    farr_free(&f);
    http_resp_free(&r);
}

/* /encode rope on three unbatched rows claimed at positions 1, 0, 1 by
 * `claim` (a mask or the positions, flat or as one row [1][3]: both fields
 * take both shapes): the rotation at those positions. */
static void encode_rope_claim(const server *s, const char *claim)
{
    static const int64_t pos[3] = {1, 0, 1};
    static const double x[3 * 4] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
    static const size_t shape[2] = {3, 4};
    ref_rope_cfg rope = {.base = 10000, .head_dim = 4, .rotary_dim = 4};
    double want[12];
    char label[128], body[256];
    farr f = {0};
    http_resp r;

    snprintf(label, sizeof label, "POST /encode rope, 3 unbatched rows, %s", claim);
    snprintf(body, sizeof body,
             "{\"embeddings\":[[1,2,3,4],[1,2,3,4],[1,2,3,4]],\"scheme\":\"rope\",%s}", claim);
    ref_rope(&rope, x, pos, 3, 4, want);
    http_post_json(s, "/encode", body, &r);
    if (expect_ok(label, &r) && get_farr(label, &r, "encoded", &f) &&
        check_shape(label, "encoded", &f, 2, shape))
        check_close(label, "encoded", &f, want, 12, 1e-7, 2);
    farr_free(&f);
    http_resp_free(&r);
}

static void mask_errors(const server *s)
{
    static const struct {
        const char *body, *code, *field;
        long status;
    } cases[] = {
        {"{\"shape\":[3,4],\"attention_mask\":[1,1,1],\"offset\":2}", "invalid_request", "offset",
         400},
        {"{\"shape\":[3,4],\"attention_mask\":[1,1,1],\"positions\":[0,1,2]}", "invalid_request",
         "positions", 400},
        {"{\"shape\":[3,4],\"attention_mask\":[1,2,1]}", "invalid_shape", "attention_mask", 422},
        {"{\"shape\":[3,4],\"attention_mask\":[1,-1,1]}", "invalid_shape", "attention_mask", 422},
        {"{\"shape\":[3,4],\"attention_mask\":[1,0.5,1]}", "invalid_shape", "attention_mask[1]",
         422},
        {"{\"shape\":[3,4],\"attention_mask\":[1,1]}", "invalid_shape", "attention_mask", 422},
        {"{\"shape\":[2,3,4],\"attention_mask\":[[1,1,1]]}", "invalid_shape", "attention_mask",
         422},
        {"{\"shape\":[2,3,4],\"attention_mask\":[[1,1,1],[1,1]]}", "invalid_shape", NULL, 422},
        {"{\"shape\":[3,4],\"causal\":1}", "invalid_request", "causal", 400},
        /* an unbatched input has one row: [1][tokens] at most */
        {"{\"shape\":[3,4],\"positions\":[[0,1,2],[0,1,2]]}", "invalid_shape", "positions", 422},
        {"{\"shape\":[3,4],\"attention_mask\":[[1,1,1],[1,1,1]]}", "invalid_shape",
         "attention_mask", 422},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[256];
        http_resp r;
        snprintf(label, sizeof label, "POST /encode %s", cases[i].body);
        http_post_json(s, "/encode", cases[i].body, &r);
        expect_error(label, &r, cases[i].status, cases[i].code, cases[i].field);
        http_resp_free(&r);
    }
}

void test_mask(const server *s)
{
    mask_case c;

    mask_case_init(&c);
    mask_apply(s, &c, false);
    mask_apply(s, &c, true);
    causal_only(s);
    encode_alibi_mask(s);
    encode_rope_claim(s, "\"attention_mask\":[0,1,1]");
    encode_rope_claim(s, "\"attention_mask\":[[0,1,1]]");
    encode_rope_claim(s, "\"positions\":[1,0,1]");
    encode_rope_claim(s, "\"positions\":[[1,0,1]]");
    mask_errors(s);
}

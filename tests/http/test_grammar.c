/*
 * test_grammar.c - the request path over the network: an answer past the
 * streaming threshold arrives whole and right through the chunked
 * (streamed) response, and numbers read with one grammar. References are computed here in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

/* A 600 x 1024 sinusoidal table is ~7 MB of text: streamed. */
static void streamed_answer(const server *s)
{
    const char *L = "POST /encode [600,1024] streamed";
    enum { T = 600, D = 1024 };
    const size_t shape[2] = {T, D};
    double *want = xmalloc((size_t)T * D * sizeof *want);
    http_resp r;

    for (size_t p = 0; p < T; p++)
        for (size_t i = 0; i < D / 2; i++) {
            double angle = (double)p * pow(10000.0, -2.0 * (double)i / D);
            want[p * D + 2 * i] = sin(angle); /* interleaved: sin, cos */
            want[p * D + 2 * i + 1] = cos(angle);
        }
    post_compare(s, "/encode", L, "{\"shape\":[600,1024]}", "encoded", 2, shape, want, ABS_ONCE,
                 ULPS_ONCE);
    http_post_json(s, "/encode", "{\"shape\":[600,1024]}", &r);
    char te[64] = "";
    CHECK(r.status == 200 && http_header(&r, "Transfer-Encoding", te, sizeof te) &&
              strstr(te, "chunked") && r.json != NULL,
          L, "want a chunked 200 that parses: %ld, Transfer-Encoding '%s'", r.status, te);
    http_resp_free(&r);
    free(want);
}

/* Small and big bodies read numbers alike: one rounding to float32, -0
 * kept, 1e400 a 422 non_finite (one grammar for numbers). */
static void one_grammar(const server *s)
{
    static const struct {
        const char *body, *want; /* want: the answer's text, or an error code */
        long status;
    } cases[] = {
        {"{\"scheme\":\"none\",\"embeddings\":[[1.00000005960464477539062500000001,-0]]}",
         "\"encoded\":[[1.0000001,-0]]", 200},
        {"{\"scheme\":\"none\",\"embeddings\":[[12345678901234567890,1]]}",
         "\"encoded\":[[1.2345679e19,1]]", 200},
        {"{\"scheme\":\"none\",\"embeddings\":[[1e400,1]]}", "non_finite", 422},
        {"{\"shape\":[1,2],\"embed_scale\":1e400}", "non_finite", 422},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_resp r;
        http_post_json(s, "/encode", cases[i].body, &r);
        const char *code = r.json ? jstr(json_object_get(r.json, "error"), "code") : NULL;
        bool ok = r.status == cases[i].status &&
                  (r.status == 200 ? r.body && strstr(r.body, cases[i].want) != NULL
                                   : code && strcmp(code, cases[i].want) == 0);
        CHECK(ok, "POST /encode one number grammar", "%s -> %ld %.200s, want %ld %s", cases[i].body,
              r.status, r.body ? r.body : "", cases[i].status, cases[i].want);
        http_resp_free(&r);
    }
}

void test_grammar(const server *s)
{
    streamed_answer(s);
    one_grammar(s);
}

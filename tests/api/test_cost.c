/*
 * test_cost.c - api_request_cost, the estimate the server schedules by
 * (limits lanes and small-heavy). Its absolute numbers are calibrations; what
 * is checked is what follows from the work each request asks for: a tiny
 * body asking for heads x tokens^2 scores or bias costs as much as that
 * many values, scores grow as tokens^2, a smaller answer costs less, a
 * key hidden behind an escape counts as unknown, a body past the scan
 * costs by its size.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "api.h"
#include "test_list.h"

#define MS ((uint64_t)1000 * 1000)

static uint64_t cost(const api_service *svc, api_endpoint ep, const char *body)
{
    return api_request_cost(svc, ep, body, strlen(body));
}

/* An /apply asking for the scores of `tokens` tokens on an inline model
 * of one head (d_model 1, head_dim 64; weights elided: the estimate
 * skips them). */
static uint64_t scores_cost(const api_service *svc, size_t tokens)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"model\":{\"d_model\":1,\"heads\":1,\"head_dim\":64,\"weights\":{}},"
             "\"embeddings\":\"AAAA\",\"shape\":[%zu,1],\"return\":[\"scores\"]}",
             tokens);
    return cost(svc, API_ENDPOINT_APPLY, body);
}

void test_cost(void)
{
    api_limits limits = {0};
    api_error err;
    api_service *svc = api_service_new(&limits, &err); /* owned */
    CHECK(svc != NULL, "cost: service");
    if (svc == NULL)
        return;
    uint64_t tiny = cost(svc, API_ENDPOINT_ENCODE, "{\"shape\":[4,8]}");
    uint64_t table = cost(svc, API_ENDPOINT_ENCODE, "{\"shape\":[4096,512]}");
    uint64_t alibi = cost(svc, API_ENDPOINT_ENCODE,
                          "{\"shape\":[1024,64],\"scheme\":\"alibi\",\"params\":{\"heads\":8}}");
    /* json.dumps' spacing reads the same */
    uint64_t spaced = cost(svc, API_ENDPOINT_ENCODE, "{\"shape\": [ 4096, 512 ]}");
    CHECK(spaced > table - 1000 && spaced < table + 1000,
          "cost: shape [ 4096, 512 ] with blanks: %llu ns, not about %llu",
          (unsigned long long)spaced, (unsigned long long)table);
    CHECK(tiny < MS / 10, "cost: /encode of 4x8: %llu ns, not < 0.1 ms", (unsigned long long)tiny);
    CHECK(table > 10 * MS, "cost: /encode table 4096x512 (2M values): %llu ns, not > 10 ms",
          (unsigned long long)table);
    /* 8 x 1024^2 bias values: four times the table's 2M values */
    CHECK(alibi > 3 * table, "cost: /encode alibi 8x1024x1024: %llu ns, not > 3x the table's",
          (unsigned long long)alibi);

    uint64_t s1000 = scores_cost(svc, 1000), s2000 = scores_cost(svc, 2000);
    CHECK(s1000 > 10 * MS, "cost: /apply scores of 1000 tokens: %llu ns, not > 10 ms",
          (unsigned long long)s1000);
    CHECK(s2000 > 3 * s1000 && s2000 < 5 * s1000,
          "scores of 2000 tokens %llu ns vs 1000 tokens %llu ns: not about 4x",
          (unsigned long long)s2000, (unsigned long long)s1000);
    /* the same body without scores: q, k, v of 1000 x 64, 192k values
     * against the scores' 1M */
    uint64_t qkv = cost(svc, API_ENDPOINT_APPLY,
                        "{\"model\":{\"d_model\":1,\"heads\":1,\"head_dim\":64,\"weights\":{}},"
                        "\"embeddings\":\"AAAA\",\"shape\":[1000,1]}");
    CHECK(qkv < s1000 / 3, "cost: /apply q/k/v of 1000x64: %llu ns, not < 1/3 of the scores'",
          (unsigned long long)qkv);
    /* q and the gate: two arrays of 64k values against q, k and v's three */
    uint64_t q_only = cost(svc, API_ENDPOINT_APPLY,
                           "{\"model\":{\"d_model\":1,\"heads\":1,\"head_dim\":64,\"weights\":{}},"
                           "\"embeddings\":\"AAAA\",\"shape\":[1000,1],\"return\":[\"q\"]}");
    uint64_t gated = cost(svc, API_ENDPOINT_APPLY,
                          "{\"model\":{\"d_model\":1,\"heads\":1,\"head_dim\":64,\"weights\":{}},"
                          "\"embeddings\":\"AAAA\",\"shape\":[1000,1],"
                          "\"return\":[\"q\",\"gate\"]}");
    CHECK(gated > q_only + (q_only - tiny) / 2 && gated < qkv,
          "cost: /apply q and gate %llu ns: not between q's %llu and q, k, v's %llu",
          (unsigned long long)gated, (unsigned long long)q_only, (unsigned long long)qkv);

    CHECK(cost(svc, API_ENDPOINT_ENCODE, "{\"sh\\u0061pe\":[4096,512]}") == API_COST_UNKNOWN,
          "cost: a key with an escape is not read: unknown");
    CHECK(cost(svc, API_ENDPOINT_ENCODE, "[1,2") < MS / 10,
          "a body that is not JSON costs its parse only");

    size_t big = 300 * 1024;
    char *body = malloc(big + 1); /* owned */
    if (body != NULL) {
        memset(body, ' ', big);
        memcpy(body, "{\"shape\":[1,1]}", 15);
        body[big] = '\0';
        CHECK(api_request_cost(svc, API_ENDPOINT_ENCODE, body, big) >= 10 * MS,
              "a body of 300 KiB (past the scan) costs >= 10 ms");
        free(body);
    }
    api_service_free(svc);
}

/*
 * test_t5.c - T5 relative-position buckets against a known table
 * (known vectors, every listed rel, encoder and decoder) and the bias layout.
 */
#include "check.h"
#include "test_list.h"
#include "posenc.h"

static void buckets(void)
{
    static const int64_t rel[] = {-200, -128, -127, -91, -90, -64, -63, -32, -31, -16, -15,
                                  -12,  -11,  -8,   -7,  -1,  0,   1,   7,   8,   11,  12,
                                  16,   32,   63,   64,  90,  91,  127, 128, 200};
    static const size_t bidir[] = {15, 15, 15, 15, 14, 14, 13, 12, 11, 10, 9,  9,  8,  8,  7, 1,
                                   0,  17, 23, 24, 24, 25, 26, 28, 29, 30, 30, 31, 31, 31, 31};
    static const size_t decoder[] = {31, 31, 31, 29, 29, 26, 26, 21, 21, 16, 15, 12, 11, 8, 7, 1,
                                     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, 0};
    for (size_t k = 0; k < ARRAY_LEN(rel); k++) {
        size_t b = pe_t5_bucket(rel[k], true, 32, 128);
        size_t u = pe_t5_bucket(rel[k], false, 32, 128);
        CHECK(b == bidir[k], "t5 bidirectional rel %lld: got %zu want %zu", (long long)rel[k], b,
              bidir[k]);
        CHECK(u == decoder[k], "t5 decoder rel %lld: got %zu want %zu", (long long)rel[k], u,
              decoder[k]);
    }

    /* Bucket edges of 11.5 (bidirectional, key before the query). */
    static const struct {
        int64_t lo, hi;
        size_t bucket;
    } edges[] = {{8, 11, 8},   {12, 15, 9},  {16, 22, 10}, {23, 31, 11},
                 {32, 45, 12}, {46, 63, 13}, {64, 90, 14}, {91, 5000, 15}};
    bool ok = true;
    for (size_t e = 0; e < ARRAY_LEN(edges); e++)
        for (int64_t n = edges[e].lo; n <= edges[e].hi; n++)
            ok &= pe_t5_bucket(-n, true, 32, 128) == edges[e].bucket &&
                  pe_t5_bucket(n, true, 32, 128) == edges[e].bucket + 16;
    CHECK(ok, "t5 bucket edges of 11.5, both directions");
    CHECK(pe_t5_bucket(-PE_MAX_POSITION, true, 32, 128) == 15 &&
              pe_t5_bucket(PE_MAX_POSITION, false, 32, 128) == 0 &&
              pe_t5_bucket(-PE_MAX_POSITION, false, 32, 128) == 31,
          "t5 buckets at +-(2^53 - 1)");
}

/* bias[h][i][j] = table[bucket(p_j - p_i)][h]. */
static void bias_layout(void)
{
    enum { NB = 32, H = 3, T = 4 };
    static const int64_t pos[T] = {0, 5, 40, 200};
    float table[NB * H], bias[H * T * T];
    bool ok = true;

    for (size_t e = 0; e < NB * H; e++)
        table[e] = (float)e;
    pe_t5 t5 = {table, NB, H, 128, true};
    pe_t5_bias(&t5, pos, T, bias);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++) {
                size_t b = pe_t5_bucket(pos[j] - pos[i], true, NB, 128);
                ok &= bias[(h * T + i) * T + j] == table[b * H + h];
            }
    CHECK(ok, "t5 bias[h][i][j] = table[bucket(p_j - p_i)][h]");
    /* Spot values: query 0, key 5 is rel +5: bucket 16+5 = 21; key 200 from
     * query 5 is rel +195: bucket 31; query 200, key 0 is rel -200: 15. */
    CHECK(bias[(1 * T + 0) * T + 1] == table[21 * H + 1] &&
              bias[(2 * T + 1) * T + 3] == table[31 * H + 2] &&
              bias[(0 * T + 3) * T + 0] == table[15 * H + 0],
          "t5 bias spot values");
}

void test_t5(void)
{
    buckets();
    bias_layout();
}

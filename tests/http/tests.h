/*
 * tests.h - the groups of HTTP tests and the few helpers they share.
 */
#ifndef POSENC_TEST_TESTS_H
#define POSENC_TEST_TESTS_H

#include "harness.h"
#include "test_list.h"

/* Tolerance for a float32 result of a double computation rounded once:
 * one float32 ulp of the reference plus a tiny absolute term. */
#define ULPS_ONCE 1.0
#define ABS_ONCE 1e-8

/* The default model: d_model 512, weights from pe_default_weights(seed). */
typedef struct default_model {
    uint64_t seed;
    float *wq, *wk, *wv; /* [512][512] each */
} default_model;

#define DEFAULT_D 512
#define DEFAULT_HEADS 8
#define DEFAULT_HD 64

/* POST `body` to `path`; expect 200; read `key` as a float array with the
 * given shape. Returns true with *out filled (caller frees) when all that
 * holds; out may be NULL. */
bool post_read(const server *s, const char *path, const char *label, const char *body,
               const char *key, int ndim, const size_t *shape, http_resp *resp, farr *out);

/* post_read, then check_close against want. */
bool post_compare(const server *s, const char *path, const char *label, const char *body,
                  const char *key, int ndim, const size_t *shape, const double *want,
                  double abs_tol, double ulps);

/* The groups (test_list.h), each declared as its setup says; each
 * records its own checks. */
#define HTTP_GROUP_SERVER(function) void function(const server *s)
#define HTTP_GROUP_WEIGHTS(function) void function(const server *s, const default_model *dm)
#define HTTP_GROUP_OWN(function) void function(void)
#define HTTP_GROUP_DECLARE(name, function, setup) HTTP_GROUP_##setup(function);
HTTP_GROUPS(HTTP_GROUP_DECLARE)
#undef HTTP_GROUP_DECLARE
void test_diagnose_v2(const server *s);       /* test_diagnose_v2.c, run by test_diagnose */
void test_diagnose_batch(const server *s);    /* test_diagnose_batch.c, run by test_diagnose_v2 */
void test_diagnose_combined(const server *s); /* test_diagnose_combined.c, by test_diagnose_v2 */
/* The finding with `code` in a /diagnose response, or NULL (test_diagnose.c). */
const json_t *diagnose_finding(const http_resp *r, const char *code);
/* float32 rounded to bfloat16, nearest even (test_diagnose.c). */
float diagnose_bf16(float x);

/* The default model's seed: /info when it says, else POSENC_DEFAULT_SEED,
 * else the documented default. */
uint64_t default_seed(const server *s);

#endif /* POSENC_TEST_TESTS_H */

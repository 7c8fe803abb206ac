/*
 * tests.h - the groups of HTTP tests and the few helpers they share.
 */
#ifndef POSENC_TEST_TESTS_H
#define POSENC_TEST_TESTS_H

#include "harness.h"

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

/* Groups (each records its own checks). */
void test_service(const server *s);
void test_encode(const server *s);
void test_apply(const server *s, const default_model *dm);
void test_errors(const server *s);
void test_grammar(const server *s); /* test_grammar.c: streaming, one number grammar */
void test_mask(const server *s);    /* test_mask.c: attention_mask and causal */
void test_concurrency(const server *s, const default_model *dm);
void test_diagnose(const server *s, const default_model *dm); /* test_diagnose.c */
/* Groups that start their own servers (api key, body limit, token limit). */
void test_auth(void);
void test_limits(void);
/* test_robust.c: protections against misbehaving clients, each on servers
 * with the flags it needs. */
void test_reqlimits(void);
void test_slowclient(void);
void test_connlimit(void);
void test_overload(void);
void test_drain(void);
void test_observe(void);
/* test_hardening.c: issue 14's server-side regressions. */
void test_hardening(void);
void test_determinism(void); /* test_determinism.c: issue 21 item 8, own server */
void test_wait_policy(void); /* test_wait_policy.c: issue 20 item 1, own servers */

/* The default model's seed: /info when it says, else POSENC_DEFAULT_SEED,
 * else the documented default. */
uint64_t default_seed(const server *s);

#endif /* POSENC_TEST_TESTS_H */

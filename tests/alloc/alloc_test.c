/*
 * alloc_test.c - allocation-failure tests (after jansson's test_chaos and
 * libuv's OOM tests): for each representative request and model directory,
 * run it once to count its allocations, then once more for every N, with
 * the Nth allocation failing, and check that each run ends cleanly:
 *
 *   - a request (api_encode, api_apply, api_diagnose: one subject of each
 *     kind) answers either exactly what it answers without the failure (a
 *     fallback absorbed it) or the contract's 503 `unavailable` as JSON;
 *   - model loading (api_service_new_with_models) gives either a service or
 *     NULL with a non-empty message;
 *   - nothing leaks: the blocks live after a run (service freed) are the
 *     blocks live before it; under SANITIZE=1, ASan also checks every access
 *     and LeakSanitizer the whole process at exit.
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,
 * --wrap=free: every allocation in build/libposenc*.a and here goes through
 * the wrappers below, and so does jansson's: api_service_new routes it
 * through the codec's allocator (json_doc_setup), which calls malloc. The
 * injection switch is this binary's one piece of global state (the wrappers
 * cannot be given a context).
 *
 *   alloc_test MODELS_DIR   (MODELS_DIR from tests/alloc/write_models.py)
 * Prints one line per case and "alloc: N passed, M failed".
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <execinfo.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

/* ---- the injection switch --------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);

static _Atomic bool armed;       /* count (and maybe fail) allocations */
static _Atomic long alloc_calls; /* counted since arming */
static _Atomic long fail_at;     /* the call that fails, 1-based; 0: none */
static _Atomic long live_blocks; /* allocated and not freed, always tracked */

static long backtrace_at; /* ALLOC_BACKTRACE=N: print where allocation N fails */

/* Whether this allocation is the one to fail. */
static bool should_fail(void)
{
    if (!atomic_load(&armed))
        return false;
    long n = atomic_fetch_add(&alloc_calls, 1) + 1;
    if (n != atomic_load(&fail_at))
        return false;
    if (n == backtrace_at) {
        void *frames[32];
        backtrace_symbols_fd(frames, backtrace(frames, 32), STDOUT_FILENO);
    }
    return true;
}

void *__wrap_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __real_malloc(n);
    if (p)
        atomic_fetch_add(&live_blocks, 1);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    void *p = __real_calloc(n, size);
    if (p)
        atomic_fetch_add(&live_blocks, 1);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    void *q = __real_realloc(p, n);
    if (q && !p)
        atomic_fetch_add(&live_blocks, 1);
    return q;
}

void __wrap_free(void *p)
{
    if (p)
        atomic_fetch_sub(&live_blocks, 1);
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = __wrap_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void arm(long n)
{
    atomic_store(&alloc_calls, 0);
    atomic_store(&fail_at, n);
    atomic_store(&armed, true);
}

static long disarm(void)
{
    atomic_store(&armed, false);
    return atomic_load(&alloc_calls);
}

/* What is running, for a crash report (ASan's death callback). */
static char current[160];

void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void on_death(void)
{
    fprintf(stderr, "alloc_test: died in %s\n", current);
}

/* ---- checks ------------------------------------------------------------------ */

static int passed, failed;

static void result(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void result(bool ok, const char *fmt, ...)
{
    va_list ap;

    if (ok) {
        passed++;
        return;
    }
    failed++;
    fputs("FAIL ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* The whole body of a response, streamed or not (owned by the caller);
 * NULL when a stream failed. */
static char *body_of(api_response *r, size_t *len)
{
    if (!r->stream.read) {
        *len = r->body_len;
        char *copy = __real_malloc(r->body_len + 1);
        memcpy(copy, r->body ? r->body : "", r->body_len);
        copy[r->body_len] = '\0';
        return copy;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = __real_malloc(cap);
    for (;;) {
        if (cap - n < 4096)
            buf = __real_realloc(buf, cap *= 2);
        size_t got = r->stream.read(r->stream.state, buf + n, cap - n);
        if (got == API_STREAM_FAILED) {
            __real_free(buf);
            return NULL;
        }
        if (got == 0)
            break;
        n += got;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The error code in an error body, or "" (parsed with injection off). */
static void error_code_of(const char *body, size_t len, char *code, size_t cap)
{
    json_t *root = json_loadb(body, len, 0, NULL);
    const char *c = json_string_value(json_object_get(json_object_get(root, "error"), "code"));

    snprintf(code, cap, "%s", c ? c : "");
    json_decref(root);
}

/* ---- request cases ---------------------------------------------------------- */

typedef enum endpoint { ENCODE, APPLY, DIAGNOSE } endpoint;

typedef struct request_case {
    const char *name;
    endpoint ep;
    char *body;          /* owned */
    bool cold;           /* each run on a new service, its tables admitted by the run
                   (so the table cache's allocations fail too) */
    const char *ref_has; /* '|'-separated texts the answer without failures holds
                            (what shows the case takes the path meant; NULL: none) */
} request_case;

/* The answers that are neither the same nor 503: each distinct status and
 * code, how often, and the first N that gave it. */
enum { KINDS = 6 };
typedef struct tally {
    long runs, same, unavailable, other, leaks, first_leak;
    struct {
        int status;
        char code[32], message[120];
        long count, first;
    } kind[KINDS];
    size_t n_kinds;
} tally;

static void count_other(tally *t, int status, const char *code, const char *body, long n)
{
    size_t k = 0;

    t->other++;
    while (k < t->n_kinds && (t->kind[k].status != status || strcmp(t->kind[k].code, code)))
        k++;
    if (k == KINDS)
        return;
    if (k == t->n_kinds) {
        t->n_kinds++;
        t->kind[k].status = status;
        snprintf(t->kind[k].code, sizeof t->kind[k].code, "%s", code);
        t->kind[k].first = n;
        snprintf(t->kind[k].message, sizeof t->kind[k].message, "%s", body ? body : "");
    }
    t->kind[k].count++;
}

static void call(const api_service *svc, const request_case *c, api_response *r)
{
    if (c->ep == ENCODE)
        api_encode(svc, NULL, c->body, strlen(c->body), r);
    else if (c->ep == APPLY)
        api_apply(svc, NULL, c->body, strlen(c->body), r);
    else
        api_diagnose(svc, NULL, c->body, strlen(c->body), r);
}

static const api_model_spec *served_spec; /* the models of the shared service */

/* One run with allocation n failing (0: none); *calls receives how many
 * allocations the request made. Returns the body (owned), status in *status. */
static char *run_request(const api_service *shared, const request_case *c, long n, long *calls,
                         int *status, size_t *len)
{
    api_response r;
    api_service *fresh = NULL;
    const api_service *svc = shared;

    if (c->cold) {
        api_limits limits = {0};
        api_error err;
        fresh = api_service_new_with_models(&limits, served_spec, 1, &err);
        if (!fresh) {
            *calls = 0;
            *status = 0;
            return NULL;
        }
        call(fresh, c, &r); /* a table's first use: the armed run admits it */
        api_response_free(&r);
        svc = fresh;
    }
    arm(n);
    call(svc, c, &r);
    char *body = body_of(&r, len);
    *calls = disarm();
    *status = r.status;
    if (r.stream.read && r.stream.free)
        r.stream.free(r.stream.state);
    api_response_free(&r);
    api_service_free(fresh);
    return body;
}

static void check_request(const api_service *svc, const request_case *c)
{
    tally t = {0};
    long calls = 0;
    int status;
    size_t ref_len, len;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* thrice unarmed: the third sees the table cache as every later run does
     * (a table is admitted on its second use; a cold case starts from a new
     * service every time) */
    __real_free(run_request(svc, c, 0, &calls, &status, &ref_len));
    __real_free(run_request(svc, c, 0, &calls, &status, &ref_len));
    char *ref = run_request(svc, c, 0, &calls, &status, &ref_len);
    result(status == 200, "%s: answers 200 without failures (got %d: %.200s)", c->name, status,
           ref ? ref : "");
    for (const char *want = c->ref_has; want && *want;) {
        size_t n = strcspn(want, "|");
        char piece[64];
        snprintf(piece, sizeof piece, "%.*s", (int)n, want);
        result(ref && strstr(ref, piece), "%s: the answer without failures holds %s (%.300s)",
               c->name, piece, ref ? ref : "");
        want += n + (want[n] == '|');
    }
    for (long n = 1; n <= calls; n++) {
        long before = atomic_load(&live_blocks), made;
        snprintf(current, sizeof current, "%s, allocation %ld of %ld failing", c->name, n, calls);
        char *body = run_request(svc, c, n, &made, &status, &len);
        long leaked = atomic_load(&live_blocks) - before;
        char code[32] = "";
        t.runs++;
        if (body && status != 200)
            error_code_of(body, len, code, sizeof code);
        if (body && status == 200 && len == ref_len && memcmp(body, ref, len) == 0) {
            t.same++;
        } else if (body && status == 503 && strcmp(code, "unavailable") == 0) {
            t.unavailable++;
        } else {
            count_other(&t, status, body ? code : "(stream failed)", body, n);
        }
        if (leaked != 0 && t.leaks++ == 0)
            t.first_leak = n;
        __real_free(body);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("%-44s %4ld allocations: %4ld same answer, %4ld 503, %4ld other, %ld leaking "
           "(%.0f ms)\n",
           c->name, calls, t.same, t.unavailable, t.other, t.leaks, ms);
    for (size_t k = 0; k < t.n_kinds; k++)
        printf("    %ld runs answer %d %s (first: allocation %ld failing: %s)\n", t.kind[k].count,
               t.kind[k].status, t.kind[k].code, t.kind[k].first, t.kind[k].message);
    result(t.other == 0, "%s: %ld runs answer neither the same nor 503 unavailable", c->name,
           t.other);
    result(t.leaks == 0, "%s: %ld runs leak; first: allocation %ld failing", c->name, t.leaks,
           t.first_leak);
    __real_free(ref);
}

/* ---- request bodies --------------------------------------------------------- */

typedef struct text {
    char *s; /* owned */
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;

    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap ? 2 * t->cap + (size_t)n : 4096;
        t->s = __real_realloc(t->s, t->cap);
    }
}

/* A deterministic value in [-1, 1): a Weyl sequence, exact in float. */
static float value(size_t i)
{
    return (float)((int)((i * 40503u) % 2048u) - 1024) / 1024.0f;
}

static void put_matrix(text *t, size_t rows, size_t cols, size_t seed)
{
    put(t, "[");
    for (size_t r = 0; r < rows; r++) {
        put(t, "%s[", r ? "," : "");
        for (size_t c = 0; c < cols; c++)
            put(t, "%s%g", c ? "," : "", (double)value(seed + r * cols + c));
        put(t, "]");
    }
    put(t, "]");
}

/* RFC 4648 base64 of n little-endian float32 values. */
static void put_base64(text *t, size_t n, size_t seed)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t bytes = 4 * n;
    unsigned char *raw = __real_malloc(bytes);

    for (size_t i = 0; i < n; i++) {
        float f = value(seed + i);
        uint32_t u;
        memcpy(&u, &f, 4);
        for (int k = 0; k < 4; k++)
            raw[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
    put(t, "\"");
    for (size_t i = 0; i < bytes; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16;
        if (i + 1 < bytes)
            v |= (uint32_t)raw[i + 1] << 8;
        if (i + 2 < bytes)
            v |= raw[i + 2];
        put(t, "%c%c%c%c", abc[v >> 18], abc[(v >> 12) & 63],
            i + 1 < bytes ? abc[(v >> 6) & 63] : '=', i + 2 < bytes ? abc[v & 63] : '=');
    }
    put(t, "\"");
    __real_free(raw);
}

static char *body_sinusoidal_json(void)
{
    text t = {0};
    put(&t, "{\"scheme\":\"sinusoidal\",\"offset\":3,\"embeddings\":");
    put_matrix(&t, 5, 16, 1);
    put(&t, "}");
    return t.s;
}

static char *body_rope_base64(void)
{
    text t = {0};
    put(&t, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":8,\"scaling\":{\"type\":\"yarn\","
            "\"factor\":2,\"original_max_position_embeddings\":8}},\"encoding\":\"base64\","
            "\"shape\":[2,3,16],\"embeddings\":");
    put_base64(&t, 2 * 3 * 16, 2);
    put(&t, "}");
    return t.s;
}

static char *body_alibi_bare(void)
{
    text t = {0};
    put(&t, "{\"scheme\":\"alibi\",\"params\":{\"heads\":3},\"shape\":[4,8],"
            "\"positions\":[0,2,5,9]}");
    return t.s;
}

static char *body_table_bare(void)
{
    text t = {0};
    put(&t, "{\"shape\":[6,10],\"scheme\":\"sinusoidal\",\"params\":{\"layout\":\"split\"}}");
    return t.s;
}

static char *body_apply_default(void)
{
    text t = {0};
    put(&t, "{\"return\":[\"q\",\"k\",\"v\",\"scores\"],\"embeddings\":");
    put_matrix(&t, 3, 512, 3);
    put(&t, "}");
    return t.s;
}

/* An inline t5 model in base64, fed token_ids, all outputs. */
static char *body_apply_inline_t5(void)
{
    text t = {0};
    put(&t, "{\"model\":{\"d_model\":4,\"heads\":2,\"kv_heads\":1,\"head_dim\":2,"
            "\"scheme\":\"t5\",\"params\":{\"num_buckets\":4,\"max_distance\":8},"
            "\"norm\":{\"type\":\"layernorm\",\"eps\":1e-5},\"weights\":{"
            "\"norm_weight\":[1,0.5,2,1],\"norm_bias\":[0,0.1,0,-0.1],\"wq\":");
    put_base64(&t, 4 * 4, 10);
    put(&t, ",\"wq_shape\":[4,4],\"wk\":");
    put_base64(&t, 4 * 2, 20);
    put(&t, ",\"wk_shape\":[4,2],\"wv\":");
    put_base64(&t, 4 * 2, 30);
    put(&t, ",\"wv_shape\":[4,2],\"t5_bias\":");
    put_base64(&t, 4 * 2, 40);
    put(&t, ",\"t5_bias_shape\":[4,2],\"token_embedding\":");
    put_base64(&t, 5 * 4, 50);
    put(&t, ",\"token_embedding_shape\":[5,4]}},\"token_ids\":[[0,3,1],[4,4,2]],"
            "\"return\":[\"q\",\"k\",\"v\",\"encoded\",\"bias\",\"scores\"]}");
    return t.s;
}

/* An inline rope model in JSON numbers with biases and rmsnorm, batched. */
static char *body_apply_inline_rope(void)
{
    text t = {0};
    put(&t, "{\"model\":{\"d_model\":8,\"heads\":2,\"kv_heads\":2,\"scheme\":\"rope\","
            "\"params\":{\"base\":1000},\"norm\":{\"type\":\"rmsnorm\"},\"weights\":{\"wq\":");
    put_matrix(&t, 8, 8, 60);
    put(&t, ",\"wk\":");
    put_matrix(&t, 8, 8, 70);
    put(&t, ",\"wv\":");
    put_matrix(&t, 8, 8, 80);
    put(&t, ",\"bq\":[1,2,3,4,5,6,7,8],\"norm_weight\":[1,1,1,1,2,2,2,2]}},"
            "\"encoding\":\"base64\",\"embeddings\":");
    text x = {0};
    put(&x, "[");
    for (int b = 0; b < 2; b++) {
        put(&x, "%s", b ? "," : "");
        put_matrix(&x, 3, 8, 90 + 24 * (size_t)b);
    }
    put(&x, "]");
    put(&t, "%s,\"return\":[\"q\",\"k\",\"scores\"]}", x.s);
    __real_free(x.s);
    return t.s;
}

/* The loaded posenc-format model, by name, learned-free rope from its dir. */
static char *body_apply_loaded(void)
{
    text t = {0};
    put(&t, "{\"model\":\"tiny\",\"token_ids\":[1,2,3,4],\"return\":[\"q\",\"v\"]}");
    return t.s;
}

/* ---- /diagnose bodies -------------------------------------------------------- */

/* Field `key` of posenc's own answer to `body` (no failure injected), as
 * JSON text (owned, __real_free): subjects that /encode or /apply compute
 * with one parameter other than the claim's, so that the search has a
 * finding to make. */
static char *answer_field(const api_service *svc, endpoint ep, char *body, const char *key)
{
    request_case c = {.name = key, .ep = ep, .body = body};
    long calls;
    int status;
    size_t len;
    char *answer = run_request(svc, &c, 0, &calls, &status, &len);
    json_t *root = json_loadb(answer ? answer : "", answer ? len : 0, 0, NULL);
    char *field = json_dumps(json_object_get(root, key), JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(root);
    __real_free(answer);
    __real_free(body);
    text t = {0};
    put(&t, "%s", field ? field : "null");
    free(field); /* jansson's, through the wrappers */
    return t.s;
}

/* README's example 2: a sinusoidal table whose positions start at 1; with
 * the error map. */
static char *body_diagnose_table(void)
{
    text t = {0};
    put(&t, "{\"scheme\":\"sinusoidal\",\"return_map\":true,\"table\":[[0.8415,0.5403,0.0998,0.995,"
            "0.01,1.0,0.001,1.0],"
            "[0.9093,-0.4161,0.1987,0.9801,0.02,0.9998,0.002,1.0],[0.1411,-0.99,0.2955,0.9553,"
            "0.03,0.9996,0.003,1.0],[-0.7568,-0.6536,0.3894,0.9211,0.04,0.9992,0.004,1.0],"
            "[-0.9589,0.2837,0.4794,0.8776,0.05,0.9988,0.005,1.0],[-0.2794,0.9602,0.5646,0.8253,"
            "0.06,0.9982,0.006,1.0]]}");
    return t.s;
}

/* Embeddings rotated with the interleaved layout, claimed as half. */
static char *body_diagnose_encoded(const api_service *svc)
{
    text x = {0}, req = {0}, t = {0};
    put_matrix(&x, 5, 16, 100);
    put(&req,
        "{\"scheme\":\"rope\",\"params\":{\"head_dim\":8,\"layout\":\"interleaved\"},"
        "\"embeddings\":%s}",
        x.s);
    char *encoded = answer_field(svc, ENCODE, req.s, "encoded");
    put(&t, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":8},\"embeddings\":%s,\"encoded\":%s}",
        x.s, encoded);
    __real_free(x.s);
    __real_free(encoded);
    return t.s;
}

/* README's example 1: a cos/sin cache with interleaved pairs, claimed half;
 * with the error maps in base64. */
static char *body_diagnose_cos_sin(void)
{
    text t = {0};
    put(&t, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":8},\"return_map\":true,"
            "\"encoding\":\"base64\",\"cos\":[[1.0,1.0,1.0,1.0,1.0,1.0,1.0,"
            "1.0],[0.5403,0.5403,0.995,0.995,1.0,1.0,1.0,1.0],[-0.4161,-0.4161,0.9801,0.9801,"
            "0.9998,0.9998,1.0,1.0],[-0.99,-0.99,0.9553,0.9553,0.9996,0.9996,1.0,1.0],[-0.6536,"
            "-0.6536,0.9211,0.9211,0.9992,0.9992,1.0,1.0],[0.2837,0.2837,0.8776,0.8776,0.9988,"
            "0.9988,1.0,1.0]],\"sin\":[[0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0],[0.8415,0.8415,0.0998,"
            "0.0998,0.01,0.01,0.001,0.001],[0.9093,0.9093,0.1987,0.1987,0.02,0.02,0.002,0.002],"
            "[0.1411,0.1411,0.2955,0.2955,0.03,0.03,0.003,0.003],[-0.7568,-0.7568,0.3894,0.3894,"
            "0.04,0.04,0.004,0.004],[-0.9589,-0.9589,0.4794,0.4794,0.05,0.05,0.005,0.005]]}");
    return t.s;
}

/* An ALiBi bias in BLOOM's form, claimed symmetric. */
static char *body_diagnose_bias(const api_service *svc)
{
    text req = {0}, t = {0};
    put(&req, "{\"scheme\":\"alibi\",\"params\":{\"heads\":3,\"form\":\"bloom\"},"
              "\"shape\":[5,1]}");
    char *bias = answer_field(svc, ENCODE, req.s, "bias");
    put(&t, "{\"scheme\":\"alibi\",\"params\":{\"heads\":3},\"bias\":%s}", bias);
    __real_free(bias);
    return t.s;
}

/* README's example 3: ALiBi slopes for 12 heads from the power-of-two formula. */
static char *body_diagnose_slopes(void)
{
    text t = {0};
    put(&t, "{\"scheme\":\"alibi\",\"slopes\":[0.629961,0.39685,0.25,0.15749,0.099213,0.0625,"
            "0.039373,0.024803,0.015625,0.009843,0.006201,0.003906]}");
    return t.s;
}

/* q, k and v of the default model, computed with positions from 2 under
 * `scheme` ("" for the model's own sinusoidal), claimed from 0: under rope
 * the search finds the offset in q and k; under the model's absolute
 * scheme the input to the projection differs (projection_mismatch). */
static char *body_diagnose_qkv(const api_service *svc, const char *scheme)
{
    text x = {0}, t = {0};
    put_matrix(&x, 3, 512, 200);
    char *out[3];
    static const char *const names[] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        text req = {0};
        put(&req, "{\"model\":\"default\",%s\"offset\":2,\"return\":[\"%s\"],\"embeddings\":%s}",
            scheme, names[i], x.s);
        out[i] = answer_field(svc, APPLY, req.s, names[i]);
    }
    put(&t, "{\"model\":\"default\",%s\"embeddings\":%s,\"q\":%s,\"k\":%s,\"v\":%s}", scheme, x.s,
        out[0], out[1], out[2]);
    for (int i = 0; i < 3; i++)
        __real_free(out[i]);
    __real_free(x.s);
    return t.s;
}

/* ---- model loading ---------------------------------------------------------- */

static void check_loading(const char *name, const api_model_spec *spec, size_t n_specs)
{
    api_limits limits = {0};
    api_error err;
    long calls, loaded = 0, refused = 0, other = 0, leaks = 0, first_other = 0, first_leak = 0;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    arm(0);
    api_service *svc = api_service_new_with_models(&limits, spec, n_specs, &err);
    calls = disarm();
    result(svc != NULL, "%s: loads without failures (%s)", name, svc ? "" : err.message);
    api_service_free(svc);
    for (long n = 1; n <= calls; n++) {
        long before = atomic_load(&live_blocks);
        snprintf(current, sizeof current, "%s, allocation %ld of %ld failing", name, n, calls);
        memset(&err, 0, sizeof err);
        arm(n);
        svc = api_service_new_with_models(&limits, spec, n_specs, &err);
        disarm();
        if (svc)
            loaded++;
        else if (err.message[0])
            refused++;
        else if (other++ == 0)
            first_other = n;
        api_service_free(svc);
        if (atomic_load(&live_blocks) != before && leaks++ == 0)
            first_leak = n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("%-44s %4ld allocations: %4ld loaded, %4ld refused with a message, %ld silent, "
           "%ld leaking (%.0f ms)\n",
           name, calls, loaded, refused, other, leaks, ms);
    result(other == 0, "%s: %ld runs fail without a message; first: allocation %ld", name, other,
           first_other);
    result(leaks == 0, "%s: %ld runs leak; first: allocation %ld failing", name, leaks, first_leak);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODELS_DIR (from tests/alloc/write_models.py)\n", argv[0]);
        return 2;
    }
    /* debugging: ALLOC_CASE=text runs the cases whose name holds it, and
     * ALLOC_BACKTRACE=N prints the stack of each failing allocation N */
    const char *only = getenv("ALLOC_CASE");
    if (getenv("ALLOC_BACKTRACE")) {
        void *warm[1];
        backtrace(warm, 1); /* loads libgcc now, not inside a failing run */
        backtrace_at = atol(getenv("ALLOC_BACKTRACE"));
    }
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(on_death);
    setvbuf(stdout, NULL, _IOLBF, 0);

    char posenc_dir[512], llama_dir[512];
    snprintf(posenc_dir, sizeof posenc_dir, "%s/posenc", argv[1]);
    snprintf(llama_dir, sizeof llama_dir, "%s/llama", argv[1]);
    const api_model_spec tiny = {.name = "tiny", .dir = posenc_dir};
    const api_model_spec llama = {.name = "default", .dir = llama_dir};
    const api_model_spec both[] = {tiny, {.name = "llama", .dir = llama_dir, .has_layer = true}};

    static const char *const load_names[] = {"load: built-in default model",
                                             "load: posenc format (+ built-in default)",
                                             "load: HF llama as \"default\"",
                                             "load: posenc format + HF llama layer 0"};
    const api_model_spec *load_specs[] = {NULL, &tiny, &llama, both};
    const size_t load_counts[] = {0, 1, 1, 2};
    for (size_t i = 0; i < 4; i++)
        if (!only || strstr(load_names[i], only))
            check_loading(load_names[i], load_specs[i], load_counts[i]);

    api_limits limits = {0};
    api_error err;
    served_spec = &tiny;
    api_service *svc = api_service_new_with_models(&limits, &tiny, 1, &err);
    if (!svc) {
        printf("FAIL cannot load %s: %s\nalloc: %d passed, %d failed\n", posenc_dir, err.message,
               passed, failed + 1);
        return 1;
    }
    request_case cases[] = {
        {"/encode sinusoidal, JSON", ENCODE, body_sinusoidal_json(), false, NULL},
        {"/encode sinusoidal, JSON, cold table cache", ENCODE, body_sinusoidal_json(), true, NULL},
        {"/encode rope yarn, base64, cold table cache", ENCODE, body_rope_base64(), true, NULL},
        {"/encode rope yarn, base64 in and out, batched", ENCODE, body_rope_base64(), false, NULL},
        {"/encode alibi bare bias, positions", ENCODE, body_alibi_bare(), false, NULL},
        {"/encode bare sinusoidal table, split", ENCODE, body_table_bare(), false, NULL},
        {"/apply default model, scores", APPLY, body_apply_default(), false, NULL},
        {"/apply inline t5, base64 weights, token_ids", APPLY, body_apply_inline_t5(), false, NULL},
        {"/apply inline rope, JSON weights, batched", APPLY, body_apply_inline_rope(), false, NULL},
        {"/apply loaded posenc-format model", APPLY, body_apply_loaded(), false, NULL},
        {"/diagnose table, positions from 1, error map", DIAGNOSE, body_diagnose_table(), false,
         "\"position_offset\"|\"error_map\":[["},
        {"/diagnose embeddings + encoded, rope layout", DIAGNOSE, body_diagnose_encoded(svc), false,
         "\"layout_swapped\""},
        {"/diagnose cos + sin, layout, base64 maps", DIAGNOSE, body_diagnose_cos_sin(), false,
         "\"layout_swapped\"|\"error_map\":{\"cos\":\""},
        {"/diagnose bias, alibi bloom form", DIAGNOSE, body_diagnose_bias(svc), false,
         "\"alibi_form\""},
        {"/diagnose slopes, power-of-two formula", DIAGNOSE, body_diagnose_slopes(), false,
         "\"alibi_slopes\""},
        {"/diagnose q/k/v, default as rope, offset 2", DIAGNOSE,
         body_diagnose_qkv(svc, "\"scheme\":\"rope\","), false, "\"position_offset\""},
        {"/diagnose q/k/v, default model, projection", DIAGNOSE, body_diagnose_qkv(svc, ""), false,
         "\"projection_mismatch\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!only || strstr(cases[i].name, only))
            check_request(svc, &cases[i]);
        __real_free(cases[i].body);
    }
    api_service_free(svc);
    printf("alloc: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

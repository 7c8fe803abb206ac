/*
 * harness.h - the HTTP test harness of posenc: start and stop the real
 * server, send requests with libcurl, read float arrays out of responses
 * exactly, and count checks.
 *
 * Checks are those of every C harness (tests/unit/check_core.h): nothing
 * when they pass, one line when they fail,
 *     FAIL <file>:<line>: <label>: <what>
 * where <label> names the request (method, path and a short description),
 * so that a failure can be reproduced by hand.
 */
#ifndef POSENC_TEST_HARNESS_H
#define POSENC_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "../unit/check_core.h"

/* ---------------------------------------------------------------------- */
/* Checks                                                                  */
/* ---------------------------------------------------------------------- */

/* Record one check of the request `label` (check_at of check_core.h);
 * returns ok so that callers can stop a test that cannot go on.
 * CHECK_INT_EQ, CHECK_STR_EQ and CHECK_FAIL come from check_core.h. */
#define CHECK(ok, label, ...) check_at((ok), __FILE__, __LINE__, (label), __VA_ARGS__)

/* Timeouts are long under valgrind (env VALGRIND=1). */
bool under_valgrind(void);

/* ---------------------------------------------------------------------- */
/* The server under test                                                   */
/* ---------------------------------------------------------------------- */

typedef struct server {
    char name[32]; /* e.g. "default", "apikey": names the log file */
    pid_t pid;     /* 0 when not running */
    int port;
    char base[64]; /* "http://127.0.0.1:PORT" */
    char log_path[512];
    int out_fd;          /* read end of the server's stdout (drained by a thread) */
    char listening[256]; /* its line saying where it listens, as it came */
    bool started;
} server;

/* Fork/exec $POSENC_SERVER (default build/posenc-server) with
 * "--host 127.0.0.1 --port 0" and the NULL-terminated extra arguments,
 * optionally under valgrind (VALGRIND=1). env_set is a NULL-terminated list
 * of "NAME=VALUE" strings added to the child's environment (may be NULL).
 * Waits for "posenc listening on http://HOST:PORT" on its stdout. The
 * server's stderr goes to a log file. Records a check; false on failure. */
bool server_start(server *s, const char *name, const char *const *extra_args,
                  const char *const *env_set);

/* server_start's fork/exec alone: returns once the child runs, without
 * waiting for it to listen (s->port is 0; s->pid is set). For servers
 * that must be caught before they listen; end them with
 * server_wait_exit. */
bool server_spawn(server *s, const char *name, const char *const *extra_args,
                  const char *const *env_set);

/* SIGTERM, wait, and check that the exit status is 0 (a signal, an ASan
 * report or a valgrind error count as failures; the log tail is printed). */
void server_stop(server *s);

/* Send sig to the running server and return at once. */
void server_signal(const server *s, int sig);

/* Wait up to timeout_s for the server to exit (SIGKILL after that). Fills
 * *status with the waitpid status and returns true when it exited by
 * itself. The server counts as stopped afterwards. No check recorded. */
bool server_wait_exit(server *s, double timeout_s, int *status);

/* The server's peak resident set in bytes (VmHWM), or -1 when unreadable
 * or not the server's own (under ASan or valgrind, whose bookkeeping is
 * resident too). */
double server_peak_bytes(const server *s);

/* The server's log (its stderr) so far, NUL-terminated, malloc'd. */
char *server_read_log(const server *s);

/* Seconds on a monotonic clock. */
double mono_now(void);

/* ---------------------------------------------------------------------- */
/* HTTP                                                                    */
/* ---------------------------------------------------------------------- */

typedef struct http_resp {
    long status; /* 0 when the request failed at the transport level */
    char *body;  /* NUL-terminated, owned */
    size_t len;
    char *headers; /* raw header block, NUL-terminated, owned */
    json_t *json;  /* body parsed as JSON, or NULL */
    char transport_error[256];
} http_resp;

void http_resp_free(http_resp *r);

/* One request. ctype NULL: no Content-Type header. body may be NULL.
 * extra_headers: NULL-terminated list of "Name: value" (may be NULL).
 * chunked: send the body with Transfer-Encoding: chunked. */
void http_request(const server *s, const char *method, const char *path, const char *ctype,
                  const char *body, size_t len, const char *const *extra_headers, bool chunked,
                  http_resp *out);

/* POST a JSON body (Content-Type: application/json). */
void http_post_json(const server *s, const char *path, const char *body, http_resp *out);
void http_get(const server *s, const char *path, http_resp *out);

/* Value of a response header (case-insensitive name) copied into buf;
 * false when absent. */
bool http_header(const http_resp *r, const char *name, char *buf, size_t n);

/* Send raw bytes over a plain socket and read the response status (and
 * body) until the server closes or the timeout passes. Returns the status
 * or 0. Used for requests curl will not make (a Content-Length that the
 * body never reaches). */
long raw_request(const server *s, const char *bytes, size_t len, int timeout_s, char *resp_buf,
                 size_t resp_cap);

/* ---------------------------------------------------------------------- */
/* Response checks                                                          */
/* ---------------------------------------------------------------------- */

/* The response is an error of the contract: status, JSON body
 * {"error": {"code", "message", "field"?}} with this code. field: NULL =
 * not checked, "" = must be absent, otherwise one of the '|'-separated
 * alternatives. Returns true when status and code match. */
bool expect_error(const char *label, const http_resp *r, long status, const char *code,
                  const char *field);

/* The response is a 200 with a JSON object body. */
bool expect_ok(const char *label, const http_resp *r);

/* POST body to /diagnose into *r (the caller frees it): a 200 whose
 * "verdict" is `verdict`. Returns whether both hold. */
bool expect_diagnosis(const server *s, const char *label, const char *body, const char *verdict,
                      http_resp *r);

/* What a timing group still checks under valgrind, where its latencies
 * mean nothing: a server started with its flags answers a small /encode
 * and a small /diagnose, and stops clean (no valgrind error or leak). */
void valgrind_functional(const char *name, const char *const *args);

/* ---------------------------------------------------------------------- */
/* Float arrays in responses, read exactly                                  */
/* ---------------------------------------------------------------------- */

#define FARR_MAXDIM 6

/* A float32 array read from a response field: nested JSON numbers (each
 * parsed with strtof from the response text itself) or a base64 string
 * (then its shape comes from the sibling "<key>_shape"). */
typedef struct farr {
    float *v;
    size_t n;
    int ndim;
    size_t shape[FARR_MAXDIM];
    bool base64;
    size_t not_shortest;      /* numbers written with more digits than needed */
    char not_shortest_eg[64]; /* the first such number as written */
} farr;

void farr_free(farr *a);

/* Read top-level field `key` of the response body into *a. On failure
 * records a failed check naming the label and returns false; on success
 * also records a check that every number is written in shortest form. */
bool get_farr(const char *label, const http_resp *r, const char *key, farr *a);

/* The array has this shape (records a check). */
bool check_shape(const char *label, const char *what, const farr *a, int ndim, const size_t *shape);

/* Compare a response array with a reference element by element:
 * |got - want| <= abs_tol + rel_ulps * ulp_f32(want). One check per array,
 * printing the first mismatch and the largest error. */
bool check_close(const char *label, const char *what, const farr *a, const double *want, size_t n,
                 double abs_tol, double rel_ulps);

/* Same with a per-row tolerance relative to the row's Euclidean norm:
 * |got - want| <= rel * ||want row|| + abs_tol (rows of `row` elements). */
bool check_close_rownorm(const char *label, const char *what, const farr *a, const double *want,
                         size_t n, size_t row, double rel, double abs_tol);

/* Bit-exact comparison with float32 values. */
bool check_exact(const char *label, const char *what, const farr *a, const float *want, size_t n);

/* ---------------------------------------------------------------------- */
/* Building request bodies                                                  */
/* ---------------------------------------------------------------------- */

/* A growable string; aborts the test program on out-of-memory. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

void sb_init(sbuf *b);
void sb_free(sbuf *b);
void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_puts(sbuf *b, const char *str);
/* A float written so that it reads back as the same float32 ("%.9g"). */
void sb_float(sbuf *b, float f);
/* A nested JSON array of float32 of the given shape (ndim >= 1). */
void sb_farray(sbuf *b, const float *v, int ndim, const size_t *shape);
/* A JSON array of int64. */
void sb_iarray(sbuf *b, const int64_t *v, size_t n);
/* base64 (standard alphabet, padded) of n little-endian float32, quoted. */
void sb_base64_floats(sbuf *b, const float *v, size_t n);

/* Decode standard padded base64; returns malloc'd bytes or NULL if invalid. */
unsigned char *base64_decode(const char *s, size_t len, size_t *out_len);

/* ---------------------------------------------------------------------- */
/* Small helpers                                                            */
/* ---------------------------------------------------------------------- */

/* Deterministic test data: xorshift-style generator, uniform in [lo, hi),
 * rounded to float32. */
typedef struct trng {
    uint64_t s;
} trng;
void trng_seed(trng *r, uint64_t seed);
float trng_uniform(trng *r, float lo, float hi);
void trng_fill(trng *r, float *v, size_t n, float lo, float hi);

/* strcasestr without _GNU_SOURCE: the first place of needle in hay,
 * ignoring case, or NULL. */
const char *find_nocase(const char *hay, const char *needle);

/* Integer/string members of a JSON object (NULL/-1 when absent). */
const char *jstr(const json_t *obj, const char *key);
long long jint(const json_t *obj, const char *key, long long absent);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);

/* Check the response-judging parts of the harness itself (records checks). */
void harness_selftest(void);

#endif /* POSENC_TEST_HARNESS_H */

/*
 * test_robust.c - the protections that keep posenc up when its clients
 * misbehave, each tried for real against a server started with the flags
 * it needs (small limits and timeouts, so that every test is quick):
 *
 *   reqlimits  nesting depth, batch, dimension, heads, output elements and
 *              per-connection memory limits (422 too_large, 431)
 *   slowclient a slowloris client (headers or body trickled, or nothing at
 *              all) loses its connection after --request-timeout or
 *              --timeout while other clients are served at once
 *   connlimit  past --max-connections: 503 + Retry-After and close, probes
 *              still served, the existing connections unaffected
 *   overload   past --max-inflight: 503 + Retry-After at once; workers
 *              busy computing never delay probes or metrics
 *   drain      SIGTERM/SIGINT: /readyz 503, new connections refused, the
 *              request in flight completes, exit 0; --drain-timeout bounds
 *   observe    metrics values, access log lines (text and JSON), request
 *              ids, and the API key never in any log
 *
 * Each test was checked to fail with its protection taken out of the
 * server (see the README's Operations section for the list).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "raw_socket.h"
#include "tests.h"

/* ---------------------------------------------------------------------- */
/* Raw sockets                                                              */
/* ---------------------------------------------------------------------- */

static bool send_str(int fd, const char *str)
{
    return send_all(fd, str, strlen(str));
}

/* Reads one HTTP response (headers, then Content-Length bytes of body)
 * into buf. Returns the status, or 0 when the connection ended or the
 * timeout passed before a whole response arrived; *closed tells whether
 * the peer closed (EOF or reset). */
static long read_response(int fd, double timeout_s, char *buf, size_t cap, bool *closed)
{
    size_t used = 0;
    double deadline = mono_now() + timeout_s;
    buf[0] = '\0';
    if (closed)
        *closed = false;
    for (;;) {
        const char *hend = strstr(buf, "\r\n\r\n");
        if (hend) {
            const char *cl = find_nocase(buf, "\r\nContent-Length:");
            size_t want = cl && cl < hend ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
            if (used >= (size_t)(hend + 4 - buf) + want)
                return strncmp(buf, "HTTP/1.", 7) == 0 ? strtol(buf + 9, NULL, 10) : 0;
        }
        double left = deadline - mono_now();
        if (left <= 0 || used + 1 >= cap)
            return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return 0;
        ssize_t k = recv(fd, buf + used, cap - 1 - used, 0);
        if (k <= 0) {
            if (closed)
                *closed = true;
            return 0;
        }
        used += (size_t)k;
        buf[used] = '\0';
    }
}

/* Waits until the peer closes fd (EOF or reset); returns the seconds it
 * took, or -1 when it is still open after timeout_s. Data is dropped. */
static double wait_closed(int fd, double timeout_s)
{
    double t0 = mono_now();
    char junk[4096];
    for (;;) {
        double left = t0 + timeout_s - mono_now();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t k = recv(fd, junk, sizeof junk, 0);
        if (k <= 0)
            return mono_now() - t0;
    }
}

/* The value of header `name` in a raw response (case-insensitive), or
 * false. */
static bool raw_header(const char *resp, const char *name, char *out, size_t n)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\r\n%s:", name);
    const char *h = find_nocase(resp, pat);
    const char *end = strstr(resp, "\r\n\r\n");
    if (!h || (end && h > end))
        return false;
    h += strlen(pat);
    while (*h == ' ')
        h++;
    size_t k = strcspn(h, "\r\n");
    snprintf(out, n, "%.*s", (int)k, h);
    return true;
}

static const char *raw_body(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");
    return b ? b + 4 : "";
}

/* A GET with keep-alive on an open connection. */
static long raw_get(int fd, const char *path, char *buf, size_t cap)
{
    char req[512];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    if (!send_str(fd, req))
        return 0;
    return read_response(fd, 10 * slack(), buf, cap, NULL);
}

/* The value of one Prometheus series (exact name with labels), or -1. */
static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

static double get_metric(const server *s, const char *series)
{
    http_resp r;
    http_get(s, "/metrics", &r);
    double v = r.status == 200 ? metric(r.body, series) : -1;
    http_resp_free(&r);
    return v;
}

/* A /encode body of exactly `len` bytes: a small valid request padded with
 * spaces, so that its answer is known. */
static char *encode_body(size_t len)
{
    static const char json[] = "{\"shape\":[2,4]}";
    char *b = xmalloc(len + 1);
    memset(b, ' ', len);
    memcpy(b, json, sizeof json - 1);
    b[len] = '\0';
    return b;
}

/* Starts a POST /encode of a body of `len` bytes and sends only its
 * headers and the first `sent` bytes: a request the server has admitted
 * and is reading. Returns the socket (or -1). */
static int start_upload(const server *s, const char *body, size_t len, size_t sent)
{
    int fd = tcp_open(s);
    if (fd < 0)
        return -1;
    char head[256];
    snprintf(head, sizeof head,
             "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             len);
    if (!send_str(fd, head) || !send_all(fd, body, sent)) {
        close(fd);
        return -1;
    }
    return fd;
}

static char *log_with(const server *s, const char *needle);

/* ---------------------------------------------------------------------- */
/* reqlimits                                                                */
/* ---------------------------------------------------------------------- */

/* {"x": d-1 nested arrays}: an object of depth d whose only field is
 * unknown, so a body within the depth limit is a 400 invalid_request. */
static char *nested(size_t depth)
{
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"x\":");
    for (size_t i = 1; i < depth; i++)
        sb_puts(&b, "[");
    sb_puts(&b, "1");
    for (size_t i = 1; i < depth; i++)
        sb_puts(&b, "]");
    sb_puts(&b, "}");
    return b.s;
}

static void depth_cases(const server *s, size_t limit)
{
    char ok_label[160], over_label[160];
    char *ok = nested(limit), *over = nested(limit + 1);
    /* past jansson's own limit (2048): the same answer, not a parse error */
    char *deep = nested(5000);
    snprintf(ok_label, sizeof ok_label,
             "POST /encode JSON nested %zu deep (limit %zu): unknown field", limit, limit);
    snprintf(over_label, sizeof over_label, "POST /encode JSON nested %zu deep (limit %zu)",
             limit + 1, limit);
    const http_case cases[] = {
        {.name = ok_label,
         .route = "/encode",
         .body = ok,
         .status = 400,
         .code = "invalid_request"},
        {.name = over_label, .route = "/encode", .body = over, .status = 422, .code = "too_large"},
        {.name = "POST /apply JSON nested 5000 deep",
         .route = "/apply",
         .body = deep,
         .status = 422,
         .code = "too_large"},
    };
    RUN_HTTP_CASES(s, cases);
    free(ok);
    free(over);
    free(deep);
}

/* An identity inline model of d_model 2 with a token table of 3 rows. */
#define TOKMODEL                                                                                   \
    "{\"d_model\":2,\"heads\":1,\"weights\":{\"wq\":[[1,0],[0,1]],\"wk\":[[1,0],[0,1]],"           \
    "\"wv\":[[1,0],[0,1]],\"token_embedding\":[[1,2],[3,4],[5,6]]}}"

/* /apply on an inline model of zero weights: d_model d, `heads` heads of
 * head_dim, one token of d ones. */
static char *inline_model_body(size_t d, size_t heads, size_t head_dim)
{
    size_t n = d * heads * head_dim;
    float *w = xcalloc(n, sizeof *w);
    float *x = xcalloc(d, sizeof *x);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"embeddings\":");
    sb_base64_floats(&b, x, d);
    sb_printf(&b,
              ",\"shape\":[1,%zu],\"model\":{\"d_model\":%zu,\"heads\":%zu,\"head_dim\":%zu,"
              "\"weights\":{",
              d, d, heads, head_dim);
    static const char *const names[] = {"wq", "wk", "wv"};
    for (int i = 0; i < 3; i++) {
        sb_printf(&b, "%s\"%s\":", i ? "," : "", names[i]);
        sb_base64_floats(&b, w, n);
        sb_printf(&b, ",\"%s_shape\":[%zu,%zu]", names[i], d, heads * head_dim);
    }
    sb_puts(&b, "}}}");
    free(w);
    free(x);
    return b.s;
}

/* On the server of test_reqlimits: a POST that passes, or one that is
 * refused as too_large. */
/* A macro that is a brace list: clang-format 14 and 19 lay it out apart. */
/* clang-format off */
#define FITS_LIMIT(route_, body_, name_)                                                           \
    {                                                                                              \
        .name = (name_), .route = (route_), .body = (body_)                                        \
    }
#define PAST_LIMIT(route_, body_, name_)                                                           \
    {                                                                                              \
        .name = (name_), .route = (route_), .body = (body_), .status = 422, .code = "too_large"    \
    }
/* clang-format on */

static const http_case REQLIMIT_CASES[] = {
    /* a real request at depth 4 (batched embeddings) passes */
    FITS_LIMIT("/encode", "{\"embeddings\":[[[1,2]],[[3,4]]]}",
               "POST /encode batched embeddings, depth 4 of 8"),
    /* batch */
    FITS_LIMIT("/encode", "{\"shape\":[4,1,2]}", "POST /encode shape [4,1,2] (--max-batch 4)"),
    PAST_LIMIT("/encode", "{\"shape\":[5,1,2]}", "POST /encode shape [5,1,2] (--max-batch 4)"),
    PAST_LIMIT("/encode", "{\"embeddings\":[[[1]],[[1]],[[1]],[[1]],[[1]]]}",
               "POST /encode embeddings batch 5 (--max-batch 4)"),
    FITS_LIMIT("/apply", "{\"model\":" TOKMODEL ",\"token_ids\":[[0],[1],[2],[0]]}",
               "POST /apply token_ids batch 4 (--max-batch 4)"),
    PAST_LIMIT("/apply", "{\"model\":" TOKMODEL ",\"token_ids\":[[0],[1],[2],[0],[1]]}",
               "POST /apply token_ids batch 5 (--max-batch 4)"),
    /* dimensions and heads */
    FITS_LIMIT("/encode", "{\"shape\":[1,64]}", "POST /encode shape [1,64] (--max-dim 64)"),
    PAST_LIMIT("/encode", "{\"shape\":[1,65]}", "POST /encode shape [1,65] (--max-dim 64)"),
    PAST_LIMIT("/encode", "{\"scheme\":\"rope\",\"params\":{\"head_dim\":128},\"shape\":[1,64]}",
               "POST /encode rope head_dim 128 (--max-dim 64)"),
    FITS_LIMIT("/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":4},\"shape\":[2,1]}",
               "POST /encode alibi heads 4 (--max-heads 4)"),
    PAST_LIMIT("/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":5},\"shape\":[2,1]}",
               "POST /encode alibi heads 5 (--max-heads 4)"),
    /* output elements: alibi bias is heads x tokens x tokens */
    FITS_LIMIT("/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":4},\"shape\":[32,1]}",
               "POST /encode alibi bias 4x32x32 = 4096 (--max-output-elements 4096)"),
    PAST_LIMIT("/encode", "{\"scheme\":\"alibi\",\"params\":{\"heads\":4},\"shape\":[33,1]}",
               "POST /encode alibi bias 4x33x33 (--max-output-elements 4096)"),
};

/* The status of GET /healthz with a 12 KiB header block (0: no answer). */
static long big_header_status(const server *s)
{
    char *big = xmalloc(16384);
    char pad[12289];
    memset(pad, 'a', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    snprintf(big, 16384, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: %s\r\n\r\n", pad);
    char resp[8192];
    long st = raw_request(s, big, strlen(big), (int)(10 * slack()), resp, sizeof resp);
    free(big);
    return st;
}

void test_reqlimits(void)
{
    server s;
    const char *args[] = {"--max-json-depth",
                          "8",
                          "--max-batch",
                          "4",
                          "--max-dim",
                          "64",
                          "--max-heads",
                          "4",
                          "--max-tokens",
                          "64",
                          "--max-output-elements",
                          "4096",
                          "--connection-memory",
                          "8192",
                          NULL};
    if (server_start(&s, "reqlimits", args, NULL)) {
        depth_cases(&s, 8);
        RUN_HTTP_CASES(&s, REQLIMIT_CASES);
        /* tokens through token_ids: refused before the rows are gathered */
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{\"model\":" TOKMODEL ",\"token_ids\":[0");
        for (int i = 1; i < 65; i++)
            sb_puts(&b, ",1");
        sb_puts(&b, "]}");
        char *m5 = inline_model_body(10, 5, 2), *m4 = inline_model_body(8, 4, 2);
        char *d65 = inline_model_body(65, 1, 65);
        const http_case built[] = {
            PAST_LIMIT("/apply", b.s, "POST /apply 65 token_ids (--max-tokens 64)"),
            PAST_LIMIT("/apply", m5, "POST /apply inline model with 5 heads (--max-heads 4)"),
            FITS_LIMIT("/apply", m4, "POST /apply inline model with 4 heads (--max-heads 4)"),
            PAST_LIMIT("/apply", d65, "POST /apply inline model d_model 65 (--max-dim 64)"),
        };
        RUN_HTTP_CASES(&s, built);
        sb_free(&b);
        free(m5);
        free(m4);
        free(d65);
        /* per-connection memory: a 12 KiB header block does not fit 8 KiB */
        CHECK_INT_EQ("GET /healthz with a 12 KiB header (--connection-memory 8192)",
                     big_header_status(&s), 431);
        run_http_case(&s, &(http_case){.name = "GET /healthz after the limit checks",
                                       .method = "GET",
                                       .route = "/healthz",
                                       .status_only = true});
        http_resp r;
        /* /info reports the limits */
        http_get(&s, "/info", &r);
        json_t *lim = r.json ? json_object_get(r.json, "limits") : NULL;
        CHECK(jint(lim, "max_json_depth", -1) == 8 && jint(lim, "max_batch", -1) == 4 &&
                  jint(lim, "max_dim", -1) == 64 && jint(lim, "max_heads", -1) == 4 &&
                  jint(lim, "max_output_elements", -1) == 4096 &&
                  jint(lim, "connection_memory_bytes", -1) == 8192,
              "GET /info limits", "limits do not show the flags: %.300s", r.body);
        http_resp_free(&r);
        server_stop(&s);
    }

    /* The defaults: depth 32, and a 12 KiB header block fits 64 KiB. */
    if (server_start(&s, "reqlimits-default", NULL, NULL)) {
        depth_cases(&s, 32);
        CHECK_INT_EQ("GET /healthz with a 12 KiB header (default connection memory)",
                     big_header_status(&s), 200);
        server_stop(&s);
    }
}

/* ---------------------------------------------------------------------- */
/* slowclient                                                               */
/* ---------------------------------------------------------------------- */

typedef struct trickler {
    const server *s;
    const char *bytes; /* sent one every `every` seconds */
    size_t burst;      /* ... after these many sent at once */
    double every;
    double max_s;        /* give up after this long */
    double closed_after; /* out: seconds until the server closed, -1 never */
    size_t sent;         /* out */
} trickler;

static void *trickle_main(void *arg)
{
    trickler *t = arg;
    t->closed_after = -1;
    int fd = tcp_open(t->s);
    if (fd < 0)
        return NULL;
    double t0 = mono_now();
    size_t n = strlen(t->bytes);
    if (t->burst > 0 && send_all(fd, t->bytes, t->burst))
        t->sent = t->burst;
    while (mono_now() - t0 < t->max_s) {
        if (t->sent < n) {
            if (send(fd, t->bytes + t->sent, 1, MSG_NOSIGNAL) != 1) {
                t->closed_after = mono_now() - t0;
                break;
            }
            t->sent++;
        }
        double c = wait_closed(fd, t->every);
        if (c >= 0) {
            t->closed_after = mono_now() - t0;
            break;
        }
    }
    close(fd);
    return NULL;
}

void test_slowclient(void)
{
    server s;
    const char *args[] = {"--timeout", "2", "--request-timeout", "3",
                          "--threads", "2", "--max-connections", "16",
                          NULL};
    if (!server_start(&s, "slowclient", args, NULL))
        return;
    /* 1: headers trickled a byte every 0.25 s (never idle for 2 s);
     * 2: headers sent, body trickled; 3: connected, nothing sent. */
    static char head[4096];
    static char body_req[4096];
    snprintf(head, sizeof head,
             "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             "X-Slow: %0200d\r\n\r\n",
             0);
    snprintf(body_req, sizeof body_req,
             "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             "Content-Length: 500\r\nX-Request-Id: slow-body\r\n\r\n{\"shape\":[1,2]}%0400d",
             0);
    double max_s = 12 * (under_valgrind() ? 3 : 1);
    trickler t[3] = {
        {.s = &s, .bytes = head, .every = 0.25, .max_s = max_s},
        {.s = &s,
         .bytes = body_req,
         .every = 0.25,
         .max_s = max_s,
         .burst = (size_t)(strstr(body_req, "\r\n\r\n") + 4 - body_req)},
        {.s = &s, .bytes = "", .every = 0.25, .max_s = max_s},
    };
    pthread_t th[3];
    int started = 0;
    for (int i = 0; i < 3; i++)
        if (pthread_create(&th[i], NULL, trickle_main, &t[i]) == 0)
            started++;
    CHECK(started == 3, "slowclient", "started %d of 3 slow clients", started);

    /* Meanwhile other clients are served at once, repeatedly. */
    double worst = 0;
    int served = 0, tries = 0;
    double t0 = mono_now();
    while (mono_now() - t0 < 4.0) {
        double a = mono_now();
        http_resp r;
        http_post_json(&s, "/encode", "{\"shape\":[2,4]}", &r);
        double took = mono_now() - a;
        tries++;
        served += r.status == 200;
        if (took > worst)
            worst = took;
        http_resp_free(&r);
        sleep_s(0.2);
    }
    CHECK(served == tries, "POST /encode while 3 slow clients hold connections",
          "%d of %d answered 200", served, tries);
    CHECK(worst < 0.5 * slack(), "POST /encode while 3 slow clients hold connections",
          "slowest answer took %.3f s", worst);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);

    /* request timeout 3 s (checked every 0.1 s); idle timeout 2 s */
    double hi = 3.0 + 1.5 * slack();
    CHECK(t[0].closed_after >= 2.8 && t[0].closed_after <= hi,
          "slowloris: headers trickled every 0.25 s (--request-timeout 3)",
          "connection closed after %.2f s (-1: never within %.0f s), want about 3 s; %zu bytes "
          "sent",
          t[0].closed_after, max_s, t[0].sent);
    CHECK(t[1].closed_after >= 2.8 && t[1].closed_after <= hi,
          "slowloris: body trickled every 0.25 s (--request-timeout 3)",
          "connection closed after %.2f s (-1: never within %.0f s), want about 3 s; %zu bytes "
          "sent",
          t[1].closed_after, max_s, t[1].sent);
    CHECK(t[2].closed_after >= 1.8 && t[2].closed_after <= 2.0 + 0.6 * slack(),
          "idle connection (--timeout 2)", "closed after %.2f s, want about 2 s",
          t[2].closed_after);
    double timed_out = get_metric(&s, "posenc_connections_timed_out_total");
    CHECK(timed_out >= 2, "GET /metrics posenc_connections_timed_out_total", "%.0f, want >= 2",
          timed_out);
    /* the cut request is logged with 408 */
    char *log = log_with(&s, " slow-body");
    CHECK(strstr(log, "POST /encode 408 ") && strstr(log, " slow-body"),
          "access log of the slow body", "no 'POST /encode 408 ... slow-body' line");
    free(log);

    /* a client that is merely quick enough keeps its connection */
    int fd = tcp_open(&s);
    char buf[8192];
    long st = fd >= 0 ? raw_get(fd, "/healthz", buf, sizeof buf) : 0;
    sleep_s(1.0);
    long st2 = fd >= 0 ? raw_get(fd, "/healthz", buf, sizeof buf) : 0;
    CHECK(st == 200 && st2 == 200, "keep-alive connection used again after 1 s", "got %ld then %ld",
          st, st2);
    if (fd >= 0)
        close(fd);
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* connlimit                                                                */
/* ---------------------------------------------------------------------- */

void test_connlimit(void)
{
    server s;
    const char *args[] = {"--max-connections", "4", "--threads", "2", NULL};
    if (!server_start(&s, "connlimit", args, NULL))
        return;
    char buf[8192];
    int held[4];
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        held[i] = tcp_open(&s);
        if (held[i] >= 0 && raw_get(held[i], "/healthz", buf, sizeof buf) == 200)
            ok++;
    }
    CHECK(ok == 4, "4 keep-alive connections (--max-connections 4)", "%d of 4 work", ok);

    /* a fifth: 503 with Retry-After, then closed */
    int fd = tcp_open(&s);
    long st = fd >= 0 ? raw_get(fd, "/info", buf, sizeof buf) : 0;
    char ra[32] = "", conn[32] = "";
    raw_header(buf, "Retry-After", ra, sizeof ra);
    raw_header(buf, "Connection", conn, sizeof conn);
    CHECK(st == 503 && strstr(raw_body(buf), "\"unavailable\"") && ra[0] &&
              strcasecmp(conn, "close") == 0,
          "GET /info on a 5th connection (--max-connections 4)",
          "want 503 unavailable with Retry-After and Connection: close, got %ld (Retry-After '%s', "
          "Connection '%s'): %.200s",
          st, ra, conn, raw_body(buf));
    double c = fd >= 0 ? wait_closed(fd, 5 * slack()) : -1;
    CHECK(c >= 0, "5th connection closed after its 503", "still open after %.0f s", 5 * slack());
    if (fd >= 0)
        close(fd);
    /* probes are still served past the limit */
    fd = tcp_open(&s);
    st = fd >= 0 ? raw_get(fd, "/healthz", buf, sizeof buf) : 0;
    CHECK(st == 200, "GET /healthz on a connection past the limit", "got %ld", st);
    if (fd >= 0)
        close(fd);
    /* the four connections are unaffected */
    ok = 0;
    for (int i = 0; i < 4; i++)
        if (held[i] >= 0 && raw_get(held[i], "/info", buf, sizeof buf) == 200)
            ok++;
    CHECK(ok == 4, "GET /info on the 4 connections within the limit", "%d of 4 answered 200", ok);
    /* free two slots: new connections work again */
    close(held[0]);
    close(held[1]);
    held[0] = held[1] = -1;
    double t0 = mono_now();
    st = 0;
    while (st != 200 && mono_now() - t0 < 5 * slack()) {
        fd = tcp_open(&s);
        st = fd >= 0 ? raw_get(fd, "/info", buf, sizeof buf) : 0;
        if (fd >= 0)
            close(fd);
        if (st != 200)
            sleep_s(0.1);
    }
    CHECK(st == 200, "GET /info on a new connection once two are closed", "got %ld", st);
    for (int i = 2; i < 4; i++)
        close(held[i]);
    double over = get_metric(&s, "posenc_connections_over_limit_total");
    CHECK(over >= 2, "GET /metrics posenc_connections_over_limit_total", "%.0f, want >= 2", over);
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* overload                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct poster {
    const server *s;
    const char *path;
    const char *body;
    long status; /* out */
    double took; /* out */
    char retry_after[32];
} poster;

static void *post_main(void *arg)
{
    poster *p = arg;
    http_resp r;
    double t0 = mono_now();
    http_post_json(p->s, p->path, p->body, &r);
    p->took = mono_now() - t0;
    p->status = r.status;
    p->retry_after[0] = '\0';
    http_header(&r, "Retry-After", p->retry_after, sizeof p->retry_after);
    http_resp_free(&r);
    return NULL;
}

/* A base64 /apply on the default model with `tokens` tokens returning q:
 * mostly compute (the QKV product), an answer no bigger than the body, and
 * a body well past the size that may compute on an HTTP thread, so it goes
 * to the workers. */
static char *long_apply(size_t tokens)
{
    float *x = xcalloc(tokens * DEFAULT_D, sizeof *x);
    trng g;
    trng_seed(&g, 7);
    trng_fill(&g, x, tokens * DEFAULT_D, -1, 1);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"embeddings\":");
    sb_base64_floats(&b, x, tokens * DEFAULT_D);
    sb_printf(&b, ",\"shape\":[%zu,%d],\"return\":[\"q\"],\"encoding\":\"base64\"}", tokens,
              DEFAULT_D);
    free(x);
    return b.s;
}

/* A long_apply body that takes at least min_s to compute on s (its time
 * in *one), doubling the tokens up to 16384 tokens. */
static char *calibrated_apply(const server *s, double min_s, double *one)
{
    size_t tokens = 1024;
    char *body = NULL;
    for (;;) {
        free(body);
        body = long_apply(tokens);
        poster p = {.s = s, .path = "/apply", .body = body};
        post_main(&p);
        *one = p.took;
        if (p.status != 200 || *one >= min_s || tokens >= 16384)
            return body;
        tokens *= 2;
    }
}

void test_overload(void)
{
    server s;
    char buf[16384];
    /* Part 1: one slot, held by a request that computes (a request whose
     * body is still coming holds none, limit slow-body: test_intake.c). */
    const char *args[] = {"--max-inflight", "1", "--workers", "1", "--threads", "2", NULL};
    if (!under_valgrind() && server_start(&s, "overload", args, NULL)) {
        double one = 0;
        char *slow = calibrated_apply(&s, 2.0, &one);
        poster holder = {.s = &s, .path = "/apply", .body = slow};
        pthread_t hold;
        pthread_create(&hold, NULL, post_main, &holder);
        double t0 = mono_now();
        while (mono_now() - t0 < 2 && get_metric(&s, "posenc_workers_busy") < 1)
            sleep_s(0.01);
        enum { N = 6 };
        poster p[N];
        pthread_t th[N];
        for (int i = 0; i < N; i++) {
            p[i] = (poster){.s = &s,
                            .path = i % 2 ? "/apply" : "/encode",
                            .body = "{\"embeddings\":[[1,2]],\"scheme\":\"none\"}"};
            pthread_create(&th[i], NULL, post_main, &p[i]);
        }
        int n503 = 0, fast = 0, with_ra = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(th[i], NULL);
            n503 += p[i].status == 503;
            fast += p[i].took < 1.0 * slack();
            with_ra += p[i].retry_after[0] != '\0';
        }
        CHECK(n503 == N && fast == N && with_ra == N,
              "6 concurrent POSTs while the only slot is taken (--max-inflight 1)",
              "%d of %d got 503, %d within %.1f s, %d with Retry-After (one /apply: %.2f s)", n503,
              N, fast, 1.0 * slack(), with_ra, one);
        /* a client that sends its whole body before reading must still
         * read the 503, not a reset (8 MB: more than socket buffers hold) */
        size_t big_len = (size_t)8 << 20;
        char *big = encode_body(big_len);
        int late = start_upload(&s, big, big_len, 0);
        sleep_s(0.2);
        bool big_sent = late >= 0 && send_all(late, big, big_len);
        long lst = big_sent ? read_response(late, 10 * slack(), buf, sizeof buf, NULL) : 0;
        char lra[32] = "";
        raw_header(buf, "Retry-After", lra, sizeof lra);
        CHECK(big_sent && lst == 503 && lra[0],
              "POST /encode 8 MB body sent after the headers, while the slot is taken",
              "body sent: %d, then status %ld (want 503 with Retry-After, not a reset)", big_sent,
              lst);
        if (late >= 0)
            close(late);
        free(big);
        http_resp r;
        double a = mono_now();
        http_get(&s, "/healthz", &r);
        CHECK(r.status == 200 && mono_now() - a < 0.5 * slack(), "GET /healthz while overloaded",
              "got %ld after %.3f s", r.status, mono_now() - a);
        http_resp_free(&r);
        /* the admitted request completes normally */
        pthread_join(hold, NULL);
        CHECK(holder.status == 200, "the admitted POST /apply", "got %ld", holder.status);
        /* and its slot is free again */
        http_post_json(&s, "/encode", "{\"shape\":[2,4]}", &r);
        expect_ok("POST /encode once the slot is free", &r);
        http_resp_free(&r);
        free(slow);
        server_stop(&s);
    }

    /* Part 2: the only worker computes; requests queue (no 503 within
     * --max-inflight) and probes and metrics are answered at once. */
    if (under_valgrind()) { /* long computations take minutes under valgrind */
        valgrind_functional("overload", args);
        return;
    }
    /* one HTTP thread: it must never be the one computing */
    const char *args2[] = {"--max-inflight", "8", "--workers", "1", "--threads", "1", NULL};
    if (!server_start(&s, "overload-busy", args2, NULL))
        return;
    /* calibrate: a request of at least 0.8 s, most of it computing, which
     * must never hold the HTTP thread */
    double one = 0;
    char *body = calibrated_apply(&s, 0.8, &one);
    enum { M = 3 };
    poster p[M];
    pthread_t th[M];
    for (int i = 0; i < M; i++) {
        p[i] = (poster){.s = &s, .path = "/apply", .body = body};
        pthread_create(&th[i], NULL, post_main, &p[i]);
    }
    /* while the worker computes (the requests are a few tenths of their
     * compute time in), probes and metrics must answer at once */
    sleep_s(one / 4 < 0.15 ? one / 4 : 0.15);
    double worst = 0;
    for (int i = 0; i < 5; i++) {
        http_resp r;
        double a = mono_now();
        http_get(&s, i % 2 ? "/metrics" : "/healthz", &r);
        double took = mono_now() - a;
        if (r.status != 200)
            took = 1e9;
        if (took > worst)
            worst = took;
        http_resp_free(&r);
    }
    CHECK(worst < 0.15, "GET /healthz and /metrics while the worker computes",
          "slowest took %.3f s (one computation: %.2f s)", worst, one);
    /* the worker is busy and the other requests queue for it */
    double t0 = mono_now(), busy = 0, queued = 0;
    while (mono_now() - t0 < 5 && (busy < 1 || queued < 1)) {
        busy = get_metric(&s, "posenc_workers_busy");
        queued = get_metric(&s, "posenc_queue_depth");
        if (busy < 1 || queued < 1)
            sleep_s(0.01);
    }
    CHECK(busy == 1 && queued >= 1, "GET /metrics while the only worker computes",
          "posenc_workers_busy %.0f (want 1), posenc_queue_depth %.0f (want >= 1); "
          "one request takes %.2f s",
          busy, queued, one);
    int ok = 0;
    for (int i = 0; i < M; i++) {
        pthread_join(th[i], NULL);
        ok += p[i].status == 200;
    }
    CHECK(ok == M, "3 queued POST /apply (--workers 1, --max-inflight 8)", "%d of %d got 200", ok,
          M);
    free(body);
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* drain                                                                    */
/* ---------------------------------------------------------------------- */

static void drain_once(int sig, const char *signame)
{
    server s;
    char name[32], label[160];
    snprintf(name, sizeof name, "drain-%s", signame);
    const char *args[] = {"--drain-timeout", "20", "--threads", "2", NULL};
    if (!server_start(&s, name, args, NULL))
        return;
    char buf[16384];
    int keep = tcp_open(&s);
    long st = keep >= 0 ? raw_get(keep, "/readyz", buf, sizeof buf) : 0;
    snprintf(label, sizeof label, "%s: GET /readyz before", signame);
    CHECK(st == 200, label, "got %ld", st);
    size_t len = 4000;
    char *body = encode_body(len);
    int inflight = start_upload(&s, body, len, 100);
    sleep_s(0.3);

    server_signal(&s, sig);
    sleep_s(0.5 * slack());
    /* readiness turns 503 (asked on the connection opened before) */
    st = keep >= 0 ? raw_get(keep, "/readyz", buf, sizeof buf) : 0;
    snprintf(label, sizeof label, "%s: GET /readyz while draining", signame);
    char ra[32] = "";
    raw_header(buf, "Retry-After", ra, sizeof ra);
    CHECK(st == 503 && ra[0], label, "want 503 with Retry-After, got %ld: %.200s", st,
          raw_body(buf));
    /* new connections are refused */
    int fresh = tcp_open(&s);
    long fst = 0;
    if (fresh >= 0) {
        fst = raw_get(fresh, "/healthz", buf, sizeof buf);
        close(fresh);
    }
    snprintf(label, sizeof label, "%s: a new connection while draining", signame);
    CHECK(fresh < 0 || fst == 0, label, "was accepted and answered %ld", fst);
    /* still running: a request is in flight */
    int wst;
    snprintf(label, sizeof label, "%s: server waits for the request in flight", signame);
    CHECK(waitpid(s.pid, &wst, WNOHANG) == 0, label, "server exited before the request ended");
    /* the request in flight completes with its right answer */
    bool sent = inflight >= 0 && send_all(inflight, body + 100, len - 100);
    st = sent ? read_response(inflight, 10 * slack(), buf, sizeof buf, NULL) : 0;
    snprintf(label, sizeof label, "%s: POST /encode in flight completes", signame);
    json_error_t jerr;
    json_t *j = st == 200 ? json_loads(raw_body(buf), 0, &jerr) : NULL;
    json_t *enc = j ? json_object_get(j, "encoded") : NULL;
    /* shape [2,4] sinusoidal: row 0 is sin 0, cos 0, sin 0, cos 0 */
    CHECK(json_array_size(enc) == 2 &&
              json_number_value(json_array_get(json_array_get(enc, 0), 1)) == 1.0,
          label, "got %ld: %.200s", st, raw_body(buf));
    json_decref(j);
    if (inflight >= 0)
        close(inflight);
    if (keep >= 0)
        close(keep);
    /* then the server exits 0 by itself */
    double t0 = mono_now();
    bool exited = server_wait_exit(&s, 10 * slack(), &wst);
    snprintf(label, sizeof label, "%s: exit after the drain", signame);
    CHECK(exited && WIFEXITED(wst) && WEXITSTATUS(wst) == 0, label,
          "exited %d, status %d (signal %d), after %.2f s", exited,
          WIFEXITED(wst) ? WEXITSTATUS(wst) : -1, WIFSIGNALED(wst) ? WTERMSIG(wst) : 0,
          mono_now() - t0);
    free(body);
}

void test_drain(void)
{
    drain_once(SIGTERM, "SIGTERM");
    drain_once(SIGINT, "SIGINT");

    /* --drain-timeout bounds the wait for a request that never ends */
    server s;
    const char *args[] = {"--drain-timeout", "1", NULL};
    if (!server_start(&s, "drain-timeout", args, NULL))
        return;
    size_t len = 4000;
    char *body = encode_body(len);
    int stuck = start_upload(&s, body, len, 100);
    sleep_s(0.3);
    double t0 = mono_now();
    server_signal(&s, SIGTERM);
    int wst;
    bool exited = server_wait_exit(&s, 10 * slack(), &wst);
    double took = mono_now() - t0;
    CHECK(exited && WIFEXITED(wst) && WEXITSTATUS(wst) == 0 && took >= 0.9 &&
              took < 1.0 + 2 * slack(),
          "SIGTERM with a request stuck in flight (--drain-timeout 1)",
          "exited %d status %d after %.2f s, want 0 after about 1 s", exited,
          WIFEXITED(wst) ? WEXITSTATUS(wst) : -1, took);
    if (stuck >= 0)
        close(stuck);
    free(body);
}

/* ---------------------------------------------------------------------- */
/* observe                                                                  */
/* ---------------------------------------------------------------------- */

/* The access-log lines of a server log (JSON format: objects with a
 * request_id). Returns how many lines have that request id, and the last
 * one parsed in *out (caller decrefs). */
static int json_log_lines(const char *log, const char *id, json_t **out)
{
    int n = 0;
    *out = NULL;
    const char *p = log;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        json_error_t jerr;
        json_t *j = json_loadb(p, len, 0, &jerr);
        const char *rid = j ? jstr(j, "request_id") : NULL;
        if (rid && strcmp(rid, id) == 0) {
            n++;
            json_decref(*out);
            *out = j;
        } else {
            json_decref(j);
        }
        p += len + (nl ? 1 : 0);
    }
    return n;
}

/* Waits (up to 2 s) for the log to hold `needle`: the access line is
 * written when the request completes, just after the client has its
 * answer. */
static char *log_with(const server *s, const char *needle)
{
    double t0 = mono_now();
    for (;;) {
        char *log = server_read_log(s);
        if (strstr(log, needle) || mono_now() - t0 > 2 * slack())
            return log;
        free(log);
        sleep_s(0.02);
    }
}

/* Waits (up to 2 s) until the text log holds `count` access lines (the
 * lines that are neither server messages nor valgrind's). */
static void wait_access_lines(const server *s, int count)
{
    double t0 = mono_now();
    for (;;) {
        char *log = server_read_log(s);
        int n = 0;
        for (const char *p = log; *p;) {
            const char *nl = strchr(p, '\n');
            if (!nl)
                break;
            if (strncmp(p, "posenc: ", 8) != 0 && strncmp(p, "==", 2) != 0)
                n++;
            p = nl + 1;
        }
        free(log);
        if (n >= count || mono_now() - t0 > 2 * slack())
            return;
        sleep_s(0.02);
    }
}

static void observe_apikey(void)
{
    static const char key[] = "k3y-Never-Logged-7781";
    static const char wrong[] = "wr0ng-Never-Logged-5512";
    server s;
    const char *args[] = {"--api-key", key, "--log-format", "json", NULL};
    for (int variant = 0; variant < 2; variant++) {
        /* the flag, then the environment variable */
        char envkey[64];
        snprintf(envkey, sizeof envkey, "POSENC_API_KEY=%s", key);
        const char *env[] = {envkey, NULL};
        bool up = variant == 0 ? server_start(&s, "apikey-log", args, NULL)
                               : server_start(&s, "apikey-log-env", args + 2, env);
        if (!up)
            continue;
        char good[96], bad[96];
        snprintf(good, sizeof good, "Authorization: Bearer %s", key);
        snprintf(bad, sizeof bad, "Authorization: Bearer %s", wrong);
        const char *gh[] = {good, "X-Request-Id: key-ok", NULL};
        const char *bh[] = {bad, "X-Request-Id: key-bad", NULL};
        http_resp r;
        http_request(&s, "POST", "/encode", "application/json", "{\"shape\":[1,2]}", 15, gh, false,
                     &r);
        expect_ok("POST /encode with the key", &r);
        http_resp_free(&r);
        http_request(&s, "POST", "/encode", "application/json", "{\"shape\":[1,2]}", 15, bh, false,
                     &r);
        expect_error("POST /encode with a wrong key", &r, 401, "unauthorized", NULL);
        CHECK(!strstr(r.body, wrong), "401 body", "echoes the wrong key");
        http_resp_free(&r);
        http_request(&s, "GET", "/info", NULL, NULL, 0, gh, false, &r);
        CHECK(r.status == 200 && !strstr(r.body, key), "GET /info with the key",
              "status %ld, or the body shows the key", r.status);
        http_resp_free(&r);
        http_request(&s, "GET", "/metrics", NULL, NULL, 0, gh, false, &r);
        CHECK(r.status == 200 && !strstr(r.body, key), "GET /metrics with the key",
              "status %ld, or the body shows the key", r.status);
        http_resp_free(&r);
        server_stop(&s);
        char *log = server_read_log(&s);
        /* valgrind's own lines ("==PID== Command: ...") show the command
         * line, flag included: only the server's lines count */
        for (char *line = log; *line;) {
            char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
            if (strncmp(line, "==", 2) == 0)
                memset(line, ' ', len - (nl ? 1 : 0));
            line += len;
        }
        CHECK(strstr(log, "key-ok") && strstr(log, "key-bad"),
              variant ? "log (key from POSENC_API_KEY)" : "log (key from --api-key)",
              "the two requests are not in the access log");
        CHECK(!strstr(log, key) && !strstr(log, wrong),
              variant ? "log (key from POSENC_API_KEY)" : "log (key from --api-key)",
              "the server log shows an API key");
        free(log);
    }
}

/* Sum of one histogram's buckets must be non-decreasing; returns the +Inf
 * bucket (or -1 when the series is not well-formed). */
static double histogram_ok(const char *text, const char *route, double *count, double *sum)
{
    static const char *const le[] = {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
                                     "0.05",   "0.1",   "0.25",   "0.5",   "1",    "2.5",
                                     "5",      "7.5",   "10",     "+Inf"};
    double prev = 0;
    for (size_t i = 0; i < sizeof le / sizeof le[0]; i++) {
        char series[160];
        snprintf(series, sizeof series,
                 "posenc_request_duration_seconds_bucket{route=\"%s\",le=\"%s\"}", route, le[i]);
        double v = metric(text, series);
        if (v < prev)
            return -1;
        prev = v;
    }
    char series[160];
    snprintf(series, sizeof series, "posenc_request_duration_seconds_count{route=\"%s\"}", route);
    *count = metric(text, series);
    snprintf(series, sizeof series, "posenc_request_duration_seconds_sum{route=\"%s\"}", route);
    *sum = metric(text, series);
    return prev;
}

static void observe_metrics(void)
{
    server s;
    if (!server_start(&s, "metrics", NULL, NULL))
        return;
    uint64_t bytes_in = 0, bytes_out = 0;
    http_resp r;
    /* 3 x [3,4] (3 tokens) and 2 x [2,5,4] (10 tokens): 29 tokens */
    static const char *const ok_bodies[] = {"{\"shape\":[3,4]}", "{\"shape\":[2,5,4]}",
                                            "{\"shape\":[3,4]}", "{\"shape\":[2,5,4]}",
                                            "{\"shape\":[3,4]}"};
    for (size_t i = 0; i < 5; i++) {
        http_post_json(&s, "/encode", ok_bodies[i], &r);
        expect_ok("POST /encode for the metrics", &r);
        bytes_in += strlen(ok_bodies[i]);
        bytes_out += r.len;
        http_resp_free(&r);
    }
    for (int i = 0; i < 2; i++) {
        http_post_json(&s, "/encode", "{oops", &r);
        expect_error("POST /encode bad JSON for the metrics", &r, 400, "invalid_json", NULL);
        bytes_in += 5;
        bytes_out += r.len;
        http_resp_free(&r);
    }
    http_get(&s, "/nope", &r);
    bytes_out += r.len;
    http_resp_free(&r);
    /* counted when each request ends, which may be just after its client
     * has the answer: wait for their 8 access lines */
    wait_access_lines(&s, 8);

    http_get(&s, "/metrics", &r);
    const char *m = r.status == 200 ? r.body : "";
    const char *L = "GET /metrics after 5 good, 2 bad /encode and a 404";
    CHECK(metric(m, "posenc_requests_total{route=\"/encode\",status=\"200\"}") == 5, L,
          "/encode 200 count %.0f, want 5",
          metric(m, "posenc_requests_total{route=\"/encode\",status=\"200\"}"));
    CHECK(metric(m, "posenc_requests_total{route=\"/encode\",status=\"400\"}") == 2, L,
          "/encode 400 count %.0f, want 2",
          metric(m, "posenc_requests_total{route=\"/encode\",status=\"400\"}"));
    CHECK(metric(m, "posenc_requests_total{route=\"other\",status=\"404\"}") == 1, L,
          "other 404 count %.0f, want 1",
          metric(m, "posenc_requests_total{route=\"other\",status=\"404\"}"));
    CHECK(metric(m, "posenc_tokens_total") == 29, L, "tokens %.0f, want 3*3 + 2*2*5 = 29",
          metric(m, "posenc_tokens_total"));
    CHECK(metric(m, "posenc_errors_total{code=\"invalid_json\"}") == 2, L,
          "invalid_json errors %.0f, want 2",
          metric(m, "posenc_errors_total{code=\"invalid_json\"}"));
    CHECK(metric(m, "posenc_errors_total{code=\"not_found\"}") == 1, L,
          "not_found errors %.0f, want 1", metric(m, "posenc_errors_total{code=\"not_found\"}"));
    CHECK(metric(m, "posenc_request_bytes_total") == (double)bytes_in, L,
          "request bytes %.0f, want %llu (the bodies sent)",
          metric(m, "posenc_request_bytes_total"), (unsigned long long)bytes_in);
    CHECK(metric(m, "posenc_response_bytes_total") == (double)bytes_out, L,
          "response bytes %.0f, want %llu (the bodies received)",
          metric(m, "posenc_response_bytes_total"), (unsigned long long)bytes_out);
    CHECK(metric(m, "posenc_in_flight_requests") == 1, L, "in flight %.0f, want 1 (this scrape)",
          metric(m, "posenc_in_flight_requests"));
    double count = -1, sum = -1;
    double inf = histogram_ok(m, "/encode", &count, &sum);
    CHECK(inf == 7 && count == 7 && sum > 0, L,
          "/encode latency histogram: +Inf %.0f (-1: buckets not monotone or missing), count "
          "%.0f, sum %g; want 7, 7, > 0",
          inf, count, sum);
    size_t first_scrape = r.len;
    http_resp_free(&r);
    /* the scrape itself is counted by the next one */
    wait_access_lines(&s, 9);
    http_get(&s, "/metrics", &r);
    m = r.status == 200 ? r.body : "";
    CHECK(metric(m, "posenc_requests_total{route=\"/metrics\",status=\"200\"}") == 1 &&
              metric(m, "posenc_response_bytes_total") == (double)(bytes_out + first_scrape),
          "GET /metrics twice", "the first scrape is not counted: %.0f requests, %.0f bytes",
          metric(m, "posenc_requests_total{route=\"/metrics\",status=\"200\"}"),
          metric(m, "posenc_response_bytes_total"));
    http_resp_free(&r);
    server_stop(&s);
}

static void observe_access_log(bool json)
{
    server s;
    const char *args[] = {"--log-format", json ? "json" : "text", NULL};
    if (!server_start(&s, json ? "accesslog-json" : "accesslog-text", args, NULL))
        return;
    const char *fmt = json ? "json" : "text";
    static const struct {
        const char *method, *path, *body, *route;
        long status;
    } reqs[] = {
        {"POST", "/encode", "{\"shape\":[2,4]}", "/encode", 200},
        {"POST", "/encode", "{bad", "/encode", 400},
        {"GET", "/healthz", NULL, "/healthz", 200},
        {"GET", "/nowhere", NULL, "other", 404},
        {"DELETE", "/encode", NULL, "/encode", 405},
    };
    size_t n = sizeof reqs / sizeof reqs[0];
    size_t out_len[8];
    for (size_t i = 0; i < n; i++) {
        char idh[64];
        snprintf(idh, sizeof idh, "X-Request-Id: log-%s-%zu", fmt, i);
        const char *hs[] = {idh, NULL};
        http_resp r;
        http_request(&s, reqs[i].method, reqs[i].path, reqs[i].body ? "application/json" : NULL,
                     reqs[i].body, reqs[i].body ? strlen(reqs[i].body) : 0, hs, false, &r);
        out_len[i] = r.len;
        char label[96];
        snprintf(label, sizeof label, "%s %s for the %s access log", reqs[i].method, reqs[i].path,
                 fmt);
        CHECK(r.status == reqs[i].status, label, "got %ld", r.status);
        http_resp_free(&r);
    }
    /* each line is written when its request ends, which may be just
     * after its client has the answer: wait for every one */
    char *log = NULL;
    for (size_t i = 0; i < n; i++) {
        char id[64];
        snprintf(id, sizeof id, " log-%s-%zu", fmt, i);
        if (json)
            snprintf(id, sizeof id, "\"log-%s-%zu\"", fmt, i);
        free(log);
        log = log_with(&s, id);
    }
    for (size_t i = 0; i < n; i++) {
        char id[64], label[128];
        snprintf(id, sizeof id, "log-%s-%zu", fmt, i);
        snprintf(label, sizeof label, "%s access log line of %s %s", fmt, reqs[i].method,
                 reqs[i].path);
        size_t in_len = reqs[i].body ? strlen(reqs[i].body) : 0;
        if (json) {
            json_t *j = NULL;
            int lines = json_log_lines(log, id, &j);
            CHECK(lines == 1, label, "%d lines with request_id %s, want 1", lines, id);
            if (j) {
                const char *meth = jstr(j, "method"), *route = jstr(j, "route");
                json_t *dur = json_object_get(j, "duration_ms");
                CHECK(meth && strcmp(meth, reqs[i].method) == 0 && route &&
                          strcmp(route, reqs[i].route) == 0 &&
                          jint(j, "status", -1) == reqs[i].status && json_is_number(dur) &&
                          json_number_value(dur) >= 0 &&
                          jint(j, "bytes_in", -1) == (long long)in_len &&
                          jint(j, "bytes_out", -1) == (long long)out_len[i],
                      label, "want method %s route %s status %ld bytes_in %zu bytes_out %zu",
                      reqs[i].method, reqs[i].route, reqs[i].status, in_len, out_len[i]);
                json_decref(j);
            }
        } else {
            /* "METHOD ROUTE STATUS MS BYTES_IN BYTES_OUT ID" */
            char want[256];
            snprintf(want, sizeof want, "%s %s %ld ", reqs[i].method, reqs[i].route,
                     reqs[i].status);
            int lines = 0;
            bool good = false;
            for (const char *p = log; (p = strstr(p, want)) != NULL; p++) {
                if (p != log && p[-1] != '\n')
                    continue;
                const char *eol = strchr(p, '\n');
                char line[512];
                snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - p : (long)strlen(p)), p);
                char m2[16], r2[64], rid[96];
                long st;
                double ms;
                unsigned long long bi, bo;
                if (sscanf(line, "%15s %63s %ld %lf %llu %llu %95s", m2, r2, &st, &ms, &bi, &bo,
                           rid) == 7 &&
                    strcmp(rid, id) == 0) {
                    lines++;
                    good = ms >= 0 && bi == in_len && bo == out_len[i];
                }
            }
            CHECK(lines == 1 && good, label,
                  "%d lines '%s... %s', want 1 with bytes_in %zu and bytes_out %zu", lines, want,
                  id, in_len, out_len[i]);
        }
    }
    free(log);
    server_stop(&s);
}

static void observe_request_ids(void)
{
    server s;
    if (!server_start(&s, "request-ids", NULL, NULL))
        return;
    http_resp r;
    char got[160];
    const char *given[] = {"X-Request-Id: trace-42/abc", NULL};
    http_request(&s, "GET", "/healthz", NULL, NULL, 0, given, false, &r);
    CHECK(http_header(&r, "X-Request-Id", got, sizeof got) && strcmp(got, "trace-42/abc") == 0,
          "X-Request-Id given", "echoed '%s'", got);
    http_resp_free(&r);
    const char *given2[] = {"X-Request-Id: e2e-7", NULL};
    http_request(&s, "POST", "/encode", "application/json", "{oops", 5, given2, false, &r);
    CHECK(http_header(&r, "X-Request-Id", got, sizeof got) && strcmp(got, "e2e-7") == 0,
          "X-Request-Id given, on an error", "echoed '%s'", got);
    http_resp_free(&r);
    /* not given, or not usable: a fresh one, different every time */
    enum { N = 40 };
    static char ids[N][160];
    int fresh = 0;
    char longid[200];
    memset(longid, 'x', sizeof longid);
    snprintf(longid, sizeof longid, "X-Request-Id: %0160d", 0);
    for (int i = 0; i < N; i++) {
        const char *bad[] = {i % 2 ? "X-Request-Id: has space" : longid, NULL};
        http_request(&s, "GET", "/healthz", NULL, NULL, 0, i % 4 == 3 ? bad : NULL, false, &r);
        ids[i][0] = '\0';
        if (http_header(&r, "X-Request-Id", got, sizeof got))
            snprintf(ids[i], sizeof ids[i], "%s", got);
        http_resp_free(&r);
        size_t len = strlen(ids[i]);
        bool hex = len >= 8 && strspn(ids[i], "0123456789abcdef") == len;
        bool unique = true;
        for (int k = 0; k < i; k++)
            unique = unique && strcmp(ids[k], ids[i]) != 0;
        fresh += hex && unique;
    }
    CHECK(fresh == N, "X-Request-Id not given (or unusable: too long, a space)",
          "%d of %d responses carry a fresh hex id (e.g. '%s')", fresh, N, ids[N - 1]);
    server_stop(&s);
}

void test_observe(void)
{
    observe_apikey();
    observe_metrics();
    observe_access_log(false);
    observe_access_log(true);
    observe_request_ids();
}

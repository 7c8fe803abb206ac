/*
 * test_hardening.c - regression tests of the request hardening on the server side, on
 * raw sockets (requests curl will not make):
 *
 *   aborted   uploads cut by their client release their
 *             --max-inflight slot at once (logged 499, counted), and
 *             SIGTERM does not wait the drain timeout for them;
 *   framing   two different Content-Length headers,
 *             Transfer-Encoding with Content-Length, chunked twice: 400; a
 *             coding other than chunked: 501; all at once, JSON, closed;
 *   nulhdr    a header value holding a NUL is refused (401 for
 *             Authorization, also on /metrics; 400 for another header);
 *   budget    server side: --max-memory bounds the bodies held
 *             at once (413 past the whole budget, 503 + Retry-After when
 *             not free now, 200 once freed), shown in /info and /metrics,
 *             set by flag (K/M/G) or POSENC_MAX_MEMORY;
 *   stream    the content-reader adapter of streamed answers
 *             (server/body_stream.c, compiled in here) over a fake stream;
 *   pool      server/work_pool.c (compiled in): a job goes to the idle
 *             worker of lowest index, so worker k computes only while k
 *             others do (compute_gate.c sizes its OpenMP team for that).
 *
 * Each was seen to fail with its fix taken out of the server.
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

#include "http_library.h"
#include "padded_body.h"
#include "raw_socket.h"
#include "tests.h"

/* The adapter under test is server code without a server: compiled into
 * this program (it needs only libc and microhttpd.h's constants). */
#include "../../server/body_stream.c"
/* And the worker pool, whose dispatch to the idle worker of lowest index
 * the OpenMP team sizes of compute_gate.c rely on. */
#include "../../server/work_pool.c"

/* One raw exchange: send n bytes, read the answer until the server closes
 * (or timeout_s). Returns the status (0: none); *secs is how long the
 * answer took, *closed whether the server closed the connection. */
static long raw_exchange(const server *s, const char *bytes, size_t n, double timeout_s, char *buf,
                         size_t cap, double *secs, bool *closed)
{
    int fd = tcp_open(s);
    buf[0] = '\0';
    *closed = false;
    if (fd < 0)
        return 0;
    double t0 = mono_now();
    long status = 0;
    if (send_all(fd, bytes, n)) {
        read_until_close(fd, timeout_s, buf, cap, closed);
        if (strncmp(buf, "HTTP/1.", 7) == 0)
            status = strtol(buf + 9, NULL, 10);
    }
    *secs = mono_now() - t0;
    close(fd);
    return status;
}

/* The body of a raw answer parsed as JSON, and its error code ("" when
 * none). */
static void raw_error_code(const char *resp, char *code, size_t cap)
{
    code[0] = '\0';
    const char *b = strstr(resp, "\r\n\r\n");
    if (b == NULL)
        return;
    json_t *j = json_loads(b + 4, JSON_DISABLE_EOF_CHECK, NULL);
    const char *c = jstr(json_object_get(j, "error"), "code");
    if (c != NULL)
        snprintf(code, cap, "%s", c);
    json_decref(j);
}

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

static double get_metric(const server *s, const char *series, const char *const *headers)
{
    http_resp r;
    http_request(s, "GET", "/metrics", NULL, NULL, 0, headers, false, &r);
    double v = r.status == 200 ? metric(r.body, series) : -1;
    http_resp_free(&r);
    return v;
}

/* sin(0), cos(0): the sinusoidal table of one position, d = 2. */
static void expect_encode_works(const server *s, const char *label)
{
    http_resp r;
    http_post_json(s, "/encode", "{\"shape\":[1,2]}", &r);
    farr a = {0};
    static const double want[2] = {0.0, 1.0};
    if (CHECK(r.status == 200, label, "POST /encode: status %ld, want 200", r.status) &&
        get_farr(label, &r, "encoded", &a))
        check_close(label, "encoded", &a, want, 2, 0.0, 0.0);
    farr_free(&a);
    http_resp_free(&r);
}

/* ---------------------------------------------------------------------- */
/* Aborted uploads                                                          */
/* ---------------------------------------------------------------------- */

/* Opens a connection, sends the headers of a 100000-byte body and a few
 * bytes of it, and closes at once: the server's epoll often sees the data
 * and the end of stream together (the case libmicrohttpd 0.9.75 misses). */
static bool abort_upload(const server *s)
{
    static const char head[] = "POST /encode HTTP/1.1\r\nHost: t\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 100000\r\n\r\n{\"shape\":[1,";
    int fd = tcp_open(s);
    if (fd < 0)
        return false;
    bool ok = send_all(fd, head, sizeof head - 1);
    close(fd);
    return ok;
}

static void aborted_release_slots(void)
{
    const char *label = "aborted uploads, --max-inflight 8";
    static const char *const args[] = {"--max-inflight", "8", "--workers", "1", NULL};
    server s;
    if (!server_start(&s, "aborted", args, NULL))
        return;
    enum { N = 64 };
    int sent = 0;
    for (int i = 0; i < N; i++)
        sent += abort_upload(&s);
    CHECK(sent == N, label, "sent %d of %d aborted uploads", sent, N);

    /* Released within a few watchdog periods (100 ms), not the 30 s idle
     * timeout: only the /metrics request itself is in flight then, and
     * every upload is counted 499. Both are waited for together: a few
     * connections may still sit in the listen queue, not yet accepted,
     * when the first ones are done (in flight 1 for a moment). */
    static const char series499[] = "posenc_requests_total{route=\"/encode\",status=\"499\"}";
    double in_flight = -1, aborted = -1, t0 = mono_now();
    while (mono_now() - t0 < 2.0 * slack()) {
        aborted = get_metric(&s, series499, NULL);
        in_flight = get_metric(&s, "posenc_in_flight_requests", NULL);
        if (in_flight == 1 && aborted >= N)
            break;
        sleep_s(0.05);
    }
    CHECK(in_flight == 1, label,
          "posenc_in_flight_requests %g 2 s after %d aborted uploads, want 1", in_flight, N);
    expect_encode_works(&s, label);
    aborted = get_metric(&s, series499, NULL);
    CHECK(aborted == N, label, "posenc_requests_total{/encode,499} = %g, want %d", aborted, N);
    server_stop(&s);
}

/* SIGTERM right after aborted uploads: the drain must not wait for them. */
static void aborted_do_not_hold_sigterm(void)
{
    const char *label = "aborted uploads, then SIGTERM (--drain-timeout 8)";
    static const char *const args[] = {"--max-inflight", "64", "--drain-timeout", "8", NULL};
    server s;
    if (!server_start(&s, "aborted-drain", args, NULL))
        return;
    for (int i = 0; i < 32; i++)
        abort_upload(&s);
    sleep_s(0.05);
    double t0 = mono_now();
    server_signal(&s, SIGTERM);
    int status = 0;
    bool exited = server_wait_exit(&s, 12.0 * slack(), &status);
    double took = mono_now() - t0;
    CHECK(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0, label,
          "exit status %d (exited %d)", status, exited);
    CHECK(took < 3.0 * slack(), label,
          "stopped after %.2f s, want well under the 8 s drain timeout", took);
}

/* ---------------------------------------------------------------------- */
/* Framing                                                                  */
/* ---------------------------------------------------------------------- */

typedef struct framing_case {
    const char *what;
    const char *headers; /* after the request line and Host */
    const char *body;
    long status;
    const char *code;  /* NULL for a 200 */
    bool lib1_refuses; /* libmicrohttpd 1.x answers an HTML 400 itself (http_library.h) */
} framing_case;

static void framing_cases(void)
{
    static const char enc[] = "{\"shape\":[1,2]}"; /* 15 bytes */
    static const framing_case cases[] = {
        {"two different Content-Length", "Content-Length: 15\r\nContent-Length: 16\r\n", enc, 400,
         "invalid_request", false},
        {"Content-Length 15 and 0", "Content-Length: 0\r\nContent-Length: 15\r\n", enc, 400,
         "invalid_request", false},
        {"Transfer-Encoding chunked with Content-Length",
         "Transfer-Encoding: chunked\r\nContent-Length: 15\r\n",
         "f\r\n{\"shape\":[1,2]}\r\n0\r\n\r\n", 400, "invalid_request", false},
        {"Transfer-Encoding gzip", "Transfer-Encoding: gzip\r\n", enc, 501, "not_implemented",
         true},
        {"Transfer-Encoding gzip, chunked", "Transfer-Encoding: gzip, chunked\r\n",
         "f\r\n{\"shape\":[1,2]}\r\n0\r\n\r\n", 501, "not_implemented", true},
        {"Transfer-Encoding chunked, chunked", "Transfer-Encoding: chunked, chunked\r\n",
         "f\r\n{\"shape\":[1,2]}\r\n0\r\n\r\n", 400, "invalid_request", true},
        /* what stays accepted */
        {"the same Content-Length twice", "Content-Length: 15\r\nContent-Length: 15\r\n", enc, 200,
         NULL, false},
        {"Transfer-Encoding chunked", "Transfer-Encoding: chunked\r\n",
         "f\r\n{\"shape\":[1,2]}\r\n0\r\n\r\n", 200, NULL, false},
    };
    server s;
    if (!server_start(&s, "framing", NULL, NULL))
        return;
    const mhd_answers lib = server_mhd_answers(&s);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        framing_case want = cases[i];
        if (lib == MHD_REFUSES && want.lib1_refuses) {
            want.status = 400;
            want.code = ""; /* its body is HTML */
        }
        const framing_case *c = &want;
        char label[128], req[1024], resp[8192], code[64];
        snprintf(label, sizeof label, "POST /encode, %s", c->what);
        int n = snprintf(req, sizeof req,
                         "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                         "%sConnection: close\r\n\r\n%s",
                         c->headers, c->body);
        double secs = 0;
        bool closed = false;
        long st = raw_exchange(&s, req, (size_t)n, 10.0 * slack(), resp, sizeof resp, &secs,
                               &closed);
        raw_error_code(resp, code, sizeof code);
        CHECK(st == c->status, label, "status %ld, want %ld (answer: %.80s)", st, c->status, resp);
        if (c->code != NULL)
            CHECK(strcmp(code, c->code) == 0, label, "error code '%s', want '%s'", code, c->code);
        CHECK(secs < 2.0 * slack() && closed, label, "answered in %.2f s, closed %d (want at once)",
              secs, closed);
    }
    /* A refused framing closes the connection: what follows the headers is
     * never read as a request of its own (smuggling). */
    {
        const char *label = "Transfer-Encoding + Content-Length, then a second request";
        static const char req[] = "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                  "application/json\r\n"
                                  "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                                  "0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
        char resp[8192];
        double secs = 0;
        bool closed = false;
        long st = raw_exchange(&s, req, sizeof req - 1, 10.0 * slack(), resp, sizeof resp, &secs,
                               &closed);
        CHECK(st == 400 && closed, label, "status %ld, closed %d, want 400 and closed", st, closed);
        const char *second = strstr(resp + 1, "HTTP/1.");
        CHECK(second == NULL, label, "a second answer came: %.60s", second ? second : "");
    }
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* NUL in a header                                                          */
/* ---------------------------------------------------------------------- */

/* A request whose header section holds a NUL byte: want and want_code
 * are posenc's answer; libmicrohttpd 1.x refuses it itself (an HTML 400,
 * the connection closed). */
static void nul_header_case(const server *s, mhd_answers lib, const char *what, const char *req,
                            size_t n, long want, const char *want_code)
{
    char label[128], resp[16384], code[64];
    snprintf(label, sizeof label, "%s", what);
    if (lib == MHD_REFUSES && memchr(req, '\0', n) != NULL) { /* (no body holds one) */
        want = 400;
        want_code = "";
    }
    double secs = 0;
    bool closed = false;
    long st = raw_exchange(s, req, n, 10.0 * slack(), resp, sizeof resp, &secs, &closed);
    CHECK(st == want, label, "status %ld, want %ld (answer: %.80s)", st, want, resp);
    if (want >= 400)
        CHECK(closed, label, "the connection stayed open after a %ld", st);
    if (want_code != NULL) {
        raw_error_code(resp, code, sizeof code);
        CHECK(strcmp(code, want_code) == 0, label, "error code '%s', want '%s'", code, want_code);
        if (want == 401)
            CHECK(find_nocase(resp, "\r\nWWW-Authenticate: Bearer") != NULL, label,
                  "no WWW-Authenticate: Bearer");
    }
}

#define NUL_CASE(s, lib, what, lit, want, code)                                                    \
    nul_header_case((s), (lib), (what), (lit), sizeof(lit) - 1, (want), (code))

static void nul_headers(void)
{
    static const char *const args[] = {"--api-key", "KEY", NULL};
    server s;
    if (!server_start(&s, "nulhdr", args, NULL))
        return;
    const mhd_answers lib = server_mhd_answers(&s);
    NUL_CASE(&s, lib, "GET /metrics, Authorization: Bearer KEY\\0junk",
             "GET /metrics HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\0junk\r\n"
             "Connection: close\r\n\r\n",
             401, "unauthorized");
    NUL_CASE(&s, lib, "GET /metrics, Authorization: Bearer KEY\\0junk as the last header",
             "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
             "Authorization: Bearer KEY\0junk\r\n\r\n",
             401, "unauthorized");
    NUL_CASE(&s, lib, "GET /info, Authorization: Bearer KEY\\0 (nothing after the NUL)",
             "GET /info HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\0\r\n"
             "Connection: close\r\n\r\n",
             401, "unauthorized");
    NUL_CASE(&s, lib, "POST /encode, Authorization: Bearer KEY\\0junk",
             "POST /encode HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\0junk\r\n"
             "Content-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n"
             "{\"shape\":[1,2]}",
             401, "unauthorized");
    NUL_CASE(&s, lib, "GET /metrics, the right key and X-Note: a\\0b",
             "GET /metrics HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\r\nX-Note: a\0b\r\n"
             "Connection: close\r\n\r\n",
             400, "invalid_request");
    /* what stays accepted: the key alone, bare LF line ends, trailing
     * blanks, empty values */
    NUL_CASE(&s, lib, "GET /metrics, Authorization: Bearer KEY",
             "GET /metrics HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\r\n"
             "Connection: close\r\n\r\n",
             200, NULL);
    NUL_CASE(&s, lib, "GET /metrics, bare LF line ends",
             "GET /metrics HTTP/1.1\nHost: t\nAuthorization: Bearer KEY\nConnection: close\n\n",
             200, NULL);
    NUL_CASE(&s, lib, "GET /metrics, trailing blanks and empty values",
             "GET /metrics HTTP/1.1\r\nHost: t\r\nX-Empty:\r\nX-Blank:   \r\n"
             "Authorization: Bearer KEY  \r\nConnection: close\r\n\r\n",
             200, NULL);
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* Server side: the memory budget                                           */
/* ---------------------------------------------------------------------- */

static void budget_over_http(void)
{
    const char *label = "--max-memory 1M";
    static const char *const args[] = {"--max-memory", "1M", "--max-inflight", "8", NULL};
    server s;
    if (!server_start(&s, "budget", args, NULL))
        return;

    /* Shown in /info and /metrics. */
    http_resp r;
    http_get(&s, "/info", &r);
    json_t *mem = r.json ? json_object_get(r.json, "memory") : NULL;
    CHECK(jint(mem, "budget_bytes", -1) == 1048576, label,
          "/info memory.budget_bytes %lld, want 1048576", jint(mem, "budget_bytes", -1));
    http_resp_free(&r);
    CHECK(get_metric(&s, "posenc_memory_budget_bytes", NULL) == 1048576, label,
          "posenc_memory_budget_bytes is not 1048576");

    /* A body that can never fit: 413 from its Content-Length, before any
     * of it is sent. */
    {
        char resp[8192], code[64];
        static const char head[] = "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                   "application/json\r\n"
                                   "Content-Length: 2097152\r\n\r\n";
        double secs = 0;
        bool closed = false;
        long st = raw_exchange(&s, head, sizeof head - 1, 10.0 * slack(), resp, sizeof resp, &secs,
                               &closed);
        raw_error_code(resp, code, sizeof code);
        CHECK(st == 413 && strcmp(code, "payload_too_large") == 0, label,
              "2 MiB body: status %ld code '%s', want 413 payload_too_large", st, code);
    }

    /* 700 KiB held by an upload in progress (all but its last byte sent:
     * a body is charged as it arrives, limit slow-body): a 500 KiB body
     * does not fit now (503 + Retry-After), a small one does; once the
     * upload is gone, the 500 KiB body is a 200. */
    size_t big = 700 * 1024, mid = 500 * 1024;
    char *held = padded_encode_body(big);
    char *body = padded_encode_body(mid);
    int fd = tcp_open(&s);
    char head[256];
    snprintf(head, sizeof head,
             "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             big);
    bool started = fd >= 0 && send_all(fd, head, strlen(head)) && send_all(fd, held, big - 1);
    CHECK(started, label, "could not start the 700 KiB upload");
    double reserved = -1, t0 = mono_now();
    while (mono_now() - t0 < 2.0 * slack() && reserved < (double)big) {
        reserved = get_metric(&s, "posenc_memory_reserved_bytes", NULL);
        sleep_s(0.02);
    }
    CHECK(reserved == (double)big, label,
          "posenc_memory_reserved_bytes %g while a %zu-byte body is "
          "uploading, want %zu",
          reserved, big, big);

    http_post_json(&s, "/encode", body, &r);
    char retry[16] = "";
    http_header(&r, "Retry-After", retry, sizeof retry);
    CHECK(expect_error("500 KiB body while 700 KiB are held", &r, 503, "unavailable", NULL) &&
              retry[0] != '\0',
          label, "no Retry-After on the 503");
    http_resp_free(&r);
    expect_encode_works(&s, "small body while 700 KiB are held");

    if (fd >= 0)
        close(fd);
    t0 = mono_now();
    while (mono_now() - t0 < 2.0 * slack() &&
           get_metric(&s, "posenc_memory_reserved_bytes", NULL) != 0)
        sleep_s(0.02);
    http_post_json(&s, "/encode", body, &r);
    CHECK(r.status == 200, label, "500 KiB body once the upload is gone: status %ld, want 200",
          r.status);
    http_resp_free(&r);
    CHECK(get_metric(&s, "posenc_memory_reserved_bytes", NULL) == 0, label,
          "posenc_memory_reserved_bytes is not 0 once every request is done");
    free(held);
    free(body);
    server_stop(&s);
}

/* The variable sets it too, and the suffixes are powers of 1024. */
static void budget_from_env(void)
{
    const char *label = "POSENC_MAX_MEMORY=2G";
    static const char *const env[] = {"POSENC_MAX_MEMORY=2G", NULL};
    server s;
    if (!server_start(&s, "budget-env", NULL, env))
        return;
    CHECK(get_metric(&s, "posenc_memory_budget_bytes", NULL) == 2147483648.0, label,
          "posenc_memory_budget_bytes is not 2 GiB with POSENC_MAX_MEMORY=2G");
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* Streamed answers: the content-reader adapter                             */
/* ---------------------------------------------------------------------- */

/* A fake stream: `total` bytes, byte i = 'a' + i % 23, handed out in
 * pieces of at most `piece` bytes; fails after `fail_after` bytes when that
 * is not 0. */
typedef struct fake_stream {
    size_t total, pos, piece, fail_after;
    int frees;
} fake_stream;

static size_t fake_read(void *state, char *buf, size_t cap)
{
    fake_stream *f = state;
    if (f->fail_after != 0 && f->pos >= f->fail_after)
        return API_STREAM_FAILED;
    size_t n = f->total - f->pos;
    if (n > cap)
        n = cap;
    if (n > f->piece)
        n = f->piece;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + (f->pos + i) % 23);
    f->pos += n;
    return n;
}

static void fake_free(void *state)
{
    ((fake_stream *)state)->frees++;
}

static void stream_adapter(void)
{
    const char *label = "body_stream over a fake stream";
    fake_stream f = {.total = 300000, .piece = 50000};
    api_body_stream s = {&f, fake_read, fake_free};
    uint64_t sent = 0;
    body_stream *back = NULL;
    body_stream *bs = body_stream_new(&s, &sent, &back);
    if (!CHECK(bs != NULL && back == bs && s.read == NULL, label,
               "new: not held, or *s not stolen"))
        return;
    char *buf = xmalloc(1 << 20);
    size_t got = 0, calls = 0, largest = 0;
    bool ended = false, bad_block = false;
    while (calls++ < 1000) {
        ssize_t n = body_stream_read(bs, got, buf + got, (1 << 20) - got);
        if (n == MHD_CONTENT_READER_END_OF_STREAM) {
            ended = true;
            break;
        }
        if (n <= 0 || (size_t)n > BODY_STREAM_BLOCK) {
            bad_block = true;
            break;
        }
        largest = (size_t)n > largest ? (size_t)n : largest;
        got += (size_t)n;
    }
    CHECK(ended && !bad_block && got == f.total, label, "read %zu of %zu bytes, ended %d", got,
          f.total, ended);
    bool same = true;
    for (size_t i = 0; i < got && same; i++)
        same = buf[i] == (char)('a' + i % 23);
    CHECK(same, label, "the bytes differ from the stream's");
    CHECK(sent == f.total, label, "counted %llu bytes sent, want %zu", (unsigned long long)sent,
          f.total);
    CHECK(f.frees == 0, label, "freed before the response was");
    body_stream_free(bs);
    CHECK(f.frees == 1 && back == NULL, label, "free: the stream freed %d times, back %p", f.frees,
          (void *)back);

    /* The block is bounded whatever MHD offers. */
    fake_stream g = {.total = 1 << 20, .piece = 1 << 20};
    api_body_stream gs = {&g, fake_read, fake_free};
    bs = body_stream_new(&gs, NULL, NULL);
    ssize_t n = body_stream_read(bs, 0, buf, 1 << 20);
    CHECK(n == (ssize_t)BODY_STREAM_BLOCK, label, "one read gave %zd bytes, want the block of %zu",
          n, BODY_STREAM_BLOCK);
    body_stream_free(bs);

    /* A failing stream ends the response with an error (the connection is
     * closed); a request that ended first is detached and not written to;
     * a client gone before any read still frees the stream once. */
    fake_stream h = {.total = 100000, .piece = 1000, .fail_after = 3000};
    api_body_stream hs = {&h, fake_read, fake_free};
    sent = 0;
    back = NULL;
    bs = body_stream_new(&hs, &sent, &back);
    ssize_t last = 0;
    for (int i = 0; i < 10 && last >= 0; i++)
        last = body_stream_read(bs, 0, buf, 4096);
    CHECK(last == MHD_CONTENT_READER_END_WITH_ERROR && sent == 3000, label,
          "failing stream: last %zd, sent %llu (want END_WITH_ERROR after 3000)", last,
          (unsigned long long)sent);
    body_stream_detach(bs);
    body_stream_free(bs);
    CHECK(h.frees == 1 && back == bs, label, "detached: freed %d times, back touched", h.frees);

    fake_stream k = {.total = 10, .piece = 10};
    api_body_stream ks = {&k, fake_read, fake_free};
    body_stream_free(body_stream_new(&ks, NULL, NULL));
    CHECK(k.frees == 1 && k.pos == 0, label, "never read: freed %d times", k.frees);
    free(buf);
}

/* ---------------------------------------------------------------------- */
/* The worker pool: lowest idle worker first                                */
/* ---------------------------------------------------------------------- */

typedef struct pool_probe {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int started;   /* jobs running now */
    bool release;  /* let the running jobs end */
    int ran_on[8]; /* worker index of each job */
} pool_probe;

static _Thread_local int probe_worker = -1;

static void probe_init(unsigned index, const void *arg)
{
    (void)arg;
    probe_worker = (int)index;
}

typedef struct probe_job {
    pool_probe *p;
    int slot;
    bool hold; /* wait for p->release */
} probe_job;

static void probe_run(void *arg)
{
    probe_job *j = arg;
    pthread_mutex_lock(&j->p->lock);
    j->p->ran_on[j->slot] = probe_worker;
    j->p->started++;
    pthread_cond_broadcast(&j->p->cond);
    while (j->hold && !j->p->release)
        pthread_cond_wait(&j->p->cond, &j->p->lock);
    j->p->started--;
    pthread_cond_broadcast(&j->p->cond);
    pthread_mutex_unlock(&j->p->lock);
}

static void probe_cancel(void *arg)
{
    (void)arg;
}

/* Waits until `want` jobs run at once (or 5 s). */
static bool probe_wait_started(pool_probe *p, int want)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    bool ok = true;
    pthread_mutex_lock(&p->lock);
    while (p->started != want && ok)
        ok = pthread_cond_timedwait(&p->cond, &p->lock, &until) == 0;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

static void pool_lowest_first(void)
{
    const char *label = "work_pool: the idle worker of lowest index";
    pool_probe p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    for (int i = 0; i < 8; i++)
        p.ran_on[i] = -1;
    work_pool *pool = work_pool_new(4, 8, probe_init, NULL);
    if (!CHECK(pool != NULL, label, "work_pool_new failed"))
        return;
    /* One at a time: always worker 0, whichever worker ran last. The next
     * job goes in once the pool counts no job running (its worker is idle
     * again: a job that has returned from run is not enough). */
    probe_job solo[3];
    for (int i = 0; i < 3; i++) {
        solo[i] = (probe_job){&p, i, false};
        work_job job = {probe_run, probe_cancel, &solo[i]};
        work_pool_submit(pool, &job);
        for (int tries = 0; tries < 500 && work_pool_running(pool) > 0; tries++)
            sleep_s(0.01);
    }
    CHECK(p.ran_on[0] == 0 && p.ran_on[1] == 0 && p.ran_on[2] == 0, label,
          "jobs one at a time ran on workers %d, %d, %d (want 0, 0, 0)", p.ran_on[0], p.ran_on[1],
          p.ran_on[2]);
    /* Three at once: workers 0, 1 and 2, in order. */
    probe_job held[3];
    for (int i = 0; i < 3; i++) {
        held[i] = (probe_job){&p, 3 + i, true};
        work_job job = {probe_run, probe_cancel, &held[i]};
        work_pool_submit(pool, &job);
        probe_wait_started(&p, i + 1);
    }
    CHECK(p.ran_on[3] == 0 && p.ran_on[4] == 1 && p.ran_on[5] == 2, label,
          "three held jobs ran on workers %d, %d, %d (want 0, 1, 2)", p.ran_on[3], p.ran_on[4],
          p.ran_on[5]);
    pthread_mutex_lock(&p.lock);
    p.release = true;
    pthread_cond_broadcast(&p.cond);
    pthread_mutex_unlock(&p.lock);
    probe_wait_started(&p, 0);
    work_pool_free(pool);
}

void test_hardening(void)
{
    aborted_release_slots();
    aborted_do_not_hold_sigterm();
    framing_cases();
    nul_headers();
    budget_over_http();
    budget_from_env();
    stream_adapter();
    pool_lowest_first();
}

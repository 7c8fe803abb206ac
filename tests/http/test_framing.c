/*
 * test_framing.c - request-framing regressions, on raw sockets
 * (requests curl will not make). Each case was seen to fail with its fix
 * taken out of the server:
 *
 *   smuggle   limit smuggling: `Content-Length : 36` (a blank before the colon)
 *             and a header with an empty name before Content-Length are a
 *             400 and close the connection; before, libmicrohttpd did not
 *             see the length and ran the body (`GET /metrics`) as a
 *             second request;
 *   coding    limit te-spelling: Transfer-Encoding spellings that libmicrohttpd does
 *             not de-chunk (`chunked `, `  chunked  `, `,chunked`) are
 *             refused at once (501) instead of hanging until
 *             --request-timeout and swallowing a pipelined request; a
 *             coding list that is not a list of tokens is a 400;
 *   syntax    limit header-syntax: a NUL in the decoded path (`/metrics%00.css` was
 *             served as /metrics), whitespace or a control byte in the
 *             request target (was a 404 naming the route with the
 *             space), HTTP/1.1 without Host, two Host
 *             headers, a blank in a header name, a bare CR in a value, a
 *             NUL that ends the last header's value (an API key
 *             followed by a NUL passed as the key): 400 (401), closed;
 *   probes    limit probes: idle connections that fill --max-connections leave
 *             new connections to --port in the listen backlog, probes
 *             included; --probe-port serves /healthz, /readyz and
 *             /metrics (only those) at once all the same;
 *   linger    limit linger-413: a body over --max-body-bytes gets its 413 at once,
 *             and the client can send all of it and read the 413 (the
 *             server reads and drops it for a while before it closes:
 *             before, a reset); with Expect: 100-continue the 413 (or a
 *             417 for another expectation) comes before any body;
 *   drain     limit drain: a large answer still going out when
 *             --drain-timeout ends is sent whole within
 *             --drain-send-timeout (it was cut); one that cannot finish
 *             is cut at the end and counted in the last log line.
 *
 * Every case is one connection that sends its bytes (with a pipelined
 * request after them where one could be smuggled) and reads until the
 * server closes it, within a few seconds.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "http_library.h"
#include "raw_socket.h"
#include "tests.h"

/* What libmicrohttpd 1.0 and later do with a case's bytes (http_library.h). */
typedef enum lib1_answer {
    LIB1_AS_POSENC = 0, /* passes them on: posenc's answer, as with 0.9.x */
    LIB1_REFUSES,       /* answers an HTML 400 itself and closes */
    LIB1_SERVES,        /* trims the value to a valid `chunked`: 200, kept open */
    LIB1_REDIRECTS      /* whitespace in the target: a 301 to it %20-encoded, closed */
} lib1_answer;

typedef struct framing_case {
    const char *what;
    const char *bytes; /* may hold NUL bytes: n gives the length */
    size_t n;
    long status;
    const char *code;
    bool must_close; /* closed after one answer */
    lib1_answer lib1;
} framing_case;

#define RAW(s) s, sizeof s - 1

/* A second request pipelined after the first: must never be answered. */
#define SECOND "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"
#define JSON_POST "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
#define CHUNKED_BODY "f\r\n{\"shape\":[1,2]}\r\n0\r\n\r\n"

static const framing_case smuggle_cases[] = {
    {"Content-Length with a blank before the colon",
     RAW(JSON_POST "Content-Length : 34\r\n\r\n" SECOND), 400, "invalid_request", true,
     LIB1_REFUSES},
    {"a header with an empty name, then Content-Length",
     RAW(JSON_POST ": x\r\nContent-Length: 34\r\n\r\n" SECOND), 400, "invalid_request", true,
     LIB1_REFUSES},
};

static const framing_case coding_cases[] = {
    {"Transfer-Encoding 'chunked ' (a trailing blank)",
     RAW(JSON_POST "Transfer-Encoding: chunked \r\n\r\n" CHUNKED_BODY SECOND), 501,
     "not_implemented", true, LIB1_SERVES},
    {"Transfer-Encoding '  chunked  '",
     RAW(JSON_POST "Transfer-Encoding:   chunked  \r\n\r\n" CHUNKED_BODY SECOND), 501,
     "not_implemented", true, LIB1_SERVES},
    {"Transfer-Encoding ',chunked'",
     RAW(JSON_POST "Transfer-Encoding: ,chunked\r\n\r\n" CHUNKED_BODY SECOND), 501,
     "not_implemented", true, LIB1_REFUSES},
    {"Transfer-Encoding 'chun ked' (not a token)",
     RAW(JSON_POST "Transfer-Encoding: chun ked\r\n\r\n" CHUNKED_BODY SECOND), 400,
     "invalid_request", true, LIB1_REFUSES},
    {"Transfer-Encoding empty", RAW(JSON_POST "Transfer-Encoding: \r\n\r\n" CHUNKED_BODY SECOND),
     400, "invalid_request", true, LIB1_REFUSES},
    /* what stays accepted */
    {"Transfer-Encoding 'Chunked'",
     RAW(JSON_POST "Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n" CHUNKED_BODY), 200,
     NULL, true, LIB1_AS_POSENC},
};

static const framing_case syntax_cases[] = {
    {"a NUL in the decoded path", RAW("GET /metrics%00.css HTTP/1.1\r\nHost: t\r\n\r\n" SECOND),
     400, "invalid_request", true, LIB1_AS_POSENC},
    {"a NUL in the decoded path of a probe",
     RAW("GET /healthz%00 HTTP/1.1\r\nHost: t\r\n\r\n" SECOND), 400, "invalid_request", true,
     LIB1_AS_POSENC},
    {"HTTP/1.1 without Host", RAW("GET /healthz HTTP/1.1\r\n\r\n" SECOND), 400, "invalid_request",
     true, LIB1_REFUSES},
    {"two Host headers", RAW("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n" SECOND), 400,
     "invalid_request", true, LIB1_AS_POSENC},
    {"a blank in a header name", RAW("GET /healthz HTTP/1.1\r\nHost: t\r\nX Y: 1\r\n\r\n" SECOND),
     400, "invalid_request", true, LIB1_REFUSES},
    {"a bare CR in a header value",
     RAW("GET /healthz HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n" SECOND), 400, "invalid_request",
     true, LIB1_REFUSES},
    {"a NUL that ends the last header value",
     RAW("GET /healthz HTTP/1.1\r\nHost: t\r\nX-A: v\0\r\n\r\n" SECOND), 400, "invalid_request",
     true, LIB1_REFUSES},
    {"a NUL that ends the last header value, bare LF line ends",
     RAW("GET /healthz HTTP/1.1\nHost: t\nX-A: v\0\n\n" SECOND), 400, "invalid_request", true,
     LIB1_REFUSES},
    {"a space in the request target's path",
     RAW("GET /he althz HTTP/1.1\r\nHost: t\r\n\r\n" SECOND), 400, "invalid_request", true,
     LIB1_REDIRECTS},
    {"a space in a compute route's target",
     RAW("POST /en code HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: 2\r\n\r\n{}" SECOND),
     400, "invalid_request", true, LIB1_REDIRECTS},
    {"a space in the request target's query",
     RAW("GET /healthz?a b HTTP/1.1\r\nHost: t\r\n\r\n" SECOND), 400, "invalid_request", true,
     LIB1_REDIRECTS},
    {"a tab in the request target", RAW("GET /a\tb HTTP/1.1\r\nHost: t\r\n\r\n" SECOND), 400,
     "invalid_request", true, LIB1_REDIRECTS},
    {"a control byte in the request target", RAW("GET /a\x01b HTTP/1.1\r\nHost: t\r\n\r\n" SECOND),
     400, "invalid_request", true, LIB1_AS_POSENC},
    /* what stays accepted */
    {"bare LF line ends", RAW("GET /healthz HTTP/1.1\nHost: t\nConnection: close\n\n"), 200, NULL,
     true, LIB1_AS_POSENC},
    {"CR LF line ends, a bare LF empty line",
     RAW("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\n"), 200, NULL, true,
     LIB1_AS_POSENC},
    {"HTTP/1.0 without Host", RAW("GET /healthz HTTP/1.0\r\n\r\n"), 200, NULL, true,
     LIB1_AS_POSENC},
    {"a %2F-free path with a query",
     RAW("GET /healthz?x=%00 HTTP/1.1\r\nHost: t\r\n"
         "Connection: close\r\n\r\n"),
     200, NULL, true, LIB1_AS_POSENC},
    {"an encoded space (%20) in the path: no such route",
     RAW("GET /a%20b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"), 404, "not_found", true,
     LIB1_AS_POSENC},
    {"a tab in a header value",
     RAW("GET /healthz HTTP/1.1\r\nHost: t\r\nX-A: a\tb\r\n"
         "Connection: close\r\n\r\n"),
     200, NULL, true, LIB1_AS_POSENC},
};

/* The case c as the running libmicrohttpd answers it: posenc's answer
 * (with 0.9.x, or 1.x where it passes the bytes on), the library's own
 * 400 or 301 (an HTML body, so no JSON code), or a well-formed chunked
 * request served and the connection kept. */
static framing_case as_answered(const framing_case *c, mhd_answers lib)
{
    framing_case w = *c;
    if (lib == MHD_REFUSES && c->lib1 == LIB1_REFUSES) {
        w.status = 400;
        w.code = "";
        w.must_close = true;
    } else if (lib == MHD_REFUSES && c->lib1 == LIB1_REDIRECTS) {
        w.status = 301;
        w.code = "";
        w.must_close = true;
    } else if (lib == MHD_REFUSES && c->lib1 == LIB1_SERVES) {
        w.status = 200;
        w.code = NULL;
        w.must_close = false;
    }
    return w;
}

static void run_cases(const server *s, const char *group, const framing_case *cases, size_t n)
{
    const mhd_answers lib = server_mhd_answers(s);
    for (size_t i = 0; i < n; i++) {
        const framing_case want = as_answered(&cases[i], lib), *c = &want;
        char label[160];
        static char resp[1 << 17];
        snprintf(label, sizeof label, "%s: %s", group, c->what);
        raw_answer a;
        if (!CHECK(raw_talk(s, c->bytes, c->n, 4.0 * slack(), resp, sizeof resp, &a), label,
                   "cannot connect or send"))
            continue;
        CHECK(a.status == c->status, label, "status %ld, want %ld (answer: %.100s)", a.status,
              c->status, resp);
        if (c->code != NULL)
            CHECK(strcmp(a.code, c->code) == 0, label, "error code '%s', want '%s'", a.code,
                  c->code);
        if (c->must_close) {
            CHECK(a.answers == 1, label, "%u answers, want 1 (the rest must not run): %.300s",
                  a.answers, resp);
            CHECK(a.closed && a.secs < 2.0 * slack(), label,
                  "closed %d after %.2f s, want closed at once", a.closed, a.secs);
        }
        if (lib == MHD_REFUSES && c->lib1 == LIB1_SERVES)
            CHECK(strstr(resp, "\n# TYPE posenc_") != NULL, label,
                  "the pipelined GET /metrics got no answer after the chunked body: %.300s", resp);
    }
}

/* A Content-Length that is no number: libmicrohttpd answers it itself
 * (HTML 400) before any posenc callback; 0.9.75 sends its status line and
 * headers twice, 1.0 once (run with 1.0 and later only). */
static const framing_case length_cases[] = {
    {"Content-Length 'abc'", RAW(JSON_POST "Content-Length: abc\r\n\r\n" SECOND), 400, "", true,
     LIB1_REFUSES},
    {"Content-Length '+15'", RAW(JSON_POST "Content-Length: +15\r\n\r\n" SECOND), 400, "", true,
     LIB1_REFUSES},
};

/* header-syntax's last case where it matters most: an API key followed by a NUL
 * as the last header read as the key itself (libmicrohttpd cuts values at
 * a NUL), so the request passed. */
static const framing_case key_cases[] = {
    {"the key and a NUL as the last header",
     RAW("GET /metrics HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer k3y\0\r\n\r\n"), 401,
     "unauthorized", true, LIB1_REFUSES},
    {"the key as the last header",
     RAW("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
         "Authorization: Bearer k3y\r\n\r\n"),
     200, NULL, true, LIB1_AS_POSENC},
};

/* A free TCP port on 127.0.0.1 (free when asked; 0 when none). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

#define FLOOD 40 /* idle connections: past --max-connections 8 and its 16 spares */

/* Limit probes: connections that send nothing fill --max-connections (and the
 * spares kept to answer 503), so a new connection to --port waits in the
 * listen backlog, probes included; --probe-port answers them at once. */
static void probe_port_flood(void)
{
    int probe = free_port();
    char probe_arg[16];
    snprintf(probe_arg, sizeof probe_arg, "%d", probe);
    const char *const args[] = {"--max-connections", "8", "--probe-port", probe_arg, NULL};
    server s;
    if (!CHECK(probe != 0, "probe port: a free port", "none found") ||
        !server_start(&s, "probeport", args, NULL))
        return;
    int fds[FLOOD];
    for (int i = 0; i < FLOOD; i++)
        fds[i] = tcp_open(&s);
    sleep_s(0.3); /* let the server accept what it will */

    static char resp[1 << 16];
    raw_answer a;
    static const char healthz[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    raw_talk(&s, healthz, sizeof healthz - 1, 1.0, resp, sizeof resp, &a);
    CHECK(a.status == 0, "probe port: GET /healthz on --port under the flood",
          "answered %ld: the flood did not fill the server, the test proves nothing", a.status);

    server p = s;
    p.port = probe;
    static const struct {
        const char *request;
        long status;
    } on_probe[] = {
        {"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 200},
        {"GET /readyz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 200},
        {"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 200},
        {"GET /info HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 404},
        {"POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: 15\r\nConnection: close\r\n\r\n{\"shape\":[1,2]}",
         404},
    };
    for (size_t i = 0; i < sizeof on_probe / sizeof on_probe[0]; i++) {
        const char *req = on_probe[i].request;
        char label[96];
        snprintf(label, sizeof label, "probe port under the flood: %.*s", (int)strcspn(req, "\r"),
                 req);
        raw_talk(&p, req, strlen(req), 2.0 * slack(), resp, sizeof resp, &a);
        CHECK(a.status == on_probe[i].status && a.secs < 1.0 * slack(), label,
              "status %ld after %.2f s, want %ld at once", a.status, a.secs, on_probe[i].status);
    }
    for (int i = 0; i < FLOOD; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    server_stop(&s);
}

#define BIG_BODY ((size_t)8 << 20) /* past any loopback socket buffer */

/* Limit linger-413: a declared body over --max-body-bytes is answered 413 at once;
 * a client that sends the whole body before it reads (Python's urllib)
 * must get it all sent and then read the 413. Before, the server closed
 * the socket with the body unread, the kernel reset the connection, and
 * the client saw a broken pipe (or a reset that threw the 413 away). */
static void overlimit_linger(const server *s)
{
    const char *label = "linger: POST /encode, 8 MiB body over --max-body-bytes 1024";
    char head[256];
    int n = snprintf(head, sizeof head,
                     "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     BIG_BODY);
    char *body = xmalloc(BIG_BODY);
    memset(body, ' ', BIG_BODY);
    int fd = tcp_open(s);
    if (!CHECK(fd >= 0, label, "cannot connect")) {
        free(body);
        return;
    }
    struct timeval tv = {(time_t)(10 * slack()), 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    double t0 = mono_now();
    bool sent = send_all(fd, head, (size_t)n) && send_all(fd, body, BIG_BODY);
    double secs = mono_now() - t0;
    static char resp[1 << 16];
    bool closed = false;
    read_until_close(fd, 5.0 * slack(), resp, sizeof resp, &closed);
    close(fd);
    free(body);
    CHECK(sent, label,
          "the body could not be sent whole (%s after %.2f s): the server reset the "
          "connection under a client still sending",
          strerror(errno), secs);
    CHECK(strncmp(resp, "HTTP/1.1 413", 12) == 0 && strstr(resp, "payload_too_large") != NULL,
          label, "answer %.80s, want 413 payload_too_large", resp);
    CHECK(closed, label, "the connection stayed open");
}

/* Limit linger-413, Expect: the 413 (or a 417 for an expectation other than
 * 100-continue) comes before any of the body is sent, with no 100. */
static void expect_answers(const server *s)
{
    static const struct {
        const char *what, *request;
        long status;
        const char *code;
    } cases[] = {
        {"Expect: 100-continue, body over the limit",
         "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: 1048576\r\nExpect: 100-continue\r\n\r\n",
         413, "payload_too_large"},
        {"Expect: 100-continuing",
         "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: 15\r\nExpect: 100-continuing\r\n\r\n",
         417, "expectation_failed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[128];
        snprintf(label, sizeof label, "expect: %s", cases[i].what);
        static char resp[1 << 14];
        raw_answer a;
        raw_talk(s, cases[i].request, strlen(cases[i].request), 3.0 * slack(), resp, sizeof resp,
                 &a);
        CHECK(a.status == cases[i].status && strcmp(a.code, cases[i].code) == 0 && a.answers == 1 &&
                  a.secs < 1.0 * slack(),
              label, "status %ld (%s), %u answers after %.2f s; want %ld %s alone at once",
              a.status, a.code, a.answers, a.secs, cases[i].status, cases[i].code);
    }
}

static void body_limits(void)
{
    const char *const args[] = {"--max-body-bytes", "1024", NULL};
    server s;
    if (!server_start(&s, "linger", args, NULL))
        return;
    overlimit_linger(&s);
    expect_answers(&s);
    server_stop(&s);
}

/* Reads fd until it closes or timeout_s passes, dropping the bytes but
 * the last ones (tail, NUL-terminated); returns how many came. */
static size_t read_tail(int fd, double timeout_s, char *tail, size_t cap)
{
    static char buf[1 << 16];
    size_t total = 0, kept = 0;
    double deadline = mono_now() + timeout_s;
    tail[0] = '\0';
    while (mono_now() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k <= 0)
            break;
        total += (size_t)k;
        size_t take = (size_t)k < cap - 1 ? (size_t)k : cap - 1;
        if (kept + take > cap - 1) {
            size_t drop = kept + take - (cap - 1);
            memmove(tail, tail + drop, kept - drop);
            kept -= drop;
        }
        memcpy(tail + kept, buf + (size_t)k - take, take);
        kept += take;
        tail[kept] = '\0';
    }
    return total;
}

/* One drain with a large answer going out to a client that stops reading
 * until `pause_s` after SIGTERM: whether the whole answer arrived, and
 * what the server's last log line says. */
static void drain_case(const char *name, const char *send_timeout, double pause_s, bool whole,
                       const char *log_says)
{
    const char *const args[] = {
        "--drain-timeout", "1", "--drain-send-timeout", send_timeout, "--log-format", "text", NULL};
    char label[128];
    snprintf(label, sizeof label, "drain: %s", name);
    server s;
    if (!server_start(&s, name, args, NULL))
        return;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 64 * 1024; /* so that the answer waits on the client */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char req[] = "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: "
                              "application/json\r\nContent-Length: 20\r\n\r\n"
                              "{\"shape\":[32768,64]}";
    char first[4096];
    ssize_t got = -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && send_all(fd, req, sizeof req - 1))
        got = recv(fd, first, sizeof first - 1, 0); /* the answer has started */
    CHECK(got > 12 && strncmp(first, "HTTP/1.1 200", 12) == 0, label, "no answer started");
    double t0 = mono_now();
    server_signal(&s, SIGTERM);
    sleep_s(pause_s - (mono_now() - t0));
    char tail[64];
    size_t n = read_tail(fd, 10.0 * slack(), tail, sizeof tail);
    close(fd);
    bool complete = strlen(tail) >= 5 && strcmp(tail + strlen(tail) - 5, "0\r\n\r\n") == 0;
    CHECK(complete == whole, label, "%zu bytes after the pause, ending %s; want the answer %s", n,
          complete ? "with the last chunk" : "short of it", whole ? "whole" : "cut");
    int wst = 0;
    bool exited = server_wait_exit(&s, 15 * slack(), &wst);
    CHECK(exited && WIFEXITED(wst) && WEXITSTATUS(wst) == 0, label, "exit status %d",
          WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
    char *log = server_read_log(&s);
    CHECK(log != NULL && strstr(log, log_says) != NULL, label, "the log does not say '%s'",
          log_says);
    free(log);
}

/* Limit drain: an answer already going out when --drain-timeout ends gets
 * --drain-send-timeout more, instead of being cut; one that still cannot
 * finish is cut at the end and counted. */
static void drain_sends(void)
{
    drain_case("drain-send", "6", 1.6, true, "0 of them answers being sent");
    drain_case("drain-send-cut", "1", 2.6, false, "1 of them answers being sent");
}

void test_framing(void)
{
    server s;
    if (!server_start(&s, "framing21", NULL, NULL))
        return;
    run_cases(&s, "smuggle", smuggle_cases, sizeof smuggle_cases / sizeof smuggle_cases[0]);
    run_cases(&s, "coding", coding_cases, sizeof coding_cases / sizeof coding_cases[0]);
    if (server_mhd_answers(&s) == MHD_REFUSES)
        run_cases(&s, "length", length_cases, sizeof length_cases / sizeof length_cases[0]);
    run_cases(&s, "syntax", syntax_cases, sizeof syntax_cases / sizeof syntax_cases[0]);
    server_stop(&s);

    static const char *const key_args[] = {"--api-key", "k3y", NULL};
    if (!server_start(&s, "framing21-key", key_args, NULL))
        return;
    run_cases(&s, "key", key_cases, sizeof key_cases / sizeof key_cases[0]);
    server_stop(&s);

    probe_port_flood();
    body_limits();
    drain_sends();
}

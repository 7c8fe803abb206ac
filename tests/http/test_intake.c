/*
 * test_intake.c - limit slow-body: a request body holds resources only as
 * its bytes arrive, on raw sockets (curl sends a body as fast as it can).
 *
 *   trickle   one connection declaring 64 MiB and sending a byte at a
 *             time holds only what came (--max-memory 64M): other body
 *             requests are answered 200, and /metrics shows a reservation
 *             of that body's size, not of its declared length;
 *   slots     64 connections that send their headers and a few bytes of
 *             a body hold no --max-inflight slot (64): a request that
 *             sends its body at once is computed.
 *
 * Both were seen to fail with the fix taken out (the declared length
 * reserved at the headers; the slot taken at the headers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics_scrape.h"
#include "padded_body.h"
#include "raw_socket.h"
#include "tests.h"

/* A connection that sent headers declaring declared bytes of an /encode
 * body and the first `sent` bytes of it; -1 when that failed. */
static int start_upload(const server *s, size_t declared, size_t sent)
{
    char head[256];
    snprintf(head, sizeof head,
             "POST /encode HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             declared);
    static const char start[] = "{\"shape\":[1,2]          ";
    int fd = tcp_open(s);
    if (fd < 0)
        return -1;
    if (!send_all(fd, head, strlen(head)) ||
        !send_all(fd, start, sent < sizeof start - 1 ? sent : sizeof start - 1)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* POST /encode of a body of len bytes ({"shape":[1,2]} padded): its
 * status. */
static long post_padded(const server *s, size_t len)
{
    char *b = padded_encode_body(len);
    http_resp r;
    http_post_json(s, "/encode", b, &r);
    long st = r.status;
    http_resp_free(&r);
    free(b);
    return st;
}

static void trickle_holds_what_came(void)
{
    const char *label = "64 MiB declared, trickled, --max-memory 64M";
    static const char *const args[] = {"--max-memory", "64M", NULL};
    server s;
    if (!server_start(&s, "intake-trickle", args, NULL))
        return;
    int fd = start_upload(&s, (size_t)64 << 20, 1);
    CHECK(fd >= 0, label, "could not start the upload");
    sleep_s(0.2);
    for (int i = 0; i < 3 && fd >= 0; i++) {
        long st = post_padded(&s, (size_t)1 << 20);
        CHECK(st == 200, label, "a 1 MiB /encode (try %d) while the upload trickles: %ld, want 200",
              i + 1, st);
        CHECK(send_all(fd, " ", 1), label, "the trickling upload was closed");
        sleep_s(0.1);
    }
    double reserved = metric_value(&s, "posenc_memory_reserved_bytes");
    CHECK(reserved >= 0 && reserved <= 64 * 1024, label,
          "posenc_memory_reserved_bytes %g while only a few bytes came, want <= 64 KiB", reserved);
    if (fd >= 0)
        close(fd);
    server_stop(&s);
}

static void slow_bodies_hold_no_slot(void)
{
    const char *label = "64 slow bodies, --max-inflight 64";
    static const char *const args[] = {"--max-inflight", "64", NULL};
    server s;
    if (!server_start(&s, "intake-slots", args, NULL))
        return;
    enum { N = 64 };
    int fds[N];
    int open_n = 0;
    for (int i = 0; i < N; i++) {
        fds[i] = start_upload(&s, 100000, 10);
        open_n += fds[i] >= 0;
    }
    CHECK(open_n == N, label, "started %d of %d slow uploads", open_n, N);
    /* Every one is in: the server has seen their headers. */
    double t0 = mono_now(), in_flight = 0;
    while (mono_now() - t0 < 3.0 * slack() && in_flight < N + 1) {
        in_flight = metric_value(&s, "posenc_in_flight_requests");
        sleep_s(0.02);
    }
    CHECK(in_flight == N + 1, label, "posenc_in_flight_requests %g, want %d", in_flight, N + 1);
    for (int i = 0; i < 3; i++) {
        long st = post_padded(&s, 100);
        CHECK(st == 200, label, "/encode %d while %d bodies trickle: status %ld, want 200", i + 1,
              N, st);
    }
    for (int i = 0; i < N; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    server_stop(&s);
}

void test_intake(void)
{
    trickle_holds_what_came();
    slow_bodies_hold_no_slot();
}

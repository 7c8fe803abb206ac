/*
 * raw_socket.h - what the robustness tests need below libcurl: a plain
 * TCP connection to the server under test, whole sends, and sleeping and
 * time limits that stretch under valgrind.
 */
#ifndef RAW_SOCKET_H
#define RAW_SOCKET_H

#include <stdbool.h>
#include <stddef.h>

#include "harness.h"

/* Sleep s seconds (restarted after a signal). */
void sleep_s(double s);

/* How much longer every time limit of a check is: 10 under valgrind, else 1. */
double slack(void);

/* A TCP connection to s's port on 127.0.0.1, or -1. The caller closes it. */
int tcp_open(const server *s);

/* Send all n bytes (no SIGPIPE); false when the peer is gone. */
bool send_all(int fd, const char *p, size_t n);

/* Reads from fd until the peer closes (or resets) or timeout_s passes;
 * returns the bytes read (NUL-terminated in buf) and sets *closed. */
size_t read_until_close(int fd, double timeout_s, char *buf, size_t cap, bool *closed);

/* What a raw exchange saw. */
typedef struct raw_answer {
    long status;      /* of the first status line; 0: none */
    unsigned answers; /* status lines seen ("HTTP/1." at a line start) */
    bool closed;      /* the server closed the connection */
    double secs;      /* from the send to the close (or the time limit) */
    char code[64];    /* the first answer's JSON error code, or "" */
} raw_answer;

/* Sends n bytes on a new connection, then reads until the server closes
 * it or timeout_s passes, into buf (cap bytes, NUL-terminated). False when
 * the connection or the send failed. */
bool raw_talk(const server *s, const char *bytes, size_t n, double timeout_s, char *buf, size_t cap,
              raw_answer *out);

#endif /* RAW_SOCKET_H */

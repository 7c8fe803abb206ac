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

#endif /* RAW_SOCKET_H */

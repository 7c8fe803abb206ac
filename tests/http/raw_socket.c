/*
 * raw_socket.c - plain TCP for the robustness tests (raw_socket.h).
 */
#include "raw_socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

double slack(void)
{
    return under_valgrind() ? 10.0 : 1.0;
}

int tcp_open(const server *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

size_t read_until_close(int fd, double timeout_s, char *buf, size_t cap, bool *closed)
{
    size_t used = 0;
    double deadline = mono_now() + timeout_s;
    *closed = false;
    buf[0] = '\0';
    while (used + 1 < cap) {
        double left = deadline - mono_now();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t k = recv(fd, buf + used, cap - 1 - used, 0);
        if (k <= 0) {
            *closed = true;
            break;
        }
        used += (size_t)k;
        buf[used] = '\0';
    }
    return used;
}

/* Counts status lines, and reads the first answer's error code. */
static void parse_answers(const char *buf, raw_answer *out)
{
    for (const char *p = buf; (p = strstr(p, "HTTP/1.")) != NULL; p++)
        if (p == buf || p[-1] == '\n')
            out->answers++;
    if (strncmp(buf, "HTTP/1.", 7) == 0)
        out->status = strtol(buf + 9, NULL, 10);
    const char *body = strstr(buf, "\r\n\r\n");
    const char *code = body != NULL ? strstr(body, "\"code\":\"") : NULL;
    if (code != NULL) {
        code += 8;
        size_t k = strcspn(code, "\"");
        snprintf(out->code, sizeof out->code, "%.*s", (int)k, code);
    }
}

bool raw_talk(const server *s, const char *bytes, size_t n, double timeout_s, char *buf, size_t cap,
              raw_answer *out)
{
    memset(out, 0, sizeof *out);
    buf[0] = '\0';
    int fd = tcp_open(s);
    if (fd < 0)
        return false;
    double t0 = mono_now();
    bool sent = send_all(fd, bytes, n);
    if (sent) {
        read_until_close(fd, timeout_s, buf, cap, &out->closed);
        parse_answers(buf, out);
    }
    out->secs = mono_now() - t0;
    close(fd);
    return sent;
}

/*
 * probe.c - the --check health probe (see probe.h).
 */
#include "probe.h"

#include <errno.h>
#include <stdbool.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define PROBE_TIMEOUT_S 3

/* Connects to host:port; connect, send and receive time out after
 * PROBE_TIMEOUT_S each (Linux applies SO_SNDTIMEO to connect). */
static int connect_to(const char *host, const char *port)
{
    struct addrinfo hints, *list = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &list);
    if (gai != 0) {
        fprintf(stderr, "posenc: check: %s: %s\n", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1;
    int err = 0;
    for (struct addrinfo *ai = list; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        struct timeval tv = {PROBE_TIMEOUT_S, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(list);
    if (fd < 0)
        fprintf(stderr, "posenc: check: cannot connect to %s port %s: %s\n", host, port,
                strerror(err));
    return fd;
}

int probe_healthz(const server_config *cfg)
{
    const char *host = cfg->host;
    if (strcmp(host, "0.0.0.0") == 0)
        host = "127.0.0.1";
    else if (strcmp(host, "::") == 0)
        host = "::1";
    /* The probes' own port when there is one: it answers whatever
     * clients do on --port. */
    unsigned number = cfg->probe_port != 0 ? cfg->probe_port : cfg->port;
    if (number == 0) {
        fprintf(stderr, "posenc: check: --port 0 cannot be probed\n");
        return 1;
    }
    char port[16];
    snprintf(port, sizeof port, "%u", number);

    int fd = connect_to(host, port);
    if (fd < 0)
        return 1;

    char req[512];
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(req, sizeof req,
                     "GET /healthz HTTP/1.1\r\nHost: %s%s%s:%s\r\n"
                     "Connection: close\r\n\r\n",
                     v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (n < 0 || (size_t)n >= sizeof req || send(fd, req, (size_t)n, MSG_NOSIGNAL) != (ssize_t)n) {
        fprintf(stderr, "posenc: check: cannot send the request\n");
        close(fd);
        return 1;
    }

    /* Only the status line matters: "HTTP/1.x 200 ...". */
    char buf[64];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (memchr(buf, '\n', got) != NULL)
            break;
    }
    close(fd);
    buf[got] = '\0';
    if (got >= 12 && strncmp(buf, "HTTP/1.", 7) == 0 && strncmp(buf + 8, " 200", 4) == 0)
        return 0;
    char *eol = strpbrk(buf, "\r\n");
    if (eol != NULL)
        *eol = '\0';
    fprintf(stderr, "posenc: check: unhealthy: '%s'\n", got ? buf : "(no answer)");
    return 1;
}

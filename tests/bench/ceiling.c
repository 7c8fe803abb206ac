/*
 * ceiling.c - the "ceiling" comparator of the benchmark suite: a minimal
 * libmicrohttpd server, set up like posenc-server (same daemon flags, thread
 * pool, connection limits), that answers every request with one canned body
 * read from a file at startup. It reads and discards request bodies without
 * parsing them and computes nothing, so its throughput bounds what any
 * libmicrohttpd server can reach for the same request and response sizes.
 *
 * With --work-us N it first burns N microseconds of its thread's CPU time
 * on every request: a stand-in for a server's own work, to measure what a
 * given amount of work per request costs on this harness, client and
 * kernel included (tests/bench/s1_floor.sh).
 *
 *   ceiling --body FILE [--port 0] [--threads 2] [--work-us 0]
 *
 * Prints "ceiling listening on http://127.0.0.1:PORT" once it listens; stops
 * on SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "bench_util.h"

static struct MHD_Response *canned;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until this thread has used ns more nanoseconds of CPU. */
static void burn_cpu(int64_t ns)
{
    int64_t until = thread_cpu_ns() + ns;
    while (thread_cpu_ns() < until)
        ;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    static int started;
    const int64_t *work_ns = cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    if (*con_cls == NULL) { /* headers only: ask for the body */
        *con_cls = &started;
        return MHD_YES;
    }
    if (*upload_data_size != 0) { /* a body chunk: drop it unread */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*work_ns > 0)
        burn_cpu(*work_ns);
    return MHD_queue_response(conn, MHD_HTTP_OK, canned);
}

static int usage(void)
{
    fprintf(stderr, "usage: ceiling --body FILE [--port P] [--threads N] [--work-us N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *body_path = NULL;
    unsigned port = 0, threads = 2;
    int64_t work_ns = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--body") == 0 && i + 1 < argc)
            body_path = argv[++i];
        else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
            port = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--work-us") == 0 && i + 1 < argc)
            work_ns = (int64_t)strtoul(argv[++i], NULL, 10) * 1000;
        else
            return usage();
    }
    if (body_path == NULL || threads == 0 || port > 65535)
        return usage();
    size_t len = 0;
    char *body = read_file(body_path, &len);
    if (body == NULL) {
        perror(body_path);
        return 1;
    }
    canned = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
    if (canned == NULL || MHD_add_response_header(canned, MHD_HTTP_HEADER_CONTENT_TYPE,
                                                  "application/json") != MHD_YES)
        return 1;

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_OptionItem pool[] = {
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL,
                         NULL, on_request, &work_ns, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                         MHD_OPTION_ARRAY, threads > 1 ? pool : pool + 1,
                         MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
                         MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "ceiling: cannot start the daemon\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("ceiling listening on http://127.0.0.1:%u\n", info ? (unsigned)info->port : port);
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    MHD_stop_daemon(d);
    MHD_destroy_response(canned);
    free(body);
    return 0;
}

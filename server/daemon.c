/*
 * daemon.c - libmicrohttpd's daemon: its options, its connection
 * callbacks, starting, quiescing and stopping it (see daemon.h). What
 * happens to each request is lifecycle.h's business.
 */
#include "daemon.h"

#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "access_log.h"
#include "compute_gate.h"
#include "conn_guard.h"
#include "lifecycle.h"
#include "routes.h"

/* Connections libmicrohttpd may hold beyond --max-connections: those are
 * answered 503 (probes are served) and closed, rather than left waiting in
 * the listen backlog with no answer. Past these, new connections wait. */
#define CONNECTION_OVERFLOW 16u

/* Connections come and go: register them with the guard (deadlines and
 * the connection count). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    server_ctx *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci != NULL ? conn_guard_open(srv->guard, (int)ci->connect_fd) : NULL;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_guard_close(srv->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const server_ctx *srv = cls;
    log_vmsg(srv->cfg.log_format, "warn", fmt, ap);
}

/* The address to listen on, --host and port_number, or NULL after logging
 * why (*status says). */
static struct addrinfo *resolve_listen(const server_config *cfg, unsigned port_number, int *status)
{
    char port[16];
    snprintf(port, sizeof port, "%u", port_number);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai != 0) {
        log_msg(cfg->log_format, "error", "--host %s: %s", cfg->host, gai_strerror(gai));
        *status = DAEMON_EXIT_USAGE;
        return NULL;
    }
    return ai;
}

/* Metrics' labels, the connection guard and the compute gate, before the
 * daemon. False after logging (nothing is left allocated). */
static bool start_parts(server_ctx *srv)
{
    const server_config *cfg = &srv->cfg;
    /* Metrics learn the routes' labels here; they never see the table. */
    for (int i = 0; i < ROUTE_COUNT; i++)
        srv->route_labels[i] = route_label(i);
    metrics_init(&srv->metrics, srv->route_labels, ROUTE_COUNT);
    srv->guard = conn_guard_new(cfg->max_connections, cfg->request_timeout_s, cfg->log_format,
                                &srv->metrics.in_flight);
    const compute_gate_config gc = {
        .max_inflight = cfg->max_inflight,
        .workers = cfg->workers,
        .http_threads = cfg->threads,
        .omp_threads = srv->facts.omp_threads,
    };
    srv->gate = srv->guard != NULL ? compute_gate_new(&gc) : NULL;
    if (srv->gate != NULL)
        return true;
    log_msg(cfg->log_format, "error", "cannot start the worker threads");
    conn_guard_free(srv->guard);
    srv->guard = NULL;
    return false;
}

/* The guard and the gate again, when the daemon did not start. */
static void stop_parts(server_ctx *srv)
{
    compute_gate_free(srv->gate);
    srv->gate = NULL;
    conn_guard_free(srv->guard);
    srv->guard = NULL;
}

/* libmicrohttpd's daemon on addr, or NULL. */
static struct MHD_Daemon *start_mhd(server_ctx *srv, const struct addrinfo *addr)
{
    const server_config *cfg = &srv->cfg;
    /* poll(), not epoll (which MHD_USE_AUTO picks on Linux): with epoll,
     * libmicrohttpd 0.9.75's MHD_quiesce_daemon marks the workers quiesced
     * and then removes the listen socket from each worker's epoll set,
     * while a worker that wakes in between removes it itself; quiesce then
     * meets ENOENT and aborts the process ("Failed to remove listen FD
     * from epoll set"), seen on SIGTERM right after a burst of aborted
     * uploads. With poll, quiesce only signals the workers. */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (addr->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned backlog = cfg->max_connections < 128 ? 128 : cfg->max_connections;
    /* MHD warns about a pool of 1 (that is one internal thread, no pool),
     * so the option is passed only for a real pool. */
    struct MHD_OptionItem pool[2] = {
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)cfg->threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    unsigned limit = cfg->max_connections > UINT_MAX - CONNECTION_OVERFLOW
                         ? UINT_MAX
                         : cfg->max_connections + CONNECTION_OVERFLOW;
    return MHD_start_daemon(flags, 0, NULL, NULL, lifecycle_on_access, srv,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_SOCK_ADDR,
                            addr->ai_addr, MHD_OPTION_ARRAY, cfg->threads > 1 ? pool : pool + 1,
                            MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)cfg->timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            cfg->connection_memory, MHD_OPTION_LISTEN_BACKLOG_SIZE, backlog,
                            MHD_OPTION_URI_LOG_CALLBACK, lifecycle_on_uri, srv,
                            MHD_OPTION_NOTIFY_COMPLETED, lifecycle_on_completed, srv,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_END);
}

/* Connections and time the --probe-port listener gives its clients: a
 * kubelet or a load balancer opens a few at a time. */
#define PROBE_CONNECTIONS 64u
#define PROBE_TIMEOUT_S 10u

/* The --probe-port listener: one thread of its own, its own connection
 * limit and idle timeout, and no connection guard (its connections do not
 * count under --max-connections); admission.c serves only the probe
 * routes on it. Returns 0, or an exit status after logging why. */
static int start_probe_mhd(server_ctx *srv)
{
    const server_config *cfg = &srv->cfg;
    int status = DAEMON_EXIT_FAILURE;
    struct addrinfo *ai = resolve_listen(cfg, cfg->probe_port, &status);
    if (ai == NULL)
        return status;
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    srv->probe_daemon = MHD_start_daemon(flags, 0, NULL, NULL, lifecycle_on_access, srv,
                                         MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
                                         MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                         MHD_OPTION_CONNECTION_LIMIT, PROBE_CONNECTIONS,
                                         MHD_OPTION_CONNECTION_TIMEOUT, PROBE_TIMEOUT_S,
                                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->connection_memory,
                                         MHD_OPTION_URI_LOG_CALLBACK, lifecycle_on_uri, srv,
                                         MHD_OPTION_NOTIFY_COMPLETED, lifecycle_on_completed, srv,
                                         MHD_OPTION_END);
    freeaddrinfo(ai);
    if (srv->probe_daemon == NULL) {
        log_msg(cfg->log_format, "error", "cannot listen on %s probe port %u", cfg->host,
                cfg->probe_port);
        return DAEMON_EXIT_FAILURE;
    }
    log_msg(cfg->log_format, "info", "probes (/healthz, /readyz, /metrics) on port %u",
            cfg->probe_port);
    return 0;
}

int daemon_start(server_ctx *srv)
{
    const server_config *cfg = &srv->cfg;
    int status = DAEMON_EXIT_FAILURE;
    struct addrinfo *ai = resolve_listen(cfg, cfg->port, &status);
    if (ai == NULL)
        return status;
    if (!start_parts(srv)) {
        freeaddrinfo(ai);
        return DAEMON_EXIT_FAILURE;
    }
    srv->daemon = start_mhd(srv, ai);
    freeaddrinfo(ai);
    if (srv->daemon == NULL) {
        log_msg(cfg->log_format, "error", "cannot listen on %s port %u", cfg->host, cfg->port);
        stop_parts(srv);
        return DAEMON_EXIT_FAILURE;
    }
    if (cfg->probe_port != 0 && (status = start_probe_mhd(srv)) != 0) {
        daemon_stop(srv, -1);
        return status;
    }

    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info != NULL ? info->port : cfg->port;
    bool v6 = strchr(cfg->host, ':') != NULL;
    log_msg(cfg->log_format, "info",
            "listening on %s%s%s:%u with %u HTTP threads, %u workers, max %u "
            "connections",
            v6 ? "[" : "", cfg->host, v6 ? "]" : "", bound, cfg->threads, cfg->workers,
            cfg->max_connections);
    char url[320];
    snprintf(url, sizeof url, "http://%s%s%s:%u", v6 ? "[" : "", cfg->host, v6 ? "]" : "", bound);
    log_listening(cfg->log_format, url);
    return 0;
}

int daemon_quiesce(server_ctx *srv)
{
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);
    if (fd == MHD_INVALID_SOCKET)
        return -1;
    /* MHD no longer accepts, but the kernel would still queue new
     * connections until the socket is closed, and those clients would
     * hang. Shutting the socket down refuses them at once (and resets the
     * ones already queued) so they retry elsewhere; the descriptor stays
     * ours until daemon_stop closes it, as MHD requires. */
    shutdown(fd, SHUT_RDWR);
    return (int)fd;
}

void daemon_stop(server_ctx *srv, int listen_fd)
{
    /* Every suspended connection must be resumed before MHD stops: the
     * running jobs finish, the queued ones are answered 503. */
    compute_gate_stop(srv->gate);
    if (srv->daemon != NULL)
        MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    if (srv->probe_daemon != NULL) /* last: /readyz says 503 to the end */
        MHD_stop_daemon(srv->probe_daemon);
    srv->probe_daemon = NULL;
    stop_parts(srv); /* the guard after MHD: it reports closed sockets */
    if (listen_fd >= 0)
        close(listen_fd);
}

const char *daemon_library_version(void)
{
    return MHD_get_version();
}

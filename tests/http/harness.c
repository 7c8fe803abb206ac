/*
 * harness.c - server start/stop, libcurl requests, exact float reading and
 * check counters for the HTTP tests. See harness.h.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include <curl/curl.h>

/* ---------------------------------------------------------------------- */
/* Checks                                                                  */
/* ---------------------------------------------------------------------- */

bool under_valgrind(void)
{
    const char *v = getenv("VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_http: out of memory\n");
        abort();
    }
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "test_http: out of memory\n");
        abort();
    }
    return p;
}

/* ---------------------------------------------------------------------- */
/* The server under test                                                   */
/* ---------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *server_path(void)
{
    const char *p = getenv("POSENC_SERVER");
    return (p && *p) ? p : "build/posenc-server";
}

static void log_dir(char *buf, size_t n)
{
    const char *d = getenv("POSENC_TEST_LOGDIR");
    if (d && *d) {
        snprintf(buf, n, "%s", d);
    } else {
        const char *sp = server_path();
        const char *slash = strrchr(sp, '/');
        if (slash)
            snprintf(buf, n, "%.*s/test-logs", (int)(slash - sp), sp);
        else
            snprintf(buf, n, "test-logs");
    }
    mkdir(buf, 0755);
}

/* Print the last lines of the server's log (crash reports, valgrind). */
static void print_log_tail(const server *s, int lines)
{
    FILE *f = fopen(s->log_path, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long start = size > 8000 ? size - 8000 : 0;
    fseek(f, start, SEEK_SET);
    char *buf = xmalloc(8001);
    size_t got = fread(buf, 1, 8000, f);
    buf[got] = '\0';
    fclose(f);
    int seen = 0;
    char *p = buf + got;
    while (p > buf && seen <= lines) {
        --p;
        if (*p == '\n')
            seen++;
    }
    printf("---- last lines of %s ----\n%s\n---- end of log ----\n", s->log_path,
           p == buf ? p : p + 1);
    free(buf);
}

static void *drain_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    for (;;) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k > 0)
            continue;
        if (k < 0 && errno == EINTR)
            continue;
        break;
    }
    close(fd);
    return NULL;
}

bool server_spawn(server *s, const char *name, const char *const *extra_args,
                  const char *const *env_set)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    char dir[400];
    log_dir(dir, sizeof dir);
    snprintf(s->log_path, sizeof s->log_path, "%s/server-%s.log", dir, name);
    char label[96];
    snprintf(label, sizeof label, "server[%s] start", name);

    const char *argv[64];
    int argc = 0;
    if (under_valgrind()) {
        /* Set, the server never re-executes itself (server/omp_policy.h),
         * which would leave valgrind behind. */
        setenv("OMP_WAIT_POLICY", "passive", 0);
        argv[argc++] = "valgrind";
        argv[argc++] = "--error-exitcode=99";
        argv[argc++] = "--leak-check=full";
        argv[argc++] = "--errors-for-leak-kinds=definite,indirect";
        argv[argc++] = "--show-leak-kinds=definite,indirect";
    }
    argv[argc++] = server_path();
    argv[argc++] = "--host";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--port";
    argv[argc++] = "0";
    for (size_t i = 0; extra_args && extra_args[i] && argc < 62; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;

    /* The child's environment, built before fork (the child only execs). */
    char **envp = NULL;
    if (env_set && env_set[0]) {
        size_t ne = 0, na = 0;
        while (environ[ne])
            ne++;
        while (env_set[na])
            na++;
        envp = xcalloc(ne + na + 1, sizeof *envp);
        size_t k = 0;
        for (size_t i = 0; i < ne; i++) {
            bool overridden = false;
            for (size_t j = 0; j < na; j++) {
                const char *eq = strchr(env_set[j], '=');
                size_t nl = eq ? (size_t)(eq - env_set[j]) : strlen(env_set[j]);
                if (strncmp(environ[i], env_set[j], nl) == 0 && environ[i][nl] == '=')
                    overridden = true;
            }
            if (!overridden)
                envp[k++] = environ[i];
        }
        for (size_t j = 0; j < na; j++)
            envp[k++] = (char *)(uintptr_t)env_set[j];
        envp[k] = NULL;
    }

    int pfd[2];
    if (pipe(pfd) != 0) {
        free(envp);
        return CHECK_FAIL(label, "pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        free(envp);
        close(pfd[0]);
        close(pfd[1]);
        return CHECK_FAIL(label, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        int lfd = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (lfd >= 0) {
            dup2(lfd, 2);
            close(lfd);
        }
        if (envp)
            environ = envp;
        execvp(argv[0], (char *const *)(uintptr_t)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    free(envp);
    s->pid = pid;
    s->out_fd = pfd[0];
    return true;
}

bool server_start(server *s, const char *name, const char *const *extra_args,
                  const char *const *env_set)
{
    char label[96];
    snprintf(label, sizeof label, "server[%s] start", name);
    if (!server_spawn(s, name, extra_args, env_set))
        return false;

    /* Read stdout until the listening line. */
    double deadline = now_s() + (under_valgrind() ? 600.0 : 60.0);
    char line[1024];
    size_t used = 0;
    bool found = false;
    while (!found) {
        double left = deadline - now_s();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = s->out_fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t k = read(s->out_fd, line + used, sizeof line - 1 - used);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* EOF: the server exited */
        used += (size_t)k;
        line[used] = '\0';
        char *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            const char *m = strstr(line, "posenc listening on http://");
            if (m) {
                snprintf(s->listening, sizeof s->listening, "%.255s", line);
                const char *hp = m + strlen("posenc listening on http://");
                const char *colon = strrchr(hp, ':');
                if (colon) {
                    s->port = atoi(colon + 1);
                    found = s->port > 0;
                }
            }
            size_t rest = used - (size_t)(nl + 1 - line);
            memmove(line, nl + 1, rest);
            used = rest;
            line[used] = '\0';
            if (found)
                break;
        }
        if (used == sizeof line - 1)
            used = 0; /* a very long line without newline: drop it */
    }
    if (!CHECK(found, label,
               "no \"posenc listening on http://HOST:PORT\" line on stdout "
               "(server %s)",
               server_path())) {
        kill(s->pid, SIGKILL);
        int st;
        waitpid(s->pid, &st, 0);
        s->pid = 0;
        close(s->out_fd);
        print_log_tail(s, 30);
        return false;
    }
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
    pthread_t th;
    if (pthread_create(&th, NULL, drain_thread, (void *)(intptr_t)s->out_fd) == 0)
        pthread_detach(th);
    s->started = true;
    return true;
}

void server_stop(server *s)
{
    if (!s->started || s->pid <= 0)
        return;
    char label[96];
    snprintf(label, sizeof label, "server[%s] SIGTERM", s->name);
    kill(s->pid, SIGTERM);
    double deadline = now_s() + (under_valgrind() ? 300.0 : 30.0);
    int st = 0;
    pid_t w = 0;
    while ((w = waitpid(s->pid, &st, WNOHANG)) == 0 && now_s() < deadline) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char why[160] = "";
    if (w == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &st, 0);
        snprintf(why, sizeof why, "server did not exit after SIGTERM; killed");
    } else if (WIFSIGNALED(st)) {
        snprintf(why, sizeof why, "server died of signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        snprintf(why, sizeof why, "server exited with status %d%s", WEXITSTATUS(st),
                 WEXITSTATUS(st) == 99 ? " (valgrind found errors or leaks)" : "");
    }
    if (!CHECK(why[0] == '\0', label, "%s", why))
        print_log_tail(s, w == 0 ? 30 : 40);
    s->pid = 0;
    s->started = false;
}

void server_signal(const server *s, int sig)
{
    if (s->started && s->pid > 0)
        kill(s->pid, sig);
}

bool server_wait_exit(server *s, double timeout_s, int *status)
{
    *status = 0;
    if (s->pid <= 0)
        return false;
    double deadline = now_s() + timeout_s;
    pid_t w = 0;
    while ((w = waitpid(s->pid, status, WNOHANG)) == 0 && now_s() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    bool exited = w == s->pid;
    if (!exited) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, status, 0);
    }
    s->pid = 0;
    s->started = false;
    return exited;
}

double server_peak_bytes(const server *s)
{
    char path[64], line[256];
    double kb = -1;
#if defined(__SANITIZE_ADDRESS__)
    return -1;
#endif
    if (under_valgrind())
        return -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

char *server_read_log(const server *s)
{
    FILE *f = fopen(s->log_path, "r");
    if (!f) {
        char *empty = xmalloc(1);
        empty[0] = '\0';
        return empty;
    }
    size_t cap = 65536, len = 0;
    char *buf = xmalloc(cap);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += k;
        if (cap - len < 4096) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "test_http: out of memory\n");
                abort();
            }
            buf = nb;
        }
    }
    buf[len] = '\0';
    fclose(f);
    return buf;
}

double mono_now(void)
{
    return now_s();
}

/* ---------------------------------------------------------------------- */
/* HTTP                                                                    */
/* ---------------------------------------------------------------------- */

typedef struct growbuf {
    char *p;
    size_t len, cap;
} growbuf;

static void gb_append(growbuf *g, const char *data, size_t n)
{
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < g->len + n + 1)
            cap *= 2;
        char *np = realloc(g->p, cap);
        if (!np) {
            fprintf(stderr, "test_http: out of memory\n");
            abort();
        }
        g->p = np;
        g->cap = cap;
    }
    memcpy(g->p + g->len, data, n);
    g->len += n;
    g->p[g->len] = '\0';
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    gb_append(ud, data, size * nmemb);
    return size * nmemb;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
    growbuf *g = ud;
    size_t n = size * nmemb;
    if (n >= 5 && memcmp(data, "HTTP/", 5) == 0)
        g->len = 0; /* a new response (after 100 Continue): keep the last */
    gb_append(g, data, n);
    return n;
}

typedef struct upload {
    const char *p;
    size_t left;
} upload;

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
    upload *u = ud;
    size_t n = size * nmemb;
    if (n > 4096)
        n = 4096; /* several chunks */
    if (n > u->left)
        n = u->left;
    memcpy(buf, u->p, n);
    u->p += n;
    u->left -= n;
    return n;
}

void http_resp_free(http_resp *r)
{
    free(r->body);
    free(r->headers);
    if (r->json)
        json_decref(r->json);
    memset(r, 0, sizeof *r);
}

void http_request(const server *s, const char *method, const char *path, const char *ctype,
                  const char *body, size_t len, const char *const *extra_headers, bool chunked,
                  http_resp *out)
{
    memset(out, 0, sizeof *out);
    growbuf gbody = {0}, ghead = {0};
    gb_append(&gbody, "", 0);
    gb_append(&ghead, "", 0);
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(out->transport_error, sizeof out->transport_error, "curl_easy_init failed");
        out->body = gbody.p;
        out->headers = ghead.p;
        return;
    }
    char url[1024];
    snprintf(url, sizeof url, "%s%s", s->base, path);
    struct curl_slist *hdrs = NULL;
    char ct[256];
    if (ctype) {
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        hdrs = curl_slist_append(hdrs, ct);
    }
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (chunked)
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    for (size_t i = 0; extra_headers && extra_headers[i]; i++)
        hdrs = curl_slist_append(hdrs, extra_headers[i]);

    upload up = {body ? body : "", body ? len : 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, under_valgrind() ? 1200L : 180L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &gbody);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &ghead);
    if (strcmp(method, "GET") == 0 && !body) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else {
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        if (chunked) {
            curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(c, CURLOPT_READDATA, &up);
        } else {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
        }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK)
        snprintf(out->transport_error, sizeof out->transport_error, "%s", curl_easy_strerror(rc));
    out->status = status;
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    out->body = gbody.p;
    out->len = gbody.len;
    out->headers = ghead.p;
    if (out->len) {
        json_error_t jerr;
        out->json = json_loadb(out->body, out->len, JSON_DECODE_ANY, &jerr);
    }
}

void http_post_json(const server *s, const char *path, const char *body, http_resp *out)
{
    http_request(s, "POST", path, "application/json", body, strlen(body), NULL, false, out);
}

void http_get(const server *s, const char *path, http_resp *out)
{
    http_request(s, "GET", path, NULL, NULL, 0, NULL, false, out);
}

bool http_header(const http_resp *r, const char *name, char *buf, size_t n)
{
    size_t nl = strlen(name);
    const char *p = r->headers;
    while (p && *p) {
        const char *eol = strstr(p, "\r\n");
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t vl = ll - (size_t)(v - p);
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                vl--;
            snprintf(buf, n, "%.*s", (int)vl, v);
            return true;
        }
        if (!eol)
            break;
        p = eol + 2;
    }
    return false;
}

const char *find_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return hay;
    return NULL;
}

long raw_request(const server *s, const char *bytes, size_t len, int timeout_s, char *resp_buf,
                 size_t resp_cap)
{
    resp_buf[0] = '\0';
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return 0;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t k = send(fd, bytes + off, len - off, MSG_NOSIGNAL);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    size_t used = 0;
    double deadline = now_s() + timeout_s;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0 || used + 1 >= resp_cap)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr <= 0)
            break;
        ssize_t k = recv(fd, resp_buf + used, resp_cap - 1 - used, 0);
        if (k <= 0)
            break;
        used += (size_t)k;
        resp_buf[used] = '\0';
        const char *hend = strstr(resp_buf, "\r\n\r\n");
        if (hend) {
            const char *cl = find_nocase(resp_buf, "\r\nContent-Length:");
            if (cl && cl < hend) {
                size_t want = (size_t)strtoul(cl + 17, NULL, 10);
                if (used >= (size_t)(hend + 4 - resp_buf) + want)
                    break;
            }
        }
    }
    close(fd);
    long status = 0;
    if (strncmp(resp_buf, "HTTP/1.", 7) == 0 && strlen(resp_buf) > 12)
        status = strtol(resp_buf + 9, NULL, 10);
    return status;
}

/* ---------------------------------------------------------------------- */
/* Response checks                                                          */
/* ---------------------------------------------------------------------- */

static bool field_matches(const char *got, const char *alternatives)
{
    const char *p = alternatives;
    size_t gl = strlen(got);
    for (;;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == gl && strncmp(p, got, l) == 0)
            return true;
        if (!bar)
            return false;
        p = bar + 1;
    }
}

static void body_excerpt(const http_resp *r, char *buf, size_t n)
{
    if (r->status == 0) {
        snprintf(buf, n, "no response (%s)", r->transport_error);
        return;
    }
    size_t l = r->len < 200 ? r->len : 200;
    snprintf(buf, n, "%ld %.*s%s", r->status, (int)l, r->body ? r->body : "",
             r->len > 200 ? "..." : "");
}

bool expect_error(const char *label, const http_resp *r, long status, const char *code,
                  const char *field)
{
    char ex[300];
    body_excerpt(r, ex, sizeof ex);
    bool ok = CHECK(r->status == status, label, "want status %ld, got %s", status, ex);
    char ctype[128] = "";
    http_header(r, "Content-Type", ctype, sizeof ctype);
    CHECK(strncasecmp(ctype, "application/json", 16) == 0, label,
          "error Content-Type is \"%s\", want application/json", ctype);
    json_t *err = r->json ? json_object_get(r->json, "error") : NULL;
    if (!CHECK(json_is_object(err), label, "body is not {\"error\": {...}}: %s", ex))
        return false;
    const char *c = jstr(err, "code");
    ok = CHECK(c && strcmp(c, code) == 0, label, "want error.code \"%s\", got %s", code, ex) && ok;
    const char *m = jstr(err, "message");
    CHECK(m && *m, label, "error.message missing or empty: %s", ex);
    json_t *f = json_object_get(err, "field");
    if (field && *field) {
        CHECK(json_is_string(f) && field_matches(json_string_value(f), field), label,
              "want error.field \"%s\", got %s", field, ex);
    } else if (field) {
        CHECK(f == NULL || json_is_null(f), label, "want no error.field, got %s", ex);
    }
    return ok;
}

bool expect_ok(const char *label, const http_resp *r)
{
    char ex[300];
    body_excerpt(r, ex, sizeof ex);
    if (!CHECK(r->status == 200, label, "want 200, got %s", ex))
        return false;
    return CHECK(json_is_object(r->json), label, "200 body is not a JSON object: %s", ex);
}

bool expect_diagnosis(const server *s, const char *label, const char *body, const char *verdict,
                      http_resp *r)
{
    http_post_json(s, "/diagnose", body, r);
    if (!expect_ok(label, r))
        return false;
    const char *v = jstr(r->json, "verdict");
    return CHECK(v && strcmp(v, verdict) == 0, label, "verdict %s, want %s (body: %.700s)",
                 v ? v : "(none)", verdict, r->body);
}

void valgrind_functional(const char *name, const char *const *args)
{
    server s;
    http_resp r;

    if (!server_start(&s, name, args, NULL))
        return;
    http_post_json(&s, "/encode", "{\"shape\":[2,4]}", &r);
    expect_ok("POST /encode under valgrind", &r);
    http_resp_free(&r);
    http_post_json(&s, "/diagnose", "{\"scheme\":\"alibi\",\"slopes\":[0.5,0.25]}", &r);
    expect_ok("POST /diagnose under valgrind", &r);
    http_resp_free(&r);
    server_stop(&s);
}

/* ---------------------------------------------------------------------- */
/* Float arrays in responses                                                */
/* ---------------------------------------------------------------------- */

void farr_free(farr *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static const char *skip_string(const char *p, const char *end)
{
    if (p >= end || *p != '"')
        return NULL;
    for (p++; p < end; p++) {
        if (*p == '\\') {
            p++;
            continue;
        }
        if (*p == '"')
            return p + 1;
    }
    return NULL;
}

static const char *skip_value(const char *p, const char *end, int depth)
{
    p = skip_ws(p, end);
    if (p >= end || depth > 200)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '[' || *p == '{') {
        char close = *p == '[' ? ']' : '}';
        bool obj = *p == '{';
        p = skip_ws(p + 1, end);
        if (p < end && *p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                p = skip_string(skip_ws(p, end), end);
                if (!p)
                    return NULL;
                p = skip_ws(p, end);
                if (p >= end || *p != ':')
                    return NULL;
                p++;
            }
            p = skip_value(p, end, depth + 1);
            if (!p)
                return NULL;
            p = skip_ws(p, end);
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == close)
                return p + 1;
            return NULL;
        }
    }
    while (p < end && (strchr("-+.eE0123456789truefalsn", *p) != NULL))
        p++;
    return p;
}

/* Pointer to the value of top-level key `key`, or NULL. */
static const char *find_top_key(const char *body, size_t len, const char *key)
{
    const char *end = body + len;
    const char *p = skip_ws(body, end);
    if (p >= end || *p != '{')
        return NULL;
    p++;
    size_t kl = strlen(key);
    for (;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"')
            return NULL;
        const char *ks = p + 1;
        const char *ke = skip_string(p, end);
        if (!ke)
            return NULL;
        bool match = (size_t)(ke - 1 - ks) == kl && memcmp(ks, key, kl) == 0;
        p = skip_ws(ke, end);
        if (p >= end || *p != ':')
            return NULL;
        p = skip_ws(p + 1, end);
        if (match)
            return p;
        p = skip_value(p, end, 1);
        if (!p)
            return NULL;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        return NULL;
    }
}

/* Significant digits of a number as written (leading and trailing zeros
 * of the mantissa do not count). */
static int sig_digits(const char *tok)
{
    char digits[64];
    size_t n = 0;
    for (const char *p = tok; *p && *p != 'e' && *p != 'E'; p++)
        if (*p >= '0' && *p <= '9' && n < sizeof digits - 1)
            digits[n++] = *p;
    digits[n] = '\0';
    size_t a = 0;
    while (a < n && digits[a] == '0')
        a++;
    while (n > a && digits[n - 1] == '0')
        n--;
    int s = (int)(n - a);
    return s < 1 ? 1 : s;
}

/* Fewest significant digits that read back as f. */
static int min_digits(float f)
{
    char buf[64];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, (double)f);
        if (strtof(buf, NULL) == f)
            return p;
    }
    return 9;
}

typedef struct nparse {
    float *v;
    size_t n, cap;
    int ndim; /* -1 until the first number */
    size_t shape[FARR_MAXDIM];
    bool shape_set[FARR_MAXDIM];
    size_t not_shortest;
    char eg[64];
    char err[160];
} nparse;

static const char *parse_narr(nparse *st, const char *p, const char *end, int depth)
{
    if (depth >= FARR_MAXDIM) {
        snprintf(st->err, sizeof st->err, "nested deeper than %d", FARR_MAXDIM);
        return NULL;
    }
    p = skip_ws(p, end);
    if (p >= end || *p != '[') {
        snprintf(st->err, sizeof st->err, "expected '[' at depth %d", depth);
        return NULL;
    }
    p = skip_ws(p + 1, end);
    size_t count = 0;
    if (p < end && *p == ']') {
        p++;
    } else {
        for (;;) {
            p = skip_ws(p, end);
            if (p < end && *p == '[') {
                if (st->ndim >= 0 && depth + 1 >= st->ndim) {
                    snprintf(st->err, sizeof st->err, "mixed nesting at depth %d", depth);
                    return NULL;
                }
                p = parse_narr(st, p, end, depth + 1);
                if (!p)
                    return NULL;
            } else {
                if (st->ndim < 0)
                    st->ndim = depth + 1;
                else if (st->ndim != depth + 1) {
                    snprintf(st->err, sizeof st->err, "number at depth %d, expected %d", depth,
                             st->ndim - 1);
                    return NULL;
                }
                const char *q = p;
                while (q < end && strchr("-+.eE0123456789", *q) && *q)
                    q++;
                char tok[64];
                size_t tl = (size_t)(q - p);
                if (tl == 0 || tl >= sizeof tok) {
                    snprintf(st->err, sizeof st->err, "not a number: \"%.20s\"", p);
                    return NULL;
                }
                memcpy(tok, p, tl);
                tok[tl] = '\0';
                char *te;
                float f = strtof(tok, &te);
                if (*te != '\0' || !isfinite(f)) {
                    snprintf(st->err, sizeof st->err, "bad number \"%s\"", tok);
                    return NULL;
                }
                if (sig_digits(tok) > min_digits(f)) {
                    if (st->not_shortest++ == 0)
                        snprintf(st->eg, sizeof st->eg, "%s", tok);
                }
                if (st->n == st->cap) {
                    st->cap = st->cap ? st->cap * 2 : 256;
                    float *nv = realloc(st->v, st->cap * sizeof *nv);
                    if (!nv)
                        abort();
                    st->v = nv;
                }
                st->v[st->n++] = f;
                p = q;
            }
            count++;
            p = skip_ws(p, end);
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == ']') {
                p++;
                break;
            }
            snprintf(st->err, sizeof st->err, "expected ',' or ']'");
            return NULL;
        }
    }
    if (!st->shape_set[depth]) {
        st->shape[depth] = count;
        st->shape_set[depth] = true;
    } else if (st->shape[depth] != count) {
        snprintf(st->err, sizeof st->err, "ragged: %zu elements where %zu were seen", count,
                 st->shape[depth]);
        return NULL;
    }
    return p;
}

bool get_farr(const char *label, const http_resp *r, const char *key, farr *a)
{
    memset(a, 0, sizeof *a);
    if (!r->body || r->status != 200)
        return CHECK_FAIL(label, "no 200 response to read \"%s\" from (status %ld)", key,
                          r->status);
    const char *v = find_top_key(r->body, r->len, key);
    if (!CHECK(v != NULL, label, "response has no field \"%s\"", key))
        return false;
    const char *end = r->body + r->len;
    if (*v == '"') {
        const char *ve = skip_string(v, end);
        if (!CHECK(ve != NULL, label, "\"%s\": unterminated string", key))
            return false;
        size_t bl;
        unsigned char *bytes = base64_decode(v + 1, (size_t)(ve - 1 - (v + 1)), &bl);
        if (!CHECK(bytes && bl % 4 == 0, label, "\"%s\" is not valid base64 of float32", key)) {
            free(bytes);
            return false;
        }
        char sk[64];
        snprintf(sk, sizeof sk, "%s_shape", key);
        json_t *sh = r->json ? json_object_get(r->json, sk) : NULL;
        if (!CHECK(json_is_array(sh) && json_array_size(sh) >= 1 &&
                       json_array_size(sh) <= FARR_MAXDIM,
                   label, "base64 \"%s\" without a valid \"%s\"", key, sk)) {
            free(bytes);
            return false;
        }
        size_t total = 1;
        a->ndim = (int)json_array_size(sh);
        for (int i = 0; i < a->ndim; i++) {
            json_t *e = json_array_get(sh, (size_t)i);
            a->shape[i] = json_is_integer(e) ? (size_t)json_integer_value(e) : 0;
            total *= a->shape[i];
        }
        if (!CHECK(total * 4 == bl, label, "\"%s\" has %zu bytes but %s says %zu floats", key, bl,
                   sk, total)) {
            free(bytes);
            return false;
        }
        a->n = total;
        a->v = xmalloc(bl);
        for (size_t i = 0; i < total; i++) {
            uint32_t u = (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
                         (uint32_t)bytes[4 * i + 2] << 16 | (uint32_t)bytes[4 * i + 3] << 24;
            memcpy(&a->v[i], &u, 4);
        }
        free(bytes);
        a->base64 = true;
        size_t nonfinite = 0;
        for (size_t i = 0; i < total; i++)
            nonfinite += !isfinite(a->v[i]);
        return CHECK(nonfinite == 0, label, "\"%s\" (base64) holds %zu non-finite values", key,
                     nonfinite);
    }
    nparse st = {.ndim = -1};
    const char *pe = parse_narr(&st, v, end, 0);
    if (!CHECK(pe != NULL, label, "\"%s\" is not a rectangular array of numbers: %s", key,
               st.err)) {
        free(st.v);
        return false;
    }
    a->v = st.v;
    a->n = st.n;
    a->ndim = st.ndim < 0 ? 1 : st.ndim;
    for (int i = 0; i < a->ndim; i++)
        a->shape[i] = st.shape[i];
    a->not_shortest = st.not_shortest;
    snprintf(a->not_shortest_eg, sizeof a->not_shortest_eg, "%s", st.eg);
    CHECK(st.not_shortest == 0, label,
          "\"%s\": %zu numbers not in shortest round-trip form, e.g. %s", key, st.not_shortest,
          st.eg);
    return true;
}

static void shape_text(char *buf, size_t n, int ndim, const size_t *shape)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (int i = 0; i < ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%zu", i ? "," : "", shape[i]);
    if (o < n)
        snprintf(buf + o, n - o, "]");
}

bool check_shape(const char *label, const char *what, const farr *a, int ndim, const size_t *shape)
{
    bool same = a->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = a->shape[i] == shape[i];
    char g[96], w[96];
    shape_text(g, sizeof g, a->ndim, a->shape);
    shape_text(w, sizeof w, ndim, shape);
    return CHECK(same, label, "%s has shape %s, want %s", what, g, w);
}

static void index_text(char *buf, size_t n, const farr *a, size_t flat)
{
    size_t idx[FARR_MAXDIM];
    for (int i = a->ndim - 1; i >= 0; i--) {
        size_t d = a->shape[i] ? a->shape[i] : 1;
        idx[i] = flat % d;
        flat /= d;
    }
    size_t o = 0;
    for (int i = 0; i < a->ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "[%zu]", idx[i]);
    if (a->ndim == 0)
        snprintf(buf, n, "[?]");
}

static double ulp_f32(double want)
{
    float f = fabsf((float)want);
    if (!isfinite(f))
        return INFINITY;
    float up = nextafterf(f, INFINITY);
    return (double)up - (double)f;
}

/* What a comparison of a response array with a reference found. */
typedef struct mismatch {
    size_t bad;             /* elements outside the tolerance */
    size_t first;           /* the first of them */
    double want_first;      /* its reference value */
    const char *worst_name; /* "max |err|" etc., or NULL: no worst figure */
    double worst;
} mismatch;

/* Count one check of the comparison: pass when nothing was off, else
 * "what: B of N values <off>; first [i][j] got G, want W; <worst>". */
static bool report_values(const char *label, const char *what, const farr *a, size_t n,
                          const mismatch *m, const char *off)
{
    char idx[96] = "", worst[64] = "";
    if (m->bad)
        index_text(idx, sizeof idx, a, m->first);
    if (m->worst_name)
        snprintf(worst, sizeof worst, "; %s %.3g", m->worst_name, m->worst);
    return CHECK(m->bad == 0, label, "%s: %zu of %zu values %s; first %s got %.9g, want %.9g%s",
                 what, m->bad, n, off, idx, m->bad ? (double)a->v[m->first] : 0.0, m->want_first,
                 worst);
}

static void note_bad(mismatch *m, size_t i, double want)
{
    if (m->bad++ == 0) {
        m->first = i;
        m->want_first = want;
    }
}

bool check_close(const char *label, const char *what, const farr *a, const double *want, size_t n,
                 double abs_tol, double rel_ulps)
{
    if (!CHECK(a->n == n, label, "%s has %zu values, want %zu", what, a->n, n))
        return false;
    mismatch m = {.worst_name = "max |err|"};
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)a->v[i] - want[i]);
        double tol = abs_tol + rel_ulps * ulp_f32(want[i]);
        if (err > m.worst || isnan(err))
            m.worst = err;
        if (!(err <= tol))
            note_bad(&m, i, want[i]);
    }
    return report_values(label, what, a, n, &m, "off");
}

bool check_close_rownorm(const char *label, const char *what, const farr *a, const double *want,
                         size_t n, size_t row, double rel, double abs_tol)
{
    if (!CHECK(a->n == n, label, "%s has %zu values, want %zu", what, a->n, n))
        return false;
    mismatch m = {.worst_name = "max err/rownorm"};
    for (size_t r0 = 0; r0 < n; r0 += row) {
        double norm = 0;
        for (size_t i = r0; i < r0 + row && i < n; i++)
            norm += want[i] * want[i];
        norm = sqrt(norm);
        for (size_t i = r0; i < r0 + row && i < n; i++) {
            double err = fabs((double)a->v[i] - want[i]);
            double tol = rel * norm + abs_tol;
            if (norm > 0 && err / norm > m.worst)
                m.worst = err / norm;
            if (!(err <= tol))
                note_bad(&m, i, want[i]);
        }
    }
    return report_values(label, what, a, n, &m, "off");
}

bool check_exact(const char *label, const char *what, const farr *a, const float *want, size_t n)
{
    if (!CHECK(a->n == n, label, "%s has %zu values, want %zu", what, a->n, n))
        return false;
    mismatch m = {0};
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a->v[i], &want[i], sizeof(float)) != 0)
            note_bad(&m, i, (double)want[i]);
    return report_values(label, what, a, n, &m, "not bit-identical");
}

/* ---------------------------------------------------------------------- */
/* Building request bodies                                                  */
/* ---------------------------------------------------------------------- */

void sb_init(sbuf *b)
{
    b->cap = 256;
    b->len = 0;
    b->s = xmalloc(b->cap);
    b->s[0] = '\0';
}

void sb_free(sbuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

static void sb_reserve(sbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *np = realloc(b->s, cap);
    if (!np)
        abort();
    b->s = np;
    b->cap = cap;
}

void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sb_puts(sbuf *b, const char *str)
{
    size_t n = strlen(str);
    sb_reserve(b, n);
    memcpy(b->s + b->len, str, n + 1);
    b->len += n;
}

void sb_float(sbuf *b, float f)
{
    sb_printf(b, "%.9g", (double)f);
}

static void sb_farray_rec(sbuf *b, const float **v, int ndim, const size_t *shape)
{
    sb_puts(b, "[");
    for (size_t i = 0; i < shape[0]; i++) {
        if (i)
            sb_puts(b, ",");
        if (ndim == 1) {
            sb_float(b, **v);
            (*v)++;
        } else {
            sb_farray_rec(b, v, ndim - 1, shape + 1);
        }
    }
    sb_puts(b, "]");
}

void sb_farray(sbuf *b, const float *v, int ndim, const size_t *shape)
{
    const float *p = v;
    sb_farray_rec(b, &p, ndim, shape);
}

void sb_iarray(sbuf *b, const int64_t *v, size_t n)
{
    sb_puts(b, "[");
    for (size_t i = 0; i < n; i++)
        sb_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
    sb_puts(b, "]");
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void sb_base64_floats(sbuf *b, const float *v, size_t n)
{
    size_t nb = n * 4;
    unsigned char *bytes = xmalloc(nb);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        bytes[4 * i] = (unsigned char)(u & 0xff);
        bytes[4 * i + 1] = (unsigned char)((u >> 8) & 0xff);
        bytes[4 * i + 2] = (unsigned char)((u >> 16) & 0xff);
        bytes[4 * i + 3] = (unsigned char)((u >> 24) & 0xff);
    }
    sb_reserve(b, (nb + 2) / 3 * 4 + 2);
    b->s[b->len++] = '"';
    for (size_t i = 0; i < nb; i += 3) {
        uint32_t w = (uint32_t)bytes[i] << 16;
        if (i + 1 < nb)
            w |= (uint32_t)bytes[i + 1] << 8;
        if (i + 2 < nb)
            w |= bytes[i + 2];
        b->s[b->len++] = B64[(w >> 18) & 63];
        b->s[b->len++] = B64[(w >> 12) & 63];
        b->s[b->len++] = i + 1 < nb ? B64[(w >> 6) & 63] : '=';
        b->s[b->len++] = i + 2 < nb ? B64[w & 63] : '=';
    }
    b->s[b->len++] = '"';
    b->s[b->len] = '\0';
    free(bytes);
}

unsigned char *base64_decode(const char *s, size_t len, size_t *out_len)
{
    if (len % 4 != 0)
        return NULL;
    unsigned char *out = xmalloc(len / 4 * 3 + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            char c = s[i + (size_t)k];
            const char *pos = c ? strchr(B64, c) : NULL;
            if (c == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pos && !pad) {
                v[k] = (int)(pos - B64);
            } else {
                free(out);
                return NULL;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
                     (uint32_t)v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
    }
    *out_len = o;
    return out;
}

/* ---------------------------------------------------------------------- */
/* Small helpers                                                            */
/* ---------------------------------------------------------------------- */

void trng_seed(trng *r, uint64_t seed)
{
    r->s = seed * 0x2545F4914F6CDD1DULL + 0x1234567ULL;
    if (r->s == 0)
        r->s = 88172645463325252ULL;
}

float trng_uniform(trng *r, float lo, float hi)
{
    /* xorshift64* */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    uint64_t x = r->s * 0x2545F4914F6CDD1DULL;
    double u = (double)(x >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

void trng_fill(trng *r, float *v, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        v[i] = trng_uniform(r, lo, hi);
}

const char *jstr(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

long long jint(const json_t *obj, const char *key, long long absent)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : absent;
}

/* ---------------------------------------------------------------------- */
/* Self-test of the parts of the harness that judge responses               */
/* ---------------------------------------------------------------------- */

void harness_selftest(void)
{
    const char *L = "harness selftest";
    CHECK(sig_digits("0.100000001") == 9 && min_digits(0.1f) == 1, L, "shortest-digit counting");
    CHECK(sig_digits("0.1") <= min_digits(strtof("0.1", NULL)), L, "0.1 is shortest");
    CHECK(sig_digits("1e-45") <= min_digits(1e-45f), L, "1e-45 is shortest for the least denormal");
    CHECK(sig_digits("3.4028235e+38") <= min_digits(3.40282347e38f) &&
              sig_digits("3.40282347e+38") > min_digits(3.40282347e38f),
          L, "FLT_MAX shortest is 8 digits");
    CHECK(sig_digits("100") == 1 && sig_digits("-0") == 1 && sig_digits("0.000120") == 2, L,
          "significant digits ignore leading/trailing zeros");

    const char *good = "{\"a\":{\"x\":[1]},\"encoded\":[[0.1,2],[3,4e-1]],\"b\":\"[\"}";
    http_resp r = {.status = 200, .body = (char *)(uintptr_t)good, .len = strlen(good)};
    farr a;
    CHECK(get_farr(L, &r, "encoded", &a) && a.n == 4 && a.ndim == 2 && a.shape[0] == 2 &&
              a.shape[1] == 2 && a.v[0] == 0.1f && a.v[3] == 0.4f,
          L, "reading a nested array");
    farr_free(&a);
    CHECK(find_top_key(good, strlen(good), "x") == NULL, L, "only top-level keys are found");
    const char *ragged = "{\"encoded\":[[1,2],[3]]}";
    nparse st = {.ndim = -1};
    const char *v = find_top_key(ragged, strlen(ragged), "encoded");
    CHECK(v && parse_narr(&st, v, ragged + strlen(ragged), 0) == NULL, L,
          "ragged arrays are refused");
    free(st.v);
    const char *longnum = "{\"encoded\":[0.100000001]}";
    memset(&st, 0, sizeof st);
    st.ndim = -1;
    v = find_top_key(longnum, strlen(longnum), "encoded");
    CHECK(v && parse_narr(&st, v, longnum + strlen(longnum), 0) && st.not_shortest == 1, L,
          "a 9-digit 0.1 is flagged as not shortest");
    free(st.v);

    float f[3] = {1.0f, -2.5f, 1e-45f};
    sbuf b;
    sb_init(&b);
    sb_base64_floats(&b, f, 3);
    size_t n = 0;
    unsigned char *bytes = base64_decode(b.s + 1, b.len - 2, &n);
    CHECK(bytes && n == 12 && memcmp(bytes, f, 12) == 0 && strcmp(b.s, "\"AACAPwAAIMABAAAA\"") == 0,
          L, "base64 round trip (%s)", b.s);
    free(bytes);
    sb_free(&b);
    CHECK(base64_decode("AA=A", 4, &n) == NULL && base64_decode("AAA", 3, &n) == NULL &&
              base64_decode("AA*A", 4, &n) == NULL,
          L, "invalid base64 is refused");
}

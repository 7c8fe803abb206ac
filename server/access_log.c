/*
 * access_log.c - access and server log lines on stderr (see access_log.h).
 */
#include "access_log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

#define LINE_MAX_BYTES 2048

/* Appends s to buf[*len..cap) as JSON string content (no quotes), with the
 * API's escaper. Stops quietly while 8 bytes are still free, so the closing
 * `"}` of a long line always fits. */
static void append_json_escaped(char *buf, size_t *len, size_t cap, const char *s)
{
    api_json_escape(buf, len, cap, 8, s);
}

static void append_fmt(char *buf, size_t *len, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n >= cap)
        n = cap - *len - 1;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

/* One write(2) per line, past stdio: stderr is unbuffered, so fwrite made
 * the same system call, but under the stream's lock, and the HTTP threads
 * queued on that lock (futex waits and context switches were a tenth of
 * S1's kernel time). A line is under PIPE_BUF, so a pipe or a file opened
 * for appending gets it whole. */
static void write_line_to(int fd, char *buf, size_t len, size_t cap)
{
    if (len + 1 >= cap)
        len = cap - 2;
    buf[len++] = '\n';
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* a log that cannot be written never stops a request */
        done += (size_t)n;
    }
}

static void write_line(char *buf, size_t len, size_t cap)
{
    write_line_to(STDERR_FILENO, buf, len, cap);
}

/* `{"time":"<RFC 3339, UTC, microseconds>",` opening a JSON line: when it
 * was written, for log collectors that do not stamp lines themselves. */
static void append_json_time(char *buf, size_t *len, size_t cap)
{
    struct timespec now;
    struct tm utc;
    char stamp[80];

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &utc);
    size_t n = strftime(stamp, sizeof stamp, "{\"time\":\"%Y-%m-%dT%H:%M:%S", &utc);
    snprintf(stamp + n, sizeof stamp - n, ".%06ldZ\",", now.tv_nsec / 1000);
    append_fmt(buf, len, cap, stamp);
}

void log_access(log_format fmt, const access_entry *e)
{
    char line[LINE_MAX_BYTES];
    double ms = (double)e->duration_ns / 1e6;
    int n;

    if (fmt == LOG_TEXT) {
        n = snprintf(line, sizeof line, "%s %s %d %.3f %llu %llu %s", e->method, e->route,
                     e->status, ms, (unsigned long long)e->bytes_in,
                     (unsigned long long)e->bytes_out, e->request_id);
        if (n < 0)
            return;
        write_line(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, sizeof line);
        return;
    }
    size_t len = 0;
    line[0] = '\0';
    append_json_time(line, &len, sizeof line);
    append_fmt(line, &len, sizeof line, "\"method\":\"");
    append_json_escaped(line, &len, sizeof line, e->method);
    append_fmt(line, &len, sizeof line, "\",\"route\":\"");
    append_json_escaped(line, &len, sizeof line, e->route);
    char nums[160];
    snprintf(nums, sizeof nums,
             "\",\"status\":%d,\"duration_ms\":%.3f,\"bytes_in\":%llu,"
             "\"bytes_out\":%llu,\"request_id\":\"",
             e->status, ms, (unsigned long long)e->bytes_in, (unsigned long long)e->bytes_out);
    append_fmt(line, &len, sizeof line, nums);
    append_json_escaped(line, &len, sizeof line, e->request_id);
    append_fmt(line, &len, sizeof line, "\"}");
    write_line(line, len, sizeof line);
}

/* A server message at level as one line on fd. */
static void vmsg_to(int fd, log_format fmt, const char *level, const char *format, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void vmsg_to(int fd, log_format fmt, const char *level, const char *format, va_list ap)
{
    char msg[1024];
    int n = vsnprintf(msg, sizeof msg, format, ap);
    if (n < 0)
        return;
    /* Messages from libmicrohttpd end in a newline: one line each. */
    size_t mlen = strlen(msg);
    while (mlen > 0 && (msg[mlen - 1] == '\n' || msg[mlen - 1] == '\r'))
        msg[--mlen] = '\0';

    char line[LINE_MAX_BYTES];
    size_t len = 0;
    line[0] = '\0';
    if (fmt == LOG_TEXT) {
        append_fmt(line, &len, sizeof line, "posenc: ");
        append_fmt(line, &len, sizeof line, level);
        append_fmt(line, &len, sizeof line, ": ");
        append_fmt(line, &len, sizeof line, msg);
    } else {
        append_json_time(line, &len, sizeof line);
        append_fmt(line, &len, sizeof line, "\"level\":\"");
        append_json_escaped(line, &len, sizeof line, level);
        append_fmt(line, &len, sizeof line, "\",\"msg\":\"");
        append_json_escaped(line, &len, sizeof line, msg);
        append_fmt(line, &len, sizeof line, "\"}");
    }
    write_line_to(fd, line, len, sizeof line);
}

void log_vmsg(log_format fmt, const char *level, const char *format, va_list ap)
{
    vmsg_to(STDERR_FILENO, fmt, level, format, ap);
}

static void msg_to(int fd, log_format fmt, const char *level, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static void msg_to(int fd, log_format fmt, const char *level, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    vmsg_to(fd, fmt, level, format, ap);
    va_end(ap);
}

void log_listening(log_format fmt, const char *url)
{
    if (fmt == LOG_TEXT) {
        char line[LINE_MAX_BYTES];
        int n = snprintf(line, sizeof line, "posenc listening on %s", url);
        if (n > 0)
            write_line_to(STDOUT_FILENO, line, (size_t)n, sizeof line);
        return;
    }
    msg_to(STDOUT_FILENO, fmt, "info", "posenc listening on %s", url);
}

void log_msg(log_format fmt, const char *level, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    log_vmsg(fmt, level, format, ap);
    va_end(ap);
}

/*
 * access_log.h - what the server writes on stderr: one line per finished
 * request, and startup/shutdown messages, as text or as JSON objects (one
 * per line) depending on --log-format; and on stdout the one line saying
 * where it listens.
 *
 * Each line is formatted into a local buffer and written with one call, so
 * lines from different worker threads never interleave.
 */
#ifndef SERVER_ACCESS_LOG_H
#define SERVER_ACCESS_LOG_H

#include <stdarg.h>
#include <stdint.h>

#include "config.h"

typedef struct access_entry {
    const char *method;
    const char *route; /* route path or "other", never the raw URL */
    int status;
    uint64_t duration_ns;
    uint64_t bytes_in;      /* request body bytes received */
    uint64_t bytes_out;     /* response body bytes */
    const char *request_id; /* printable, no spaces (see request_id.h) */
} access_entry;

/* text: `METHOD route status duration_ms bytes_in bytes_out request_id`
 * json: {"time":..,"method":..,"route":..,"status":..,"duration_ms":..,
 *        "bytes_in":..,"bytes_out":..,"request_id":..} */
void log_access(log_format fmt, const access_entry *e);

/* A server message at `level` ("info", "warn", "error").
 * text: `posenc: <level>: <message>`;
 * json: {"time":..,"level":..,"msg":..}, time in RFC 3339, UTC, with
 * microseconds ("2026-12-07T10:46:48.123456Z"), as on access lines. */
void log_msg(log_format fmt, const char *level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void log_vmsg(log_format fmt, const char *level, const char *format, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The line on stdout that tools wait for, once the server listens at url:
 * text: `posenc listening on <url>` alone; json: the same words as the msg
 * of an info line (so that with JSON logging stdout and stderr hold JSON
 * lines only). */
void log_listening(log_format fmt, const char *url);

#endif /* SERVER_ACCESS_LOG_H */

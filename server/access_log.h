/*
 * access_log.h - what the server writes on stderr: one line per finished
 * request, and startup/shutdown messages, as text or as JSON objects (one
 * per line) depending on --log-format.
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
 * json: {"method":..,"route":..,"status":..,"duration_ms":..,
 *        "bytes_in":..,"bytes_out":..,"request_id":..} */
void log_access(log_format fmt, const access_entry *e);

/* A server message at `level` ("info", "warn", "error").
 * text: `posenc: <level>: <message>`; json: {"level":..,"msg":..}. */
void log_msg(log_format fmt, const char *level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void log_vmsg(log_format fmt, const char *level, const char *format, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif /* SERVER_ACCESS_LOG_H */

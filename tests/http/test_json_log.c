/*
 * test_json_log.c - with --log-format json, everything the server writes
 * is a JSON line carrying its time:
 *
 *   stdout   the listening line is a JSON object {"time","level":"info",
 *            "msg":"posenc listening on http://127.0.0.1:PORT"} naming the
 *            port the server listens on;
 *   stderr   every line (startup, access lines, the drain) is a JSON
 *            object whose "time" is RFC 3339 in UTC with microseconds
 *            ("2026-12-07T10:46:48.123456Z"), between the test's clock
 *            before the server started and after it stopped.
 *
 * Seen to fail before: the stdout line was plain text, no line had a
 * time.
 */
#define _GNU_SOURCE /* timegm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests.h"

/* The wall clock in seconds. */
static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The seconds `stamp` says, when it is RFC 3339 in UTC with six digits of
 * fraction; -1 otherwise. */
static double rfc3339_utc(const char *stamp)
{
    struct tm tm = {0};
    long micros = -1;
    int used = 0;
    if (!stamp || strlen(stamp) != 27 ||
        sscanf(stamp, "%4d-%2d-%2dT%2d:%2d:%2d.%6ldZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &micros, &used) != 7 ||
        used != 27 || micros < 0)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (double)timegm(&tm) + (double)micros / 1e6;
}

/* Whether line is a JSON object whose time lies in [t0, t1] (a second of
 * slack each side); *obj gets it (new) when it parses. */
static bool timed_json(const char *line, size_t len, double t0, double t1, json_t **obj)
{
    json_error_t jerr;
    *obj = json_loadb(line, len, 0, &jerr);
    if (!json_is_object(*obj))
        return false;
    double t = rfc3339_utc(jstr(*obj, "time"));
    return t >= t0 - 1 && t <= t1 + 1;
}

static void listening_line(const server *s, double t0)
{
    const char *label = "--log-format json: the listening line on stdout";
    json_t *j = NULL;
    char want[96];
    snprintf(want, sizeof want, "posenc listening on http://127.0.0.1:%d", s->port);
    bool ok = timed_json(s->listening, strlen(s->listening), t0, wall_now(), &j);
    const char *level = jstr(j, "level"), *msg = jstr(j, "msg");
    CHECK(ok && level && strcmp(level, "info") == 0 && msg && strcmp(msg, want) == 0, label,
          "want {\"time\":<now>,\"level\":\"info\",\"msg\":\"%s\"}, got %s", want, s->listening);
    json_decref(j);
}

static void every_line_timed(const char *log, double t0, double t1)
{
    const char *label = "--log-format json: the log on stderr";
    size_t lines = 0, access = 0, bad = 0;
    char first_bad[200] = "";
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        json_t *j = NULL;
        /* Under valgrind its own report ("==PID== ...") shares stderr. */
        bool valgrind_line = under_valgrind() && len > 2 && p[0] == '=' && p[1] == '=';
        if (len > 0 && !valgrind_line) {
            lines++;
            if (!timed_json(p, len, t0, t1, &j) && bad++ == 0)
                snprintf(first_bad, sizeof first_bad, "%.*s", (int)(len < 150 ? len : 150), p);
            access += jstr(j, "request_id") != NULL;
        }
        json_decref(j);
        p += len + (nl ? 1 : 0);
    }
    CHECK(bad == 0, label, "%zu of %zu lines are no JSON object with a time now, e.g. %s", bad,
          lines, first_bad);
    CHECK(access == 2 && lines >= 6, label,
          "%zu access lines of %zu lines, want the 2 requests and the start and drain lines",
          access, lines);
}

void test_json_log(void)
{
    static const char *const args[] = {"--log-format", "json", NULL};
    double t0 = wall_now();
    server s;
    if (!server_start(&s, "json-log", args, NULL))
        return;
    listening_line(&s, t0);
    http_resp r;
    http_post_json(&s, "/encode", "{\"shape\":[2,4]}", &r);
    CHECK(r.status == 200, "json log: /encode", "%ld", r.status);
    http_resp_free(&r);
    http_post_json(&s, "/encode", "{bad", &r);
    CHECK(r.status == 400, "json log: a bad body", "%ld", r.status);
    http_resp_free(&r);
    server_stop(&s);
    char *log = server_read_log(&s);
    if (CHECK(log != NULL, "json log", "no log"))
        every_line_timed(log, t0, wall_now());
    free(log);
}

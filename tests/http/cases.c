/*
 * cases.c - the runner of http_case tables and of case directories
 * (cases.h; the format in tests/http/cases/README.md).
 */
#include "cases.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "METHOD route body", one line, for a case without a name. */
static void case_label(const http_case *c, char *buf, size_t n)
{
    if (c->name) {
        snprintf(buf, n, "%s", c->name);
        return;
    }
    snprintf(buf, n, "%s %s%s%.120s", c->method ? c->method : "POST", c->route, c->body ? " " : "",
             c->body ? c->body : "");
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

/* Every '|'-separated piece of c->msg_has in error.message: one check each. */
static void check_message(const char *label, const http_case *c, const http_resp *r)
{
    const char *m = jstr(json_object_get(r->json, "error"), "message");
    char want[256];
    snprintf(want, sizeof want, "%s", c->msg_has);
    char *save = NULL;
    for (char *tok = strtok_r(want, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
        CHECK(m && strstr(m, tok), label, "message should mention \"%s\": %s", tok,
              m ? m : "(none)");
}

static bool check_answer(const char *label, const http_case *c, const http_resp *r)
{
    long status = c->status ? c->status : 200;
    if (c->code) {
        bool ok = expect_error(label, r, status, c->code, c->field);
        if (ok && c->msg_has)
            check_message(label, c, r);
        return ok;
    }
    if (c->status_only)
        return CHECK_INT_EQ(label, r->status, status);
    return expect_ok(label, r);
}

bool run_http_case(const server *s, const http_case *c)
{
    char label[200];
    case_label(c, label, sizeof label);
    const char *ctype = NULL;
    if (c->body)
        ctype = !c->ctype ? "application/json" : *c->ctype ? c->ctype : NULL;
    http_resp r;
    http_request(s, c->method ? c->method : "POST", c->route, ctype, c->body,
                 c->body ? strlen(c->body) : 0, c->headers, c->chunked, &r);
    bool ok = check_answer(label, c, &r);
    if (c->header) {
        char value[256] = "";
        CHECK(http_header(&r, c->header, value, sizeof value) && strstr(value, c->header_has),
              label, "%s header \"%s\" should contain %s", c->header, value, c->header_has);
    }
    http_resp_free(&r);
    return ok;
}

void run_http_cases(const server *s, const http_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        run_http_case(s, &cases[i]);
}

/* ---------------------------------------------------------------------- */
/* Cases as data files                                                      */
/* ---------------------------------------------------------------------- */

enum { CASE_MAX_HEADERS = 8, CASE_MAX_BYTES = 1 << 24 };

/* A case read from its directory: the texts of its files (owned, cut into
 * lines in place) and the http_case that points into them. */
typedef struct file_case {
    char *request, *body, *expect;
    const char *headers[CASE_MAX_HEADERS + 1];
    char msg_has[256];
    char label[512];
    http_case c;
} file_case;

static void file_case_free(file_case *fc)
{
    free(fc->request);
    free(fc->body);
    free(fc->expect);
}

/* The whole file, NUL-terminated (malloc'd; *len its length), or NULL
 * when it does not exist or cannot be read (errno says which). */
static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1 || cap >= CASE_MAX_BYTES)
            break;
        buf = realloc(buf, cap *= 2);
        if (!buf) {
            fprintf(stderr, "out of memory reading %s\n", path);
            abort();
        }
    }
    bool bad = ferror(f) || n >= cap - 1;
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The next line of *cursor, without its "\r\n" or "\n" and trailing
 * blanks (cut in place), skipping blank lines; NULL at the end. */
static char *next_line(char **cursor)
{
    while (*cursor && **cursor) {
        char *line = *cursor, *end = strchr(line, '\n');
        *cursor = end ? end + 1 : NULL;
        if (end)
            *end = '\0';
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = '\0';
        if (n)
            return line;
    }
    return NULL;
}

/* "METHOD PATH", then header lines "Name: value". Content-Type: sets the
 * body's media type (empty: send none); Transfer-Encoding: chunked sends
 * the body chunked. NULL, or what is wrong. */
static const char *parse_request(file_case *fc)
{
    char *cursor = fc->request, *line = next_line(&cursor);
    char *sp = line ? strchr(line, ' ') : NULL;
    if (!sp || sp[1] != '/')
        return "request: the first line must be METHOD /path";
    *sp = '\0';
    fc->c.method = line;
    fc->c.route = sp + 1;
    size_t n = 0;
    while ((line = next_line(&cursor)) != NULL) {
        char *colon = strchr(line, ':');
        if (!colon || colon == line)
            return "request: a header line must be Name: value";
        size_t name_len = (size_t)(colon - line);
        const char *value = colon + 1;
        while (*value == ' ')
            value++;
        if (name_len == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
            fc->c.ctype = *value ? value : NO_CTYPE;
        } else if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
            if (strcasecmp(value, "chunked") != 0)
                return "request: Transfer-Encoding may only be chunked";
            fc->c.chunked = true;
        } else if (n == CASE_MAX_HEADERS) {
            return "request: too many header lines";
        } else {
            fc->headers[n++] = line;
        }
    }
    fc->headers[n] = NULL;
    fc->c.headers = n ? fc->headers : NULL;
    return NULL;
}

/* Lines "status N", "code C", "field F", "message TEXT" (repeatable),
 * "header NAME TEXT", "body any"; '#' starts a comment line. NULL, or what
 * is wrong. */
static const char *parse_expect(file_case *fc)
{
    char *cursor = fc->expect, *line;
    bool body_any = false;
    while ((line = next_line(&cursor)) != NULL) {
        if (line[0] == '#')
            continue;
        char *value = strchr(line, ' ');
        if (!value)
            return "expect: a line must be KEY VALUE";
        *value++ = '\0';
        while (*value == ' ')
            value++;
        if (strcmp(line, "status") == 0) {
            char *end;
            long st = strtol(value, &end, 10);
            if (*end || st < 100 || st > 599)
                return "expect: status must be a number from 100 to 599";
            fc->c.status = st;
        } else if (strcmp(line, "code") == 0) {
            fc->c.code = value;
        } else if (strcmp(line, "field") == 0) {
            fc->c.field = value;
        } else if (strcmp(line, "message") == 0) {
            size_t used = strlen(fc->msg_has);
            if (strchr(value, '|') || used + strlen(value) + 2 > sizeof fc->msg_has)
                return "expect: a message line holds no '|', and all of them < 255 bytes";
            snprintf(fc->msg_has + used, sizeof fc->msg_has - used, "%s%s", used ? "|" : "", value);
            fc->c.msg_has = fc->msg_has;
        } else if (strcmp(line, "header") == 0) {
            char *text = strchr(value, ' ');
            if (!text)
                return "expect: header NAME TEXT";
            *text++ = '\0';
            fc->c.header = value;
            fc->c.header_has = text;
        } else if (strcmp(line, "body") == 0 && strcmp(value, "any") == 0) {
            body_any = true;
        } else {
            return "expect: unknown line (status, code, field, message, header, body any)";
        }
    }
    if (!fc->c.status)
        return "expect: no status line";
    if (!fc->c.code && (fc->c.field || fc->c.msg_has))
        return "expect: field and message need a code";
    if (fc->c.code && body_any)
        return "expect: an error (code) is JSON; body any is for a status alone";
    if (!fc->c.code && !body_any && fc->c.status != 200)
        return "expect: without a code, the status is 200 (a JSON object) or body any is given";
    fc->c.status_only = body_any;
    return NULL;
}

/* Only the files of a case are in its directory (a misspelt one would be
 * ignored otherwise). NULL, or what is wrong. */
static const char *check_case_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return "cannot open the case directory";
    const char *bad = NULL;
    struct dirent *e;
    while (!bad && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "request") != 0 &&
            strcmp(e->d_name, "body") != 0 && strcmp(e->d_name, "expect") != 0)
            bad = "a file other than request, body and expect";
    closedir(d);
    return bad;
}

/* dir/name into buf; false when it does not fit. */
static bool path_join(char *buf, size_t n, const char *dir, const char *name)
{
    int w = snprintf(buf, n, "%s/%s", dir, name);
    return w >= 0 && (size_t)w < n;
}

/* Read the case in dir (named suite/name in labels). NULL, or what is wrong. */
static const char *load_case(const char *dir, const char *suite, const char *name, file_case *fc)
{
    char path[1024];
    size_t len = 0, body_len = 0;
    const char *bad = check_case_files(dir);
    if (bad)
        return bad;
    if (!path_join(path, sizeof path, dir, "request"))
        return "its path is too long";
    if (!(fc->request = read_whole(path, &len)))
        return "cannot read its request file";
    if (!path_join(path, sizeof path, dir, "expect"))
        return "its path is too long";
    if (!(fc->expect = read_whole(path, &len)))
        return "cannot read its expect file";
    if (!path_join(path, sizeof path, dir, "body"))
        return "its path is too long";
    fc->body = read_whole(path, &body_len);
    if (!fc->body && errno != ENOENT)
        return "cannot read its body file";
    if (fc->body && strlen(fc->body) != body_len)
        return "its body holds a NUL byte";
    fc->c.body = fc->body;
    if ((bad = parse_request(fc)) != NULL || (bad = parse_expect(fc)) != NULL)
        return bad;
    int w = snprintf(fc->label, sizeof fc->label, "%s/%s: %s %s%s%.80s", suite, name, fc->c.method,
                     fc->c.route, fc->body ? " " : "", fc->body ? fc->body : "");
    (void)w; /* a label may be cut short */
    for (char *p = fc->label; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fc->c.name = fc->label;
    return NULL;
}

/* Names that are not hidden (scandir filter). */
static int visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

size_t run_case_suite(const server *s, const char *suite)
{
    const char *root = getenv("POSENC_TEST_CASES");
    char dir[512], label[600];
    if (!path_join(dir, sizeof dir, root && *root ? root : "tests/http/cases", suite)) {
        CHECK_FAIL(suite, "the case directory's path is too long");
        return 0;
    }
    snprintf(label, sizeof label, "case suite %s", dir);
    struct dirent **names = NULL;
    int n = scandir(dir, &names, visible, alphasort);
    if (n < 0) {
        CHECK_FAIL(label, "cannot read it (%s; POSENC_TEST_CASES sets the root)", strerror(errno));
        return 0;
    }
    size_t ran = 0;
    for (int i = 0; i < n; i++) {
        char case_dir[1024];
        file_case fc = {0};
        const char *bad = path_join(case_dir, sizeof case_dir, dir, names[i]->d_name)
                              ? load_case(case_dir, suite, names[i]->d_name, &fc)
                              : "its path is too long";
        if (bad) {
            CHECK_FAIL(label, "%s: %s", names[i]->d_name, bad);
        } else {
            run_http_case(s, &fc.c);
            ran++;
        }
        file_case_free(&fc);
        free(names[i]);
    }
    free(names);
    CHECK(ran > 0, label, "holds no case");
    return ran;
}

/*
 * cases.c - the runner of http_case tables (cases.h).
 */
#include "cases.h"

#include <stdio.h>
#include <string.h>

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

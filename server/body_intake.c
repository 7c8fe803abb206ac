/*
 * body_intake.c - keeping or dropping a request body (see body_intake.h).
 */
#include "body_intake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "mem_budget.h"

/* The first buffer of a body; it doubles as the body arrives (up to its
 * declared length, when one is given). */
#define BODY_INITIAL_CAP ((size_t)16 * 1024)

/* How much of a body past --max-body-bytes is read and dropped so that the
 * client still gets its 413. MHD 0.9.75 cannot queue a response while a
 * body is arriving (only before it or after it), so a chunked body that
 * passes the limit is drained up to this much more, then answered; past
 * that the connection is closed without an answer. */
static uint64_t discard_allowance(size_t max)
{
    const uint64_t floor = (uint64_t)1 << 20;
    return (uint64_t)max > floor ? (uint64_t)max : floor;
}

/* A body is charged to the memory budget as its buffer grows to *cap,
 * whether or not its length was declared: a declared length holds nothing
 * before its bytes come. When the doubled *cap could never fit the budget
 * with what the body holds, only `need` bytes are asked for. When the
 * budget cannot give that now, the body is dropped and answered 503 once
 * it ends (mid-body is too late for any answer: libmicrohttpd 0.9.75 can
 * only answer before or after a body); when it never can (a chunked body
 * past the whole budget), 413 the same way. Returns whether the body may
 * grow. */
static bool charge_growth(http_request *req, size_t *cap, size_t need)
{
    mem_budget *budget = &req->srv->budget;
    if (*cap <= req->body_charged)
        return true;
    api_budget_answer a = mem_budget_reserve(budget, *cap - req->body_charged, req->body_charged);
    if (a == API_BUDGET_NEVER && need < *cap) {
        *cap = need;
        a = mem_budget_reserve(budget, need - req->body_charged, req->body_charged);
    }
    if (a == API_BUDGET_GRANTED) {
        req->body_charged = *cap;
        return true;
    }
    req_drop_body(req);
    req->refusal_never = a == API_BUDGET_NEVER;
    if (req->refusal_never)
        snprintf(req->refusal, sizeof req->refusal,
                 "the request body passes the whole memory budget of %zu bytes", budget->total);
    else
        snprintf(req->refusal, sizeof req->refusal,
                 "not enough of the memory budget (%zu bytes) is free for this body now; retry "
                 "shortly",
                 budget->total);
    req_set_state(req, REQ_REFUSED);
    return false;
}

/* Gives up on the body: the connection is closed, logged with status. */
static int give_up(http_request *req, int status, const char *code)
{
    req->status = status; /* for the log */
    req->error_code = code;
    conn_guard_linger(req->ce); /* the client is still sending */
    return MHD_NO;
}

/* Makes room for n more bytes: MHD_YES with room, MHD_YES without it when
 * the budget refused (now REQ_REFUSED), or MHD_NO when out of memory. The
 * buffer grows by doubling, up to the declared length (else max). */
static int make_room(http_request *req, size_t n, size_t max)
{
    if (n <= req->body_cap - req->body_len)
        return MHD_YES;
    if (req->body_declared > 0 && req->body_declared < max)
        max = req->body_declared;
    size_t cap = req->body_cap ? req->body_cap : BODY_INITIAL_CAP;
    if (cap > max)
        cap = max;
    if (n > max - req->body_len) /* past its declared length: cannot be */
        return give_up(req, MHD_HTTP_BAD_REQUEST, "invalid_request");
    while (cap - req->body_len < n)
        cap = cap > max / 2 ? max : cap * 2;
    if (!charge_growth(req, &cap, req->body_len + n))
        return MHD_YES; /* refused: dropped from here on */
    char *grown = realloc(req->body, cap);
    if (grown == NULL)
        return give_up(req, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable");
    req->body = grown;
    req->body_cap = cap;
    return MHD_YES;
}

int body_intake_receive(http_request *req, const char *data, size_t n)
{
    size_t max = req->srv->cfg.max_body_bytes;
    request_state st = req_get_state(req);

    req->bytes_in += n;
    if (st == REQ_ANSWERED || req->route == NULL || !req->route->json_body)
        return MHD_YES; /* answered early, or a body on a GET: drop it */
    if (st == REQ_REFUSED) {
        /* dropped until it ends, but not without end */
        if (req->bytes_in <= (uint64_t)max + discard_allowance(max))
            return MHD_YES;
        return give_up(req, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable");
    }
    if (st == REQ_RECEIVING && n > max - req->body_len) {
        req_drop_body(req);
        req_set_state(req, st = REQ_OVER_LIMIT);
    }
    if (st == REQ_OVER_LIMIT) {
        if (req->bytes_in - max <= discard_allowance(max))
            return MHD_YES;
        return give_up(req, MHD_HTTP_CONTENT_TOO_LARGE, "payload_too_large");
    }
    int r = make_room(req, n, max);
    if (r != MHD_YES || req_get_state(req) != REQ_RECEIVING)
        return r;
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    return MHD_YES;
}

/*
 * answer.c - answers written whole or streamed (see answer.h).
 */
#include "answer.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "respond.h"
#include "service.h"

struct answer_segment {
    strbuf text; /* owned: literal text, when !is_array */
    bool is_array;
    array_view view; /* borrowed data (the answer owns it); NULL when generated */
    bool base64;
    answer_rows gen; /* owned state: rows made as they are written */
};

int reservation_grow(reservation *r, const api_budget *budget, size_t bytes, api_error *err)
{
    if (!budget || !budget->reserve)
        return 0;
    size_t own = r->budget.reserve ? r->bytes : 0;
    size_t held = budget->held + own;
    switch (budget->reserve(budget->owner, bytes, held)) {
    case API_BUDGET_GRANTED:
        r->budget = *budget;
        r->bytes = own + bytes;
        return 0;
    case API_BUDGET_BUSY:
        return api_fail(err, API_E_UNAVAILABLE, NULL,
                        "the server's memory budget is in use (this request needs %zu bytes); "
                        "retry later",
                        own + bytes);
    default:
        return api_fail(err, API_E_TOO_LARGE, NULL,
                        "this request needs %zu bytes (%zu of them for its body), more than the "
                        "server's whole memory budget",
                        held + bytes, budget->held);
    }
}

int reservation_take(reservation *r, const api_budget *budget, size_t bytes, api_error *err)
{
    *r = (reservation){0};
    return reservation_grow(r, budget, bytes, err);
}

void reservation_shrink(reservation *r, size_t bytes)
{
    if (bytes > r->bytes)
        bytes = r->bytes;
    if (r->budget.release && bytes > 0)
        r->budget.release(r->budget.owner, bytes);
    r->bytes -= bytes;
}

void reservation_release(reservation *r)
{
    reservation_shrink(r, r->bytes);
    *r = (reservation){0};
}

size_t stream_min_bytes(const api_service *svc)
{
    return svc->limits.stream_min_bytes;
}

/* A window of a streamed answer: written by the team of the thread that
 * computed the request, in bigger windows when that team has several
 * threads (S4's 5.6 MB of JSON text took 13 ms on one thread). */
static int stream_team(void)
{
    return omp_get_max_threads();
}

static size_t window_bytes(int team)
{
    return team > 1 ? ANSWER_TEAM_WINDOW_BYTES : ANSWER_WINDOW_BYTES;
}

size_t answer_held_bytes(const api_service *svc, size_t text)
{
    /* streamed: the window and the strbuf's room to grow past it; with a
     * team, also its chunks' buffers (another window) and generated rows */
    if (text < stream_min_bytes(svc))
        return text;
    int team = stream_team();
    return (team > 1 ? 4 : 2) * window_bytes(team);
}

void answer_init(answer *a)
{
    memset(a, 0, sizeof *a);
    a->sink.failed = true;
}

void answer_free(answer *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        strbuf_free(&a->segments[i].text);
        if (a->segments[i].gen.free_state)
            a->segments[i].gen.free_state(a->segments[i].gen.state);
    }
    free(a->segments);
    for (size_t i = 0; i < a->n_owned; i++)
        free(a->owned[i]);
    reservation_release(&a->held);
    answer_init(a);
}

static answer_segment *add_segment(answer *a)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        answer_segment *grown = realloc(a->segments, cap * sizeof *grown);
        if (!grown) {
            a->failed = true;
            return NULL;
        }
        a->segments = grown;
        a->cap = cap;
    }
    answer_segment *s = &a->segments[a->n++];
    memset(s, 0, sizeof *s);
    return s;
}

strbuf *answer_text(answer *a)
{
    if (a->n && !a->segments[a->n - 1].is_array)
        return &a->segments[a->n - 1].text;
    answer_segment *s = add_segment(a);
    return s ? &s->text : &a->sink;
}

void answer_array(answer *a, const char *name, const array_view *v, bool base64)
{
    strbuf *sb = answer_text(a);
    strbuf_put_json_string(sb, name);
    strbuf_putc(sb, ':');
    answer_segment *s = add_segment(a);
    if (!s)
        return;
    s->is_array = true;
    s->view = *v;
    s->base64 = base64;
    if (!base64)
        return;
    sb = answer_text(a);
    strbuf_printf(sb, ",\"%s_shape\":[", name);
    for (size_t i = 0; i < v->ndim; i++)
        strbuf_printf(sb, "%s%zu", i ? "," : "", v->dim[i]);
    strbuf_putc(sb, ']');
}

void answer_generated(answer *a, const char *name, const array_view *shape, bool base64,
                      answer_rows gen)
{
    size_t before = a->n;

    answer_array(a, name, shape, base64);
    for (size_t i = a->n; i-- > before;)
        if (a->segments[i].is_array) {
            a->segments[i].gen = gen;
            return;
        }
    if (gen.free_state) /* the array segment could not be added */
        gen.free_state(gen.state);
}

void answer_own(answer *a, void *p)
{
    if (!p)
        return;
    if (a->n_owned == sizeof a->owned / sizeof a->owned[0]) {
        free(p);
        a->failed = true;
        return;
    }
    a->owned[a->n_owned++] = p;
}

size_t answer_bound(const answer *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        n += a->segments[i].is_array ? array_text_bound(&a->segments[i].view, a->segments[i].base64)
                                     : a->segments[i].text.len;
    return n;
}

/* ---- streaming --------------------------------------------------------- */

typedef struct answer_stream {
    answer a;       /* owned */
    strbuf window;  /* owned: text written, not yet read */
    float *scratch; /* owned: a window of generated rows, scratch_len floats */
    size_t scratch_len;
    size_t sent; /* of window */
    size_t segment, row;
    int team; /* threads that write a window */
} answer_stream;

/* Rows of one window of the array's text. */
static size_t rows_per_window(const answer_segment *s, int team)
{
    size_t cols = s->view.dim[s->view.ndim - 1], bytes = window_bytes(team);
    if (s->base64) {
        size_t rows = bytes * 3 / 4 / (cols * sizeof(float));
        return rows < 3 ? 3 : rows / 3 * 3;
    }
    size_t rows = bytes / (cols * 16 + 8);
    return rows ? rows : 1;
}

/* Write the next piece of the answer into the window; false at the end. */
static bool refill(answer_stream *st)
{
    st->window.len = 0;
    st->sent = 0;
    while (st->segment < st->a.n) {
        const answer_segment *s = &st->a.segments[st->segment];
        if (!s->is_array) {
            strbuf_put(&st->window, s->text.data, s->text.len);
            st->segment++;
            if (st->window.len)
                return true;
            continue;
        }
        size_t rows = array_rows(&s->view);
        if (st->row >= rows) {
            st->segment++;
            st->row = 0;
            continue;
        }
        size_t per = rows_per_window(s, st->team), end = st->row + per;
        if (end > rows)
            end = rows;
        if (s->gen.fill) {
            size_t cols = s->view.dim[s->view.ndim - 1];
            if (st->scratch_len < per * cols) {
                free(st->scratch);
                st->scratch = malloc(per * cols * sizeof *st->scratch);
                st->scratch_len = st->scratch ? per * cols : 0;
            }
            if (!st->scratch) {
                st->window.failed = true;
                return true;
            }
            s->gen.fill(s->gen.state, st->row, end, st->scratch);
            array_write_rows_at(&st->window, &s->view, s->base64, st->row, end, st->scratch,
                                st->team);
        } else {
            array_write_rows(&st->window, &s->view, s->base64, st->row, end, st->team);
        }
        st->row = end;
        return true;
    }
    return false;
}

static size_t stream_read(void *state, char *buf, size_t cap)
{
    answer_stream *st = state;
    size_t n = 0;

    while (n < cap) {
        if (st->sent == st->window.len && !refill(st))
            break;
        if (st->window.failed)
            return API_STREAM_FAILED;
        size_t take = st->window.len - st->sent;
        if (take > cap - n)
            take = cap - n;
        memcpy(buf + n, st->window.data + st->sent, take);
        st->sent += take;
        n += take;
    }
    return n;
}

static void stream_free(void *state)
{
    answer_stream *st = state;

    if (!st)
        return;
    answer_free(&st->a);
    strbuf_free(&st->window);
    free(st->scratch);
    free(st);
}

/* ---- the whole text -------------------------------------------------- */

static int respond_whole(answer *a, api_response *out, size_t tokens, api_error *err)
{
    strbuf sb = {0};

    /* The bound at once (under stream_min_bytes, so at most 1 MiB by
     * default): doubling from 256 bytes took S1's 11 kB answer six reallocs,
     * copies and turns of the shared malloc lock. */
    strbuf_reserve(&sb, answer_bound(a));

    for (size_t i = 0; i < a->n; i++) {
        const answer_segment *s = &a->segments[i];
        if (!s->is_array) {
            strbuf_put(&sb, s->text.data, s->text.len);
            continue;
        }
        if (!s->gen.fill) {
            array_write_value(&sb, &s->view, s->base64);
            continue;
        }
        size_t rows = array_rows(&s->view), cols = s->view.dim[s->view.ndim - 1];
        float *values = malloc(rows * cols * sizeof *values);
        if (!values) {
            sb.failed = true;
            break;
        }
        s->gen.fill(s->gen.state, 0, rows, values);
        array_view v = s->view;
        v.data = values;
        array_write_value(&sb, &v, s->base64);
        free(values);
    }
    answer_free(a);
    return respond_json(out, &sb, tokens, err);
}

int answer_respond(answer *a, api_response *out, size_t tokens, size_t stream_min, api_error *err)
{
    for (size_t i = 0; i < a->n; i++)
        a->failed |= a->segments[i].text.failed;
    if (a->failed) {
        answer_free(a);
        return api_fail_oom(err);
    }
    if (answer_bound(a) < stream_min)
        return respond_whole(a, out, tokens, err);
    answer_stream *st = calloc(1, sizeof *st);
    if (!st) {
        answer_free(a);
        return api_fail_oom(err);
    }
    st->a = *a;
    st->team = stream_team();
    answer_init(a);
    free(out->body);
    out->body = NULL;
    out->body_len = 0;
    out->status = 200;
    out->content_type = "application/json";
    out->tokens = tokens;
    out->stream = (api_body_stream){.state = st, .read = stream_read, .free = stream_free};
    return 0;
}

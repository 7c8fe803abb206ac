/*
 * answer.h - the text of a successful /encode or /apply answer, kept as
 * segments (literal text, result arrays) until it is sent: written into
 * one buffer when small, streamed a bounded window at a time when large
 * (`{"shape":[65536,1024]}` must not hold 740 MB of
 * text). Both ways give the same bytes. Also the request's share of the
 * server's memory budget, reserved after the plan and released when the
 * answer is gone.
 */
#ifndef ANSWER_H
#define ANSWER_H

#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "json/array_writer.h"
#include "json/strbuf.h"

/* Answers whose text may pass this are streamed (api_limits.stream_min_bytes
 * 0 takes it). */
#define ANSWER_STREAM_MIN_BYTES ((size_t)1 << 20)

/* What a request holds of the budget (budget NULL: no budget). */
typedef struct reservation {
    api_budget budget; /* a copy of the request's (a streamed answer outlives
                          the call that took it); zeroed when empty */
    size_t bytes;
} reservation;

/* Reserve `bytes` of budget (NULL: granted) into the empty *r: 0, or -1
 * with 503 unavailable (busy now) or 422 too_large (more than the whole
 * budget, counting what the request holds outside the api: budget->held). */
int reservation_take(reservation *r, const api_budget *budget, size_t bytes, api_error *err);

/* Reserve `bytes` more into *r (empty or of the same budget), counting
 * what r holds already as the request's own: past the whole budget with
 * them it is 422 too_large, never a 503 to retry. 0, or -1 as
 * reservation_take (r then keeps what it held). */
int reservation_grow(reservation *r, const api_budget *budget, size_t bytes, api_error *err);

/* Give back `bytes` of what r holds (at most all of it). */
void reservation_shrink(reservation *r, size_t bytes);

/* Give the bytes back (once; accepts an empty reservation). */
void reservation_release(reservation *r);

typedef struct answer_segment answer_segment;

typedef struct answer {
    answer_segment *segments; /* owned */
    size_t n, cap;
    void *owned[6]; /* owned: the buffers the arrays point into */
    size_t n_owned;
    reservation held; /* released with the answer */
    bool failed;      /* an allocation failed while building */
    strbuf sink;      /* failed: what answer_text gives after that */
} answer;

void answer_init(answer *a);

/* Frees everything the answer owns and releases its reservation; accepts
 * an empty answer. */
void answer_free(answer *a);

/* The text segment at the end, to append literal text to with strbuf_*
 * (a new one after an array); valid until the next answer_* call. After
 * an allocation failure, a failed buffer that takes nothing (the answer
 * is then failed: answer_respond says so). Never NULL. */
strbuf *answer_text(answer *a);

/* Append `"name":<array>` (and `,"name_shape":[...]` for base64); the
 * view's data must stay valid while the answer lives (answer_own it). */
void answer_array(answer *a, const char *name, const array_view *v, bool base64);

/* Rows made when they are written: fill() writes rows [r0, r1) of the
 * array (each of its last dimension) at out, and cannot fail. */
typedef struct answer_rows {
    void *state; /* owned: freed by free_state with the answer */
    void (*fill)(void *state, size_t r0, size_t r1, float *out);
    void (*free_state)(void *state);
} answer_rows;

/* answer_array() for an array of shape->dim (shape->data unused, dense)
 * whose rows come from gen, a window at a time when streamed: a large bare
 * table then costs a window, not its values. Takes gen's state even on
 * failure. */
void answer_generated(answer *a, const char *name, const array_view *shape, bool base64,
                      answer_rows gen);

/* The answer frees p (malloc'd) when it is freed; steals p even on
 * failure. */
void answer_own(answer *a, void *p);

/* An upper bound of the answer's bytes. */
size_t answer_bound(const answer *a);

/* Bytes of text the answer holds at once when streamed: a window, written
 * by the calling thread alone, or by the OpenMP team of the thread that
 * computed the request when it has more than one thread (a bigger window,
 * so that each thread gets a useful share of it). */
#define ANSWER_WINDOW_BYTES ((size_t)64 << 10)
#define ANSWER_TEAM_WINDOW_BYTES ((size_t)1 << 20)

/* The service's streaming threshold. */
size_t stream_min_bytes(const api_service *svc);

/* What an answer of at most `text` bytes holds at once: all of it when
 * written whole, a window when streamed. */
size_t answer_held_bytes(const api_service *svc, size_t text);

/* Fill *out with the 200 answer: one buffer when answer_bound() is below
 * stream_min, else out->stream. Takes over *a (its buffers and its
 * reservation) in both cases, even on failure; -1 with *err on allocation
 * failure. */
int answer_respond(answer *a, api_response *out, size_t tokens, size_t stream_min, api_error *err);

#endif /* ANSWER_H */

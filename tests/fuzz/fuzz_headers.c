/*
 * fuzz_headers.c - libFuzzer harness over the checks a request's header
 * section passes before posenc reads its body (server/framing.c,
 * server/header_syntax.c): pure functions over the headers as received.
 *
 * The input is read as header lines, "name: value" separated by LF (a line
 * without a colon is a name with an empty value; the first byte's low bit
 * says HTTP/1.1). They are laid out as libmicrohttpd 0.9.75 leaves its
 * header block (framing.h): each name, a NUL where its colon was, the
 * value, its line end as one or two NULs (the second byte's low bit says
 * CR LF), then the next name. Any crash or sanitizer report fails the run,
 * and so does a broken promise of the readers:
 * - framing_find_nul finds no NUL in a block laid out without one, and
 *   finds the header whose value a NUL cut ("Bearer KEY\0junk") whenever
 *   it is not the last one and the layout tells it from a line end (a
 *   value ending in its NUL before a bare LF reads as a CR LF line end);
 * - framing_check_tail says TAIL_OK after a well-formed block.
 *
 *   make fuzz FUZZ_SECONDS=60
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "framing.h"
#include "header_syntax.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_HEADERS = 64 };

/* The block as libmicrohttpd lays it out, with the header list over it.
 * cut: the index of the header whose value holds the input's first NUL
 * (n when none does); the value then reads only up to that NUL. */
typedef struct laid_out {
    char *block; /* owned */
    size_t block_len;
    framing_header h[MAX_HEADERS];
    size_t n, cut;
    size_t cut_tail;           /* bytes of the cut value after its first NUL */
    const char *last_line_end; /* the NUL ending the last value */
} laid_out;

static void lay_out(const uint8_t *text, size_t size, bool crlf, laid_out *out)
{
    size_t width = crlf ? 2 : 1;
    char *p;

    memset(out, 0, sizeof *out);
    /* every byte, plus one line end and a NUL a line, plus the empty line */
    out->block = malloc(size * (width + 2) + 2 * width + 1);
    if (!out->block)
        abort();
    p = out->block;
    out->cut = MAX_HEADERS;
    for (size_t i = 0; i < size && out->n < MAX_HEADERS;) {
        size_t end = i;
        while (end < size && text[end] != '\n')
            end++;
        size_t colon = i;
        while (colon < end && text[colon] != ':')
            colon++;
        framing_header *h = &out->h[out->n];
        h->name = p;
        memcpy(p, text + i, colon - i);
        p += colon - i;
        *p++ = '\0';
        size_t vstart = colon < end ? colon + 1 : end;
        h->value = p;
        const uint8_t *nul = memchr(text + vstart, '\0', end - vstart);
        if (nul && out->cut == MAX_HEADERS) {
            out->cut = out->n;
            out->cut_tail = (size_t)(text + end - nul) - 1;
        }
        memcpy(p, text + vstart, end - vstart);
        p += end - vstart;
        out->last_line_end = p;
        memset(p, '\0', width);
        p += width;
        out->n++;
        i = end + 1;
    }
    memset(p, '\0', width); /* the empty line */
    p += width;
    out->block_len = (size_t)(p - out->block);
    if (out->cut == MAX_HEADERS)
        out->cut = out->n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    laid_out l;
    size_t at = 0;

    if (size < 2)
        return 0;
    bool http11 = data[0] & 1, crlf = data[1] & 1;
    lay_out(data + 2, size - 2, crlf, &l);
    (void)framing_message(framing_check(l.h, l.n));
    (void)header_syntax_message(header_syntax_check(l.h, l.n, http11, &at));
    if (at > l.n)
        abort();
    size_t found = framing_find_nul(l.h, l.n);
    if (found > l.n)
        abort();
    if (l.cut == l.n && found != l.n)
        abort(); /* no NUL was laid out, yet one was reported */
    if (l.cut + 1 < l.n && (l.cut_tail > 0 || crlf) && found != l.cut)
        abort(); /* a value cut by a NUL before the last header went unseen */
    if (l.n) {
        framing_tail tail = framing_check_tail(l.last_line_end, l.block, l.block + l.block_len,
                                               crlf ? 2 : 1);
        if (l.cut == l.n && tail != TAIL_OK)
            abort();
    }
    free(l.block);
    return 0;
}

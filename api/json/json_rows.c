/*
 * json_rows.c - parallel parsing of big numeric JSON arrays (json_rows.h).
 */
#include "json/json_rows.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_number.h"

typedef struct row_span {
    size_t start, end; /* the numbers of one innermost row; end is its ']' */
} row_span;

typedef struct row_map {
    const char *text;
    size_t len, pos;
    size_t ndim;
    size_t dim[JSON_ARRAY_MAX_NDIM];
    bool dim_known[JSON_ARRAY_MAX_NDIM];
    row_span *rows; /* owned */
    size_t n_rows, cap_rows;
    const json_charge *charge; /* asked before rows grows */
    size_t charged;            /* what rows holds of it */
    bool refused;              /* charge refused the index */
} row_map;

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static void skip_ws(row_map *m)
{
    while (m->pos < m->len && is_space(m->text[m->pos]))
        m->pos++;
}

static bool add_row(row_map *m, size_t start, size_t end)
{
    if (m->n_rows == m->cap_rows) {
        size_t cap = m->cap_rows ? 2 * m->cap_rows : 256;
        size_t more = (cap - m->cap_rows) * sizeof *m->rows;
        if (!json_charge_take(m->charge, more)) {
            m->refused = true;
            return false;
        }
        m->charged += more;
        row_span *grown = realloc(m->rows, cap * sizeof *grown);
        if (!grown)
            return false;
        m->rows = grown;
        m->cap_rows = cap;
    }
    m->rows[m->n_rows++] = (row_span){start, end};
    return true;
}

/* The array at m->pos, at nesting depth `depth`: brackets and commas only. */
static bool map_array(row_map *m, size_t depth)
{
    size_t n = 0;

    if (depth >= JSON_ARRAY_MAX_NDIM || m->pos >= m->len || m->text[m->pos] != '[')
        return false;
    m->pos++;
    skip_ws(m);
    if (m->pos >= m->len || m->text[m->pos] == ']')
        return false;
    if (m->text[m->pos] != '[') { /* an innermost row: numbers up to ']' */
        if (m->ndim == 0)
            m->ndim = depth + 1;
        if (m->ndim != depth + 1)
            return false;
        const char *close = memchr(m->text + m->pos, ']', m->len - m->pos);
        if (!close || !add_row(m, m->pos, (size_t)(close - m->text)))
            return false;
        m->pos = (size_t)(close - m->text) + 1;
        return true; /* its length is checked when it is parsed */
    }
    for (;;) {
        if (m->ndim != 0 && depth + 1 >= m->ndim)
            return false;
        if (!map_array(m, depth + 1))
            return false;
        n++;
        skip_ws(m);
        if (m->pos >= m->len)
            return false;
        char c = m->text[m->pos++];
        if (c == ']')
            break;
        if (c != ',')
            return false;
        skip_ws(m);
    }
    if (!m->dim_known[depth]) {
        m->dim_known[depth] = true;
        m->dim[depth] = n;
    }
    return m->dim[depth] == n;
}

/* Parse "n, n, ..., n" in text[start, end) into out[0 .. cap); returns the
 * count, or SIZE_MAX if the text is anything else or holds more than cap
 * numbers or a non-finite one. */
static size_t parse_row(const char *text, size_t start, size_t end, float *out, size_t cap)
{
    const char *p = text + start, *stop = text + end;
    size_t n = 0;

    for (;;) {
        while (p < stop && is_space(*p))
            p++;
        if (n == cap)
            return SIZE_MAX;
        p = json_number_to_float(p, stop, &out[n]);
        if (!p || !isfinite(out[n]))
            return SIZE_MAX;
        n++;
        while (p < stop && is_space(*p))
            p++;
        if (p == stop)
            return n;
        if (*p++ != ',')
            return SIZE_MAX;
    }
}

bool json_rows_parse(const char *text, size_t len, size_t start, size_t header,
                     const json_charge *charge, json_rows_result *out)
{
    static const json_charge free_of_charge = {0};
    row_map m = {.text = text,
                 .len = len,
                 .pos = start,
                 .charge = charge ? charge : &free_of_charge};
    char *block = NULL;
    size_t block_charged = 0;
    bool ok = false;

    out->refused = false;
    out->index_refused = false;
    if (!map_array(&m, 0) || m.n_rows == 0) {
        out->index_refused = m.refused;
        goto done;
    }
    /* The first row gives the row length: its commas (numbers hold none)
     * say it before anything is parsed, so the values go straight into
     * their block, allocated once. */
    size_t cols = 1, count = 0;
    for (const char *p = text + m.rows[0].start, *end = text + m.rows[0].end;
         (p = memchr(p, ',', (size_t)(end - p))) != NULL; p++)
        cols++;
    if (cols > JSON_ARRAY_MAX_ELEMENTS / m.n_rows)
        goto done;
    count = cols * m.n_rows;
    if (!json_charge_take(m.charge, header + count * sizeof(float))) {
        out->refused = true;
        goto done;
    }
    block_charged = header + count * sizeof(float);
    block = malloc(header + count * sizeof(float));
    if (!block)
        goto done;
    float *values = (float *)(void *)(block + header);
    if (parse_row(text, m.rows[0].start, m.rows[0].end, values, cols) != cols)
        goto done;
    int bad = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(| : bad)
    for (size_t r = 1; r < m.n_rows; r++)
        bad |= parse_row(text, m.rows[r].start, m.rows[r].end, values + r * cols, cols) != cols;
    if (bad)
        goto done;
    out->ndim = m.ndim;
    memcpy(out->dim, m.dim, sizeof m.dim);
    out->dim[m.ndim - 1] = cols;
    out->block = block;
    out->count = count;
    out->end = m.pos;
    block = NULL;
    block_charged = 0; /* handed over with the block */
    ok = true;
done:
    free(block);
    free(m.rows);
    json_charge_give(m.charge, m.charged + block_charged);
    return ok;
}

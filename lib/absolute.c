/*
 * absolute.c - the input stage of attention: embed_scale*x + PE (sinusoidal
 * or learned) + an optional constant vector, through up to two norms,
 * rounded to float32 once per element.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Everything one row needs, read-only and shared by the threads. */
typedef struct abs_job {
    const pe_absolute *pe; /* NULL: nothing added */
    const double *freqs;   /* sinusoidal frequencies, else unused */
    const float *add;      /* [d] or NULL */
    const pe_norm *pre_norm;
    const pe_norm *norm;
    double embed_scale;
    const float *x;
    const int64_t *positions;
    size_t d;
    float *out;
} abs_job;

/* Computes row r into the scratch z[d] and writes it rounded; returns the
 * first column whose float32 value is not finite, or SIZE_MAX. */
static size_t encode_row(const abs_job *job, size_t r, double *z)
{
    size_t d = job->d;
    int64_t p = job->positions[r];
    const float *xrow = job->x ? job->x + r * d : NULL;
    float *orow = job->out + r * d;

    switch (job->pe ? job->pe->kind : PE_ABS_NONE) {
    case PE_ABS_SINUSOIDAL:
        if ((uint64_t)p < job->pe->cache_rows)
            memcpy(z, job->pe->cache + (size_t)p * d, d * sizeof *z);
        else
            pe_sinusoidal_row_freqs(job->freqs, job->pe->layout, p, d, z);
        break;
    case PE_ABS_LEARNED: {
        const float *trow = job->pe->table + (size_t)p * d;
        for (size_t j = 0; j < d; j++)
            z[j] = trow[j];
        break;
    }
    case PE_ABS_NONE:
        for (size_t j = 0; j < d; j++)
            z[j] = 0.0;
        break;
    }
    if (xrow)
        for (size_t j = 0; j < d; j++)
            z[j] += job->embed_scale * (double)xrow[j];
    if (job->add)
        for (size_t j = 0; j < d; j++)
            z[j] += (double)job->add[j];

    /* Both norms work on the unrounded double row. */
    pe_norm_row(job->pre_norm, z, d, z);
    pe_norm_row(job->norm, z, d, z);

    /* Reading x[r] is over before out[r] is written, so out may alias x. */
    size_t bad = SIZE_MAX;
    for (size_t j = 0; j < d; j++) {
        orow[j] = (float)z[j];
        if (bad == SIZE_MAX && !isfinite(orow[j]))
            bad = j;
    }
    return bad;
}

/* encode_row, its first non-finite value as an index into the whole
 * output (r * d + column), or SIZE_MAX. */
static size_t encode_row_flat(const abs_job *job, size_t r, double *z)
{
    size_t j = encode_row(job, r, z);
    return j == SIZE_MAX ? SIZE_MAX : r * job->d + j;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The first row whose position is past the learned table, or SIZE_MAX. */
static size_t first_out_of_table(const pe_absolute *pe, const int64_t *positions, size_t n)
{
    for (size_t r = 0; r < n; r++)
        if (positions[r] < 0 || (uint64_t)positions[r] >= pe->table_rows)
            return r;
    return SIZE_MAX;
}

pe_status pe_encode_absolute(const pe_absolute *pe, const pe_norm *norm, double embed_scale,
                             const float *x, const int64_t *positions, size_t n, size_t d,
                             float *out, size_t *bad_index)
{
    pe_input in = {.pe = pe, .embed_scale = embed_scale, .norm = norm};
    return pe_encode_input(&in, x, positions, n, d, out, bad_index);
}

pe_status pe_encode_input(const pe_input *in, const float *x, const int64_t *positions, size_t n,
                          size_t d, float *out, size_t *bad_index)
{
    const pe_absolute *pe = in->pe;
    pe_absolute_kind kind = pe ? pe->kind : PE_ABS_NONE;
    abs_job job = {.pe = pe,
                   .add = in->add,
                   .pre_norm = in->pre_norm,
                   .norm = in->norm,
                   .embed_scale = in->embed_scale,
                   .x = x,
                   .positions = positions,
                   .d = d,
                   .out = out};
    size_t nf = (d + 1) / 2;
    double *scratch = NULL;
    pe_status status = PE_OK;

    if (n == 0 || d == 0)
        return PE_OK;
    if (kind == PE_ABS_SINUSOIDAL && !(pe->base > 0.0 && isfinite(pe->base)))
        return PE_EINVAL;
    if (kind == PE_ABS_LEARNED) {
        if (!pe->table && pe->table_rows > 0)
            return PE_EINVAL;
        size_t r = first_out_of_table(pe, positions, n);
        if (r != SIZE_MAX) {
            if (bad_index)
                *bad_index = r;
            return PE_ERANGE;
        }
    }

    /* One block: the frequencies, then a row of d doubles per thread. The
     * team is fixed here so that thread numbers index the rows safely. */
    int team = n * d >= PE_PARALLEL_MIN_WORK ? omp_get_max_threads() : 1;
    size_t rows_len, bytes;
    if (team < 1)
        team = 1;
    if (__builtin_mul_overflow((size_t)team, d, &rows_len) || rows_len > SIZE_MAX - nf ||
        __builtin_mul_overflow(rows_len + nf, sizeof *scratch, &bytes))
        return PE_ENOMEM;
    scratch = malloc(bytes);
    if (!scratch)
        return PE_ENOMEM;
    if (kind == PE_ABS_SINUSOIDAL) {
        pe_sinusoidal_freqs(pe->base, d, scratch);
        job.freqs = scratch;
    }
    double *rows = scratch + nf;

    /* Every row is computed even after a failure so that the reported index
     * is the smallest one, whatever the schedule. */
    size_t first_bad = SIZE_MAX;
    if (team == 1) {
        /* No parallel region for one thread: even a team of one costs
         * libgomp a team allocation and a futex wake at its barrier, which
         * under S1 was most of the server's futex calls. */
        for (size_t r = 0; r < n; r++)
            first_bad = min_size(first_bad, encode_row_flat(&job, r, rows));
    } else {
#pragma omp parallel for num_threads(team) schedule(static) reduction(min : first_bad)
        for (size_t r = 0; r < n; r++)
            first_bad = min_size(first_bad,
                                 encode_row_flat(&job, r, rows + (size_t)omp_get_thread_num() * d));
    }

    if (first_bad != SIZE_MAX) {
        status = PE_ENONFINITE;
        if (bad_index)
            *bad_index = first_bad;
    }
    free(scratch);
    return status;
}

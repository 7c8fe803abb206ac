/*
 * sinusoidal.c - rows of the sinusoidal table (Vaswani et al.), interleaved
 * or split, in double precision.
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

double pe_inv_freq(double base, size_t i, size_t d)
{
    return 1.0 / pow(base, (double)(2 * i) / (double)d);
}

void pe_sinusoidal_freqs(double base, size_t d, double *w)
{
    size_t nf = (d + 1) / 2;

    for (size_t i = 0; i < nf; i++)
        w[i] = pe_inv_freq(base, i, d);
}

/* Frequency i owns columns (2i, 2i+1) interleaved, (i, ceil(d/2)+i) split.
 * With an odd d the last frequency has a sine column only. */
static void place(pe_sin_layout layout, size_t d, size_t i, double theta, double *row)
{
    size_t nf = (d + 1) / 2;
    size_t sin_col = layout == PE_SIN_SPLIT ? i : 2 * i;
    size_t cos_col = layout == PE_SIN_SPLIT ? nf + i : 2 * i + 1;

    row[sin_col] = sin(theta);
    if (cos_col < d)
        row[cos_col] = cos(theta);
}

void pe_sinusoidal_row_freqs(const double *w, pe_sin_layout layout, int64_t position, size_t d,
                             double *row)
{
    double p = (double)position;
    size_t nf = (d + 1) / 2;

    for (size_t i = 0; i < nf; i++)
        place(layout, d, i, p * w[i], row);
}

void pe_sinusoidal_row(double base, pe_sin_layout layout, int64_t position, size_t d, double *row)
{
    double p = (double)position;
    size_t nf = (d + 1) / 2;

    for (size_t i = 0; i < nf; i++)
        place(layout, d, i, p * pe_inv_freq(base, i, d), row);
}

void pe_sinusoidal_table(double base, pe_sin_layout layout, size_t d, size_t n, double *rows)
{
    double *freqs = malloc((d + 1) / 2 * sizeof *freqs);

    if (!freqs) { /* no room for the frequencies: compute them per element */
        for (size_t p = 0; p < n; p++)
            pe_sinusoidal_row(base, layout, (int64_t)p, d, rows + p * d);
        return;
    }
    pe_sinusoidal_freqs(base, d, freqs);
#pragma omp parallel for schedule(static) if (n * d >= PE_PARALLEL_MIN_WORK)
    for (size_t p = 0; p < n; p++)
        pe_sinusoidal_row_freqs(freqs, layout, (int64_t)p, d, rows + p * d);
    free(freqs);
}

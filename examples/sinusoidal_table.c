/*
 * sinusoidal_table.c - libposenc from a C program: the sinusoidal encoding
 * of positions 0..3 in 8 dimensions (Vaswani et al.), one value a line.
 *
 *   cc sinusoidal_table.c $(pkg-config --cflags --libs posenc) -o sinusoidal_table
 *
 * Prints "version V", "status S", then "P I VALUE" for position P and
 * dimension I (tests/libposenc/run.sh checks them against awk's sin and
 * cos).
 */
#include <stdint.h>
#include <stdio.h>

#include <posenc.h>

enum { POSITIONS = 4, DIM = 8 };

int main(void)
{
    int64_t positions[POSITIONS] = {0, 1, 2, 3};
    float table[POSITIONS * DIM]; /* [POSITIONS][DIM], filled by the library */
    pe_absolute pe = {.kind = PE_ABS_SINUSOIDAL, .base = 10000.0, .layout = PE_SIN_INTERLEAVED};

    /* No embeddings (NULL x): the table itself, PE[p] for each position. */
    pe_status st = pe_encode_absolute(&pe, NULL, 1.0, NULL, positions, POSITIONS, DIM, table, NULL);
    printf("version %s\n", pe_version());
    printf("status %s\n", pe_status_name(st));
    if (st != PE_OK)
        return 1;
    for (int p = 0; p < POSITIONS; p++)
        for (int i = 0; i < DIM; i++)
            printf("%d %d %.9g\n", p, i, (double)table[p * DIM + i]);
    return 0;
}

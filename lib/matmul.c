/*
 * matmul.c - posenc's float32 matrix product, batch-invariant and
 * deterministic by construction (see pe_matmul in internal.h).
 *
 * Why not the BLAS: OpenBLAS 0.3.21's sgemm gives a row different bits by
 * where the row sits in the call and by how the call is split over threads
 * (measured, tests/unit/test_determinism.c: its Haswell/Zen kernels compute
 * rows 0-5 of every 12 one way and 6-11 another, Prescott's the last row of
 * an odd count another), and it takes its thread count from the caller's
 * OpenMP team. So a token's q/k/v depended on its neighbours and on the
 * worker that took the request.
 *
 * Here every output element is one chain of fused multiply-adds over k in
 * order, starting from +0: c = fma(a[k], b[k], c) for k = 0, 1, ... The
 * vector lanes of the AVX2 kernel and the scalar fallback compute that same
 * chain (an fma rounds once, in a lane as in fmaf), and blocking k only
 * stores the running float and loads it back, so tiles, edges, blocks and
 * threads can be cut anywhere without changing a bit.
 *
 * Layout of the work: C in tiles of MR rows x NR columns; B is copied, per
 * KC-deep slice of NR columns, into a small packed panel on the stack (zeros
 * past n), which then serves every row tile of an MC-row chunk from L1.
 * OpenMP threads take (row chunk, column group) items statically.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PE_HAVE_AVX2_KERNEL 1
#else
#define PE_HAVE_AVX2_KERNEL 0
#endif

#include "internal.h"

enum {
    MR = 6,       /* rows of a tile: 12 accumulators of 8 floats */
    NR = 16,      /* columns of a tile and of a packed panel */
    KC = 256,     /* depth of a packed panel: 16 KiB, stays in L1 */
    MC = 96,      /* rows of a work item: its a-slice (96 KiB) stays in L2 */
    MIN_ITEMS = 8 /* work items wanted: columns are split when rows are few */
};

/* Below this many multiply-adds the product stays on the calling thread. */
#define PARALLEL_MIN_FMAS ((size_t)1 << 18)

/* c[MR][NR] (row stride ldc) = (first ? 0 : c) + a . panel[kc][NR], a
 * packed as ap[kc][MR] (ap[k*MR + r] is row r's element k). */
typedef void tile_fn(const float *ap, const float *panel, size_t kc, float *c, size_t ldc,
                     bool first);

/* The reference: the chain of one element written out. */
static void tile_scalar(const float *ap, const float *panel, size_t kc, float *c, size_t ldc,
                        bool first)
{
    for (size_t r = 0; r < MR; r++)
        for (size_t j = 0; j < NR; j++) {
            float acc = first ? 0.0f : c[r * ldc + j];
            for (size_t k = 0; k < kc; k++)
                acc = fmaf(ap[k * MR + r], panel[k * NR + j], acc);
            c[r * ldc + j] = acc;
        }
}

#if PE_HAVE_AVX2_KERNEL
/* tile_scalar with the 6 x 16 accumulators in 12 ymm registers: per k, two
 * loads of the panel row, six broadcasts of a, twelve fmas. Written out
 * row by row so that the accumulators stay in registers. */
#define ROW_INIT(r)                                                                                \
    __m256 c##r##0 = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + ldc * (r));                 \
    __m256 c##r##1 = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + ldc * (r) + 8)
#define ROW_FMA(r)                                                                                 \
    do {                                                                                           \
        __m256 x = _mm256_broadcast_ss(ap + k * MR + (r));                                         \
        c##r##0 = _mm256_fmadd_ps(x, b0, c##r##0);                                                 \
        c##r##1 = _mm256_fmadd_ps(x, b1, c##r##1);                                                 \
    } while (0)
#define ROW_STORE(r)                                                                               \
    do {                                                                                           \
        _mm256_storeu_ps(c + ldc * (r), c##r##0);                                                  \
        _mm256_storeu_ps(c + ldc * (r) + 8, c##r##1);                                              \
    } while (0)

__attribute__((target("avx2,fma"))) static void
tile_avx2(const float *ap, const float *panel, size_t kc, float *c, size_t ldc, bool first)
{
    ROW_INIT(0);
    ROW_INIT(1);
    ROW_INIT(2);
    ROW_INIT(3);
    ROW_INIT(4);
    ROW_INIT(5);
#pragma GCC unroll 4
    for (size_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(panel + k * NR), b1 = _mm256_loadu_ps(panel + k * NR + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
}
#undef ROW_INIT
#undef ROW_FMA
#undef ROW_STORE
#endif

static tile_fn *pick_tile(void)
{
#if PE_HAVE_AVX2_KERNEL
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return tile_avx2;
#endif
    return tile_scalar;
}

/* panel[kc][NR] = columns j0.. of b's rows k0..k0+kc (zeros past n). b is
 * b[k][j] = b[k*ldb + j], or with trans b[j*ldb + k]. */
static void pack_panel(const float *b, size_t ldb, bool trans, size_t k0, size_t kc, size_t j0,
                       size_t n, float *panel)
{
    size_t cols = n - j0 < NR ? n - j0 : NR;

    if (!trans) {
        for (size_t k = 0; k < kc; k++) {
            memcpy(panel + k * NR, b + (k0 + k) * ldb + j0, cols * sizeof *panel);
            memset(panel + k * NR + cols, 0, (NR - cols) * sizeof *panel);
        }
        return;
    }
    if (cols < NR)
        memset(panel, 0, kc * NR * sizeof *panel);
    for (size_t j = 0; j < cols; j++)
        for (size_t k = 0; k < kc; k++)
            panel[k * NR + j] = b[(j0 + j) * ldb + k0 + k];
}

/* ap[t][kc][MR] = the k-slice k0..k0+kc of rows i0..i1 of a, tile by tile
 * (rows past m repeat row i0: computed and dropped). */
static void pack_rows(const float *a, size_t lda, size_t m, size_t i0, size_t i1, size_t k0,
                      size_t kc, float *ap)
{
    for (size_t i = i0; i < i1; i += MR, ap += kc * MR)
        for (size_t r = 0; r < MR; r++) {
            const float *row = a + (i + r < m ? i + r : i0) * lda + k0;
            for (size_t k = 0; k < kc; k++)
                ap[k * MR + r] = row[k];
        }
}

/* The tile at rows i, columns j0.. of c for one k-slice: straight into c
 * when whole, else through a full-size copy whose extra rows and columns
 * are computed and dropped. */
static void run_tile(tile_fn *tile, const float *ap, size_t kc, bool first, const float *panel,
                     size_t rows, size_t cols, float *ct, size_t ldc)
{
    if (rows == MR && cols == NR) {
        tile(ap, panel, kc, ct, ldc, first);
        return;
    }
    float cbuf[MR * NR] = {0};
    for (size_t r = 0; r < rows && !first; r++)
        memcpy(cbuf + r * NR, ct + r * ldc, cols * sizeof *cbuf);
    tile(ap, panel, kc, cbuf, NR, first);
    for (size_t r = 0; r < rows; r++)
        memcpy(ct + r * ldc, cbuf + r * NR, cols * sizeof *cbuf);
}

/* The panel of k-slice k0 (depth kc) and columns j.. in pe_matmul_pack's
 * layout: slices one after another, each panel by panel. */
static size_t panel_offset(size_t n, size_t k0, size_t kc, size_t j)
{
    size_t panels = (n + NR - 1) / NR;
    return k0 * panels * NR + j / NR * kc * NR;
}

size_t pe_matmul_packed_count(size_t k, size_t n)
{
    size_t panels = (n + NR - 1) / NR, count;
    if (__builtin_mul_overflow(panels * NR, k, &count))
        return 0;
    return count;
}

void pe_matmul_pack(const float *b, size_t ldb, bool b_trans, size_t k, size_t n, float *packed)
{
    for (size_t k0 = 0; k0 < k; k0 += KC) {
        size_t kc = k - k0 < KC ? k - k0 : KC;
        for (size_t j = 0; j < n; j += NR)
            pack_panel(b, ldb, b_trans, k0, kc, j, n, packed + panel_offset(n, k0, kc, j));
    }
}

/* What one product needs: a, b (or b packed), c and their sizes. */
typedef struct product {
    tile_fn *tile;
    const float *a;
    size_t lda, m, k;
    const float *b; /* NULL when packed is given */
    size_t ldb;
    bool trans;
    const float *packed; /* pe_matmul_pack's layout, or NULL */
    size_t n;
    float *c;
    size_t ldc;
} product;

/* Rows i0..i0+MC and columns j0..j0+nc of c (clipped to m, n). Scratch
 * on the stack: the packed rows (96 KiB) and one panel (16 KiB). */
static void run_item(const product *p, size_t i0, size_t j0, size_t nc)
{
    float ap[MC * KC], own_panel[KC * NR];
    size_t m = p->m, n = p->n, k = p->k;
    size_t i1 = m - i0 < MC ? m : i0 + MC, j1 = n - j0 < nc ? n : j0 + nc;

    for (size_t k0 = 0; k0 < k; k0 += KC) {
        size_t kc = k - k0 < KC ? k - k0 : KC;
        pack_rows(p->a, p->lda, m, i0, i1, k0, kc, ap);
        for (size_t j = j0; j < j1; j += NR) {
            size_t cols = j1 - j < NR ? j1 - j : NR;
            const float *panel = own_panel;
            if (p->packed)
                panel = p->packed + panel_offset(n, k0, kc, j);
            else
                pack_panel(p->b, p->ldb, p->trans, k0, kc, j, n, own_panel);
            for (size_t i = i0; i < i1; i += MR)
                run_tile(p->tile, ap + (i - i0) * kc, kc, k0 == 0, panel, i1 - i < MR ? i1 - i : MR,
                         cols, p->c + i * p->ldc + j, p->ldc);
        }
    }
}

static void run(const product *p)
{
    size_t m = p->m, n = p->n, k = p->k;

    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (size_t i = 0; i < m; i++)
            memset(p->c + i * p->ldc, 0, n * sizeof *p->c);
        return;
    }
    /* Items of MC rows and all columns (the rows are packed once per
     * k-slice), or, when that makes fewer than MIN_ITEMS, of fewer columns
     * (whole panels). The cut changes the speed, never a bit. */
    size_t chunks = (m + MC - 1) / MC, panels = (n + NR - 1) / NR, fmas = 0;
    size_t groups = chunks >= MIN_ITEMS ? 1 : (MIN_ITEMS + chunks - 1) / chunks;
    groups = groups < panels ? groups : panels;
    size_t nc = (panels + groups - 1) / groups * NR;
    groups = (n + nc - 1) / nc;
    bool parallel = __builtin_mul_overflow(m, n, &fmas) || __builtin_mul_overflow(fmas, k, &fmas) ||
                    fmas >= PARALLEL_MIN_FMAS;

#pragma omp parallel for schedule(static) if (parallel && chunks * groups > 1)
    for (size_t item = 0; item < chunks * groups; item++)
        run_item(p, item / groups * MC, item % groups * nc, nc);
}

void pe_matmul(const float *a, size_t lda, size_t m, size_t k, const float *b, size_t ldb,
               bool b_trans, size_t n, float *c, size_t ldc)
{
    product p = {pick_tile(), a, lda, m, k, b, ldb, b_trans, NULL, n, c, ldc};
    run(&p);
}

void pe_matmul_packed(const float *a, size_t lda, size_t m, size_t k, const float *packed, size_t n,
                      float *c, size_t ldc)
{
    product p = {pick_tile(), a, lda, m, k, NULL, 0, false, packed, n, c, ldc};
    run(&p);
}

/*
 * test_pe_cache.c - the shared table cache (lib/pe_cache.c): hits are bit
 * for bit the tables computed directly, admission on second use, LRU
 * eviction order, the byte budget, a flood of odd bases against a common
 * table, a table evicted while held, and readers on several threads while
 * tables churn (run under ASan by make test-asan: a table freed under a
 * reader is a heap-use-after-free there).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_list.h"
#include "pe_cache.h"
#include "posenc.h"

/* Tables of d = 16 hold 4096 rows (512 KiB); of d = 512, 2048 rows (8 MiB). */
enum { SMALL_D = 16, SMALL_ROWS = 4096, WIDE_D = 512, WIDE_ROWS = 2048 };

/* A budget with room for n tables of d doubles per row but not n + 1 (the
 * cache adds a header of well under 64 KiB to each). */
static size_t budget_for(size_t n, size_t d, size_t rows)
{
    return n * (rows * d * sizeof(double) + 65536);
}

static bool same_as_computed(const double *got, double base, pe_sin_layout layout, size_t d,
                             size_t rows)
{
    double *want = malloc(rows * d * sizeof *want);
    bool same = want != NULL;

    if (want) {
        pe_sinusoidal_table(base, layout, d, rows, want);
        same = memcmp(got, want, rows * d * sizeof *want) == 0;
    }
    free(want);
    return same;
}

static void hits_are_the_computed_tables(void)
{
    pe_cache *c = pe_cache_new(budget_for(4, WIDE_D, WIDE_ROWS));
    size_t rows = 0;

    CHECK(c != NULL, "pe_cache_new");
    if (!c)
        return;
    CHECK(pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, 64, &rows) == NULL,
          "the first use of a table is not cached");
    const double *t = pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, 64, &rows);
    CHECK(t != NULL && rows == SMALL_ROWS, "the second use admits it (%zu rows)", rows);
    if (t) {
        CHECK(same_as_computed(t, 10000.0, PE_SIN_INTERLEAVED, 64, rows),
              "cached sinusoidal rows are pe_sinusoidal_table's, bit for bit");
        /* and they are the formula: PE[p][2i] = sin(p / 10000^(2i/64)) */
        double want = sin(4000.0 / pow(10000.0, 10.0 / 64.0));
        CHECK(fabs(t[4000 * 64 + 10] - want) < 1e-9, "row 4000 col 10 = %.17g, want %.17g",
              t[4000 * 64 + 10], want);
    }
    const double *again = pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, 64, &rows);
    CHECK(again == t, "a hit returns the same table");
    const double *split = pe_cache_sinusoidal(c, 10000.0, PE_SIN_SPLIT, 64, &rows);
    CHECK(split == NULL, "another layout is another table");
    pe_cache_release(again);
    pe_cache_release(t);

    double inv[8], af = 1.25;
    for (size_t i = 0; i < 8; i++)
        inv[i] = pow(500000.0, -(double)(2 * i) / 16.0);
    CHECK(pe_cache_rope(c, inv, 8, af, &rows) == NULL, "first rope use not cached");
    const double *r = pe_cache_rope(c, inv, 8, af, &rows);
    CHECK(r != NULL && rows == 4096, "second rope use admitted (%zu rows)", rows);
    if (r) {
        size_t bad = 0;
        for (size_t p = 0; p < rows; p++)
            for (size_t i = 0; i < 8; i++) {
                double th = (double)p * inv[i];
                bad += r[(p * 8 + i) * 2] != cos(th) * af || r[(p * 8 + i) * 2 + 1] != sin(th) * af;
            }
        CHECK(bad == 0, "cached rope rows are cos, sin(p * inv_freq) * factor (%zu differ)", bad);
    }
    inv[7] = nextafter(inv[7], 1.0);
    CHECK(pe_cache_rope(c, inv, 8, af, &rows) == NULL, "one ulp of inv_freq is another key");
    pe_cache_release(r);
    CHECK(pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, 1 << 16, &rows) == NULL &&
              pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, 1 << 16, &rows) == NULL,
          "a table too wide for CACHE_MIN_ROWS rows is never cached");
    pe_cache_free(c);
}

/* Asks for (base, WIDE_D) `times` times, releasing every hold; returns how
 * many of the asks were answered from the cache. */
static int ask_wide(pe_cache *c, double base, int times)
{
    int cached = 0;
    size_t rows;

    for (int i = 0; i < times; i++) {
        const double *t = pe_cache_sinusoidal(c, base, PE_SIN_INTERLEAVED, WIDE_D, &rows);
        cached += t != NULL;
        pe_cache_release(t);
    }
    return cached;
}

static void evicts_least_recently_used(void)
{
    pe_cache *c = pe_cache_new(budget_for(2, WIDE_D, WIDE_ROWS));
    size_t rows;

    if (!c)
        return;
    CHECK(ask_wide(c, 1e4, 2) == 1 && ask_wide(c, 2e4, 2) == 1, "A and B admitted on 2nd use");
    CHECK(ask_wide(c, 1e4, 1) == 1, "A is a hit (A now more recent than B)");
    /* C's second use ties B's count (2): a table never evicts one used as often */
    CHECK(ask_wide(c, 3e4, 2) == 0, "C asked twice is not admitted over B");
    pe_cache_stats s = pe_cache_get_stats(c);
    CHECK(s.rejections == 1 && s.evictions == 0, "one rejection, no eviction (%zu, %zu)",
          s.rejections, s.evictions);
    CHECK(ask_wide(c, 3e4, 1) == 1, "C's third use evicts and is cached");
    s = pe_cache_get_stats(c);
    CHECK(s.evictions == 1 && s.tables == 2, "one eviction, two tables (%zu, %zu)", s.evictions,
          s.tables);
    size_t hits = s.hits;
    const double *a = pe_cache_sinusoidal(c, 1e4, PE_SIN_INTERLEAVED, WIDE_D, &rows);
    CHECK(a != NULL && pe_cache_get_stats(c).hits == hits + 1, "A (recent) survived");
    pe_cache_release(a);
    CHECK(ask_wide(c, 2e4, 1) == 0, "B (least recent) was the one evicted");
    CHECK(pe_cache_get_stats(c).bytes <= pe_cache_get_stats(c).budget, "within budget");
    pe_cache_free(c);
}

static void budget_never_exceeded(void)
{
    size_t budget = budget_for(3, WIDE_D, WIDE_ROWS) / 2; /* 1.5 wide tables */
    pe_cache *c = pe_cache_new(budget);
    static const size_t widths[] = {16, 64, 100, 512, 1024, 2048};
    uint64_t rng = 7;
    size_t worst = 0, admitted_wide = 0;
    const double *held[4] = {0};

    if (!c)
        return;
    for (int i = 0; i < 3000; i++) {
        size_t d = widths[(size_t)test_uniform(&rng, 0, ARRAY_LEN(widths))];
        double base = 1000.0 * (1 + (int)test_uniform(&rng, 0, 12));
        size_t rows = 0, slot = (size_t)i % ARRAY_LEN(held);
        pe_cache_release(held[slot]); /* a few holds outlive later lookups */
        held[slot] = pe_cache_sinusoidal(c, base, PE_SIN_SPLIT, d, &rows);
        admitted_wide += held[slot] && d >= 512;
        pe_cache_stats s = pe_cache_get_stats(c);
        if (s.bytes > worst)
            worst = s.bytes;
    }
    for (size_t i = 0; i < ARRAY_LEN(held); i++)
        pe_cache_release(held[i]);
    pe_cache_stats s = pe_cache_get_stats(c);
    CHECK(worst <= budget, "the most bytes ever held (%zu) <= budget %zu", worst, budget);
    CHECK(s.evictions > 0 && admitted_wide > 0 && worst > budget / 2,
          "the run did fill and evict (%zu evictions, peak %zu)", s.evictions, worst);
    pe_cache_free(c);

    c = pe_cache_new(1000); /* too small for any table */
    size_t rows;
    CHECK(c && !pe_cache_sinusoidal(c, 1e4, PE_SIN_SPLIT, 16, &rows) &&
              !pe_cache_sinusoidal(c, 1e4, PE_SIN_SPLIT, 16, &rows) &&
              pe_cache_get_stats(c).bytes == 0,
          "a budget smaller than any table caches nothing");
    pe_cache_free(c);
}

/* A common table asked for regularly survives any number of odd bases,
 * asked for once or twice each, in a cache with room for two tables. */
static void odd_bases_do_not_evict_a_common_table(void)
{
    pe_cache *c = pe_cache_new(budget_for(2, SMALL_D, SMALL_ROWS));
    size_t rows, common_misses = 0;

    if (!c)
        return;
    for (int i = 0; i < 5; i++)
        pe_cache_release(pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, SMALL_D, &rows));
    for (int i = 0; i < 6000; i++) {
        double odd = 10001.0 + i;
        pe_cache_release(pe_cache_sinusoidal(c, odd, PE_SIN_INTERLEAVED, SMALL_D, &rows));
        if (i >= 3000) /* the second half: each odd base twice */
            pe_cache_release(pe_cache_sinusoidal(c, odd, PE_SIN_INTERLEAVED, SMALL_D, &rows));
        if (i % 20 == 0) {
            const double *t = pe_cache_sinusoidal(c, 10000.0, PE_SIN_INTERLEAVED, SMALL_D, &rows);
            common_misses += t == NULL;
            pe_cache_release(t);
        }
    }
    pe_cache_stats s = pe_cache_get_stats(c);
    CHECK(common_misses == 0, "the common table stayed cached (%zu misses of it)", common_misses);
    CHECK(s.admissions >= 2, "odd bases asked twice were admitted to the free room (%zu)",
          s.admissions);
    pe_cache_free(c);
}

/* A reader keeps using a table the cache evicts meanwhile; its bytes stay
 * charged until the reader lets go. */
static void evicted_while_held(void)
{
    pe_cache *c = pe_cache_new(budget_for(1, WIDE_D, WIDE_ROWS));
    size_t rows;

    if (!c)
        return;
    ask_wide(c, 1e4, 1);
    const double *a = pe_cache_sinusoidal(c, 1e4, PE_SIN_INTERLEAVED, WIDE_D, &rows);
    CHECK(a != NULL, "A admitted and held");
    ask_wide(c, 2e4, 3); /* B's third use would evict A, but A's bytes are held */
    pe_cache_stats s = pe_cache_get_stats(c);
    CHECK(s.evictions == 1 && s.tables == 0 && s.bytes > 0 && s.bytes <= s.budget,
          "A evicted, still charged, nothing else admitted (%zu evictions, %zu tables)",
          s.evictions, s.tables);
    CHECK(a && same_as_computed(a, 1e4, PE_SIN_INTERLEAVED, WIDE_D, rows),
          "the held table is intact after its eviction");
    pe_cache_release(a);
    CHECK(pe_cache_get_stats(c).bytes == 0, "released: its bytes are back");
    CHECK(ask_wide(c, 2e4, 1) == 1, "now B is admitted");
    pe_cache_free(c);
}

enum { READERS = 4, ROUNDS = 40 };

typedef struct reader {
    pe_cache *cache;
    const double *common; /* [SMALL_ROWS][SMALL_D], the common table computed */
    int id;
    size_t wrong, held;
} reader;

static bool row_is(const double *got, double base, size_t p)
{
    double want[SMALL_D];

    pe_sinusoidal_row(base, PE_SIN_SPLIT, (int64_t)p, SMALL_D, want);
    return memcmp(got + p * SMALL_D, want, sizeof want) == 0;
}

/* Each round asks for a new base of its own one more time than the round
 * before (so it outranks and evicts older tables) and for the common one. */
static void *read_tables(void *arg)
{
    reader *r = arg;
    size_t rows;

    for (int round = 0; round < ROUNDS; round++) {
        double base = 100.0 + r->id * 1000 + round;
        for (int k = 0; k < round + 3; k++) {
            const double *t = pe_cache_sinusoidal(r->cache, base, PE_SIN_SPLIT, SMALL_D, &rows);
            const double *m = pe_cache_sinusoidal(r->cache, 1e4, PE_SIN_SPLIT, SMALL_D, &rows);
            size_t p = (size_t)(round * 97 + k * 31) % SMALL_ROWS;
            r->wrong += t && !row_is(t, base, p);
            r->wrong += t && !row_is(t, base, SMALL_ROWS - 1);
            r->wrong += m &&
                        memcmp(m + p * SMALL_D, r->common + p * SMALL_D, SMALL_D * sizeof *m) != 0;
            r->held += (t != NULL) + (m != NULL);
            pe_cache_release(t);
            pe_cache_release(m);
        }
    }
    return NULL;
}

static void concurrent_readers(void)
{
    pe_cache *c = pe_cache_new(budget_for(3, SMALL_D, SMALL_ROWS));
    double *common = malloc(SMALL_ROWS * SMALL_D * sizeof *common);
    pthread_t tid[READERS];
    reader rd[READERS];
    size_t wrong = 0, held = 0;
    int started = 0;

    if (!c || !common)
        goto out;
    pe_sinusoidal_table(1e4, PE_SIN_SPLIT, SMALL_D, SMALL_ROWS, common);
    for (int i = 0; i < READERS; i++) {
        rd[i] = (reader){.cache = c, .common = common, .id = i};
        if (pthread_create(&tid[i], NULL, read_tables, &rd[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        wrong += rd[i].wrong;
        held += rd[i].held;
    }
    pe_cache_stats s = pe_cache_get_stats(c);
    CHECK(started == READERS, "started %d reader threads", started);
    CHECK(wrong == 0, "every row read on %d threads is the computed row (%zu differ)", READERS,
          wrong);
    CHECK(s.evictions >= 10 && held > 0, "tables churned under the readers (%zu evictions)",
          s.evictions);
    CHECK(s.bytes <= s.budget, "within budget after the run (%zu)", s.bytes);
out:
    free(common);
    pe_cache_free(c);
}

void test_pe_cache(void)
{
    hits_are_the_computed_tables();
    evicts_least_recently_used();
    budget_never_exceeded();
    odd_bases_do_not_evict_a_common_table();
    evicted_while_held();
    concurrent_readers();
}

/*
 * decode_bench.c - the request decoder's time on one body, against two
 * comparators in the same run: the decoder of another revision (linked in
 * with its symbols renamed old_*, see decode_bench.sh) and jansson's
 * json_loadb on the same body. Each round times every contender once, in
 * turn (alternating, so a shared machine's noise falls on all alike);
 * the medians are printed with their ratios. Odd rounds run them in the
 * reverse order.
 *
 *   decode_bench BODY.json [ROUNDS]
 *
 * "decode" is json_doc_load plus reading the body's "embeddings" as
 * float32 (what /encode does with it), then freeing.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json_doc.h"

int old_json_doc_load(json_doc *doc, const char *body, size_t len, const json_doc_limits *limits,
                      json_codec_error *err);
void old_json_doc_free(json_doc *doc);
json_span *old_json_doc_array(const json_doc *doc, const json_t *v);

typedef int (*load_fn)(json_doc *, const char *, size_t, const json_doc_limits *,
                       json_codec_error *);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One decode; 0 when the embeddings came out. */
static int decode(load_fn load, void (*release)(json_doc *),
                  json_span *(*array)(const json_doc *, const json_t *), const char *body,
                  size_t len)
{
    json_doc doc;
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = 32, .max_values = 1u << 20};
    float *values = NULL;
    size_t bad;

    if (load(&doc, body, len, &limits, &ce))
        return -1;
    json_span *span = array(&doc, json_object_get(doc.root, "embeddings"));
    int rc = span && json_span_take_floats(span, doc.text, &values, &bad) == JSON_READ_OK ? 0 : -1;
    free(values);
    release(&doc);
    return rc;
}

static int jansson_parse(const char *body, size_t len)
{
    json_error_t jerr;
    json_t *v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    json_decref(v);
    return v ? 0 : -1;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
        *len = (size_t)n;
    else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    size_t len = 0;
    char *body = argc > 1 ? read_all(argv[1], &len) : NULL;
    int rounds = argc > 2 ? atoi(argv[2]) : 15;

    if (!body || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "usage: decode_bench BODY.json [ROUNDS]\n");
        return 2;
    }
    json_doc_setup();
    /* repeats per round: about 50 ms of work each */
    int reps = len > (1u << 20) ? 3 : (int)(2000000 / (len + 1000)) + 1;
    double *t = malloc(3 * (size_t)rounds * sizeof *t);
    int fails = 0;
    for (int r = 0; r < rounds; r++) {
        /* odd rounds run the contenders in the other order: none always
         * follows jansson (whose long single-threaded run lets the OpenMP
         * team fall asleep) */
        for (int k = 0; k < 3; k++) {
            int c = r % 2 ? 2 - k : k;
            double t0 = now();
            for (int i = 0; i < reps; i++)
                fails += (c == 0   ? decode(json_doc_load, json_doc_free, json_doc_array, body, len)
                          : c == 1 ? decode(old_json_doc_load, old_json_doc_free,
                                            old_json_doc_array, body, len)
                                   : jansson_parse(body, len)) != 0;
            t[c * rounds + r] = (now() - t0) / reps;
        }
    }
    for (int k = 0; k < 3; k++)
        qsort(t + k * rounds, (size_t)rounds, sizeof *t, cmp);
    double now_us = t[rounds / 2] * 1e6, old_us = t[rounds + rounds / 2] * 1e6,
           jan_us = t[2 * rounds + rounds / 2] * 1e6;
    printf("%s: %zu bytes, %d rounds x %d, medians: decoder %.1f us, before %.1f us (%.2fx "
           "faster), jansson json_loadb %.1f us (%.2fx of its time)%s\n",
           argv[1], len, rounds, reps, now_us, old_us, old_us / now_us, jan_us, now_us / jan_us,
           fails ? " -- SOME DECODES FAILED" : "");
    free(t);
    free(body);
    return fails ? 1 : 0;
}

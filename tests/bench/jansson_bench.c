/*
 * jansson_bench.c - the JSON baseline of the benchmark suite: what jansson
 * alone costs for the documents of a request, with no HTTP and no math.
 *
 *   jansson_bench [--seconds S] REQUEST.json RESPONSE.json
 *
 * Each timed iteration does what a straightforward jansson-based server
 * would do for one request, single-threaded:
 *   parse: json_loadb of the request body, a walk that reads every number
 *          as a float, and json_decref;
 *   build: a tree of the response (json_deep_copy of the response parsed
 *          once, untimed, with every number as a real, as json_real() per
 *          element would build it) and its json_decref;
 *   dump:  json_dumps of that tree, JSON_COMPACT | JSON_REAL_PRECISION(9)
 *          (the fewest digits that keep every float32; jansson 2.14 has no
 *          shortest mode), and free.
 * Iterations run until S seconds (default 2) have passed, at least 3.
 * Prints:  jansson parse_ms build_ms dump_ms total_ms reps dump_bytes
 * (medians per phase; total is their sum).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#define MAX_REPS 1000

/* Reads every number of the tree as a float32, as a decoder would. */
static float walk(json_t *v)
{
    float sum = 0;
    size_t i;
    const char *key;
    json_t *item;
    switch (json_typeof(v)) {
    case JSON_ARRAY:
        json_array_foreach (v, i, item)
            sum += walk(item);
        break;
    case JSON_OBJECT:
        json_object_foreach (v, key, item)
            sum += walk(item);
        break;
    case JSON_REAL:
    case JSON_INTEGER:
        sum = (float)json_number_value(v);
        break;
    default:
        break;
    }
    return sum;
}

int main(int argc, char **argv)
{
    double seconds = 2.0;
    const char *paths[2];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (np < 2 && argv[i][0] != '-')
            paths[np++] = argv[i];
        else
            np = 3;
    }
    if (np != 2) {
        fprintf(stderr, "usage: jansson_bench [--seconds S] REQUEST.json RESPONSE.json\n");
        return 2;
    }
    size_t req_len, resp_len;
    char *req = read_file(paths[0], &req_len);
    char *resp = read_file(paths[1], &resp_len);
    if (req == NULL || resp == NULL) {
        perror(req == NULL ? paths[0] : paths[1]);
        return 1;
    }
    json_error_t err;
    json_t *resp_tree = json_loadb(resp, resp_len, JSON_DECODE_INT_AS_REAL, &err);
    if (resp_tree == NULL) {
        fprintf(stderr, "%s:%d:%d: %s\n", paths[1], err.line, err.column, err.text);
        return 1;
    }

    static double tp[MAX_REPS], tb[MAX_REPS], td[MAX_REPS];
    size_t dump_bytes = 0;
    volatile float sink = 0;
    int reps = 0;
    double start = now_ms();
    while (reps < MAX_REPS && (reps < 3 || now_ms() - start < seconds * 1e3)) {
        double t0 = now_ms();
        json_t *in = json_loadb(req, req_len, 0, &err);
        if (in == NULL) {
            fprintf(stderr, "%s:%d:%d: %s\n", paths[0], err.line, err.column, err.text);
            return 1;
        }
        sink += walk(in);
        json_decref(in);
        double t1 = now_ms();
        json_t *out = json_deep_copy(resp_tree);
        double t2 = now_ms();
        char *text = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(9));
        if (text == NULL)
            return 1;
        dump_bytes = strlen(text);
        free(text);
        double t3 = now_ms();
        json_decref(out);
        double t4 = now_ms();
        tp[reps] = t1 - t0;
        tb[reps] = (t2 - t1) + (t4 - t3);
        td[reps] = t3 - t2;
        reps++;
    }
    double p = median(tp, reps), b = median(tb, reps), d = median(td, reps);
    printf("jansson %.3f %.3f %.3f %.3f %d %zu\n", p, b, d, p + b + d, reps, dump_bytes);
    (void)sink;
    json_decref(resp_tree);
    free(req);
    free(resp);
    return 0;
}

/*
 * sgemm_bench.c - the numeric-core baseline of the benchmark suite: OpenBLAS
 * cblas_sgemm alone, C[M][N] = A[M][K] * B[K][N] (row-major, as posenc's
 * Q = Z*W), on the shapes given, with nothing else around it.
 *
 *   sgemm_bench [--threads N] [--seconds S] MxKxN...
 *
 * For each shape: one untimed warm-up call, then calls until S seconds
 * (default 1) have passed (at least 5, at most 1000). Prints one line per
 * shape:  sgemm M K N median_ms min_ms gflops_at_median reps
 * --threads sets OpenBLAS's thread count (default: OMP_NUM_THREADS or the
 * OpenMP default, as posenc-server uses).
 *
 *   sgemm_bench --machine
 *
 * prints the machine facts the report quotes, one per line:
 *   openblas_core NAME      (openblas_get_corename: the kernels it chose)
 *   openblas_config TEXT    (openblas_get_config)
 *   membw GBPS              (memcpy of 256 MiB, one thread, best of 5: bytes
 *                            read + bytes written per second)
 *   loopback GBPS           (one TCP connection on 127.0.0.1, a sender and a
 *                            receiver thread, 1 MiB writes: best of 3 x 256 MiB)
 */
#include <arpa/inet.h>
#include <cblas.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_REPS 1000

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (p == NULL)
        return NULL;
    unsigned long long s = 0x9E3779B97F4A7C15ULL * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (float)((double)(s >> 40) / (double)(1ULL << 24) - 0.5);
    }
    return p;
}

static int bench(int m, int k, int n, double seconds)
{
    float *a = filled((size_t)m * k, 1);
    float *b = filled((size_t)k * n, 2);
    float *c = calloc((size_t)m * n, sizeof *c);
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "sgemm_bench: out of memory for %dx%dx%d\n", m, k, n);
        free(a);
        free(b);
        free(c);
        return 1;
    }
    static double t[MAX_REPS];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    int reps = 0;
    double start = now_ms();
    while (reps < MAX_REPS && (reps < 5 || now_ms() - start < seconds * 1e3)) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c,
                    n);
        t[reps++] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    double med = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
    double gflops = 2.0 * m * n * (double)k / (med * 1e6);
    printf("sgemm %d %d %d %.4f %.4f %.2f %d\n", m, k, n, med, t[0], gflops, reps);
    fflush(stdout);
    free(a);
    free(b);
    free(c);
    return 0;
}

#define LOOPBACK_CHUNK ((size_t)1 << 20)
#define LOOPBACK_BYTES ((size_t)256 << 20)

/* The receiving end of loopback_gbps(): reads until the sender closes. */
static void *drain(void *arg)
{
    int fd = *(int *)arg;
    char *buf = malloc(LOOPBACK_CHUNK); /* owned */
    while (buf && recv(fd, buf, LOOPBACK_CHUNK, 0) > 0)
        ;
    free(buf);
    return NULL;
}

/* Bytes per second one TCP connection on 127.0.0.1 carries; 0 on error. */
static double loopback_gbps(void)
{
    double gbps = 0;
    int listener = socket(AF_INET, SOCK_STREAM, 0), sender = -1, receiver = -1;
    char *data = calloc(1, LOOPBACK_CHUNK); /* owned */
    struct sockaddr_in addr;
    socklen_t alen = sizeof addr;
    pthread_t thread;

    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener < 0 || data == NULL || bind(listener, (struct sockaddr *)&addr, sizeof addr) ||
        listen(listener, 1) || getsockname(listener, (struct sockaddr *)&addr, &alen))
        goto done;
    sender = socket(AF_INET, SOCK_STREAM, 0);
    if (sender < 0 || connect(sender, (struct sockaddr *)&addr, sizeof addr))
        goto done;
    receiver = accept(listener, NULL, NULL);
    if (receiver < 0 || pthread_create(&thread, NULL, drain, &receiver))
        goto done;
    double t0 = now_ms();
    size_t sent = 0;
    while (sent < LOOPBACK_BYTES) {
        ssize_t n = send(sender, data, LOOPBACK_CHUNK, 0);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    shutdown(sender, SHUT_WR);
    pthread_join(thread, NULL);
    double ms = now_ms() - t0;
    gbps = sent == LOOPBACK_BYTES ? (double)sent / (ms * 1e6) : 0;
done:
    if (sender >= 0)
        close(sender);
    if (receiver >= 0)
        close(receiver);
    if (listener >= 0)
        close(listener);
    free(data);
    return gbps;
}

/* Memory bandwidth as the servers see it: one thread copying a buffer far
 * larger than the caches, counting the bytes read and written. */
static int machine_facts(void)
{
    const size_t n = (size_t)256 << 20;
    char *src = malloc(n), *dst = malloc(n); /* owned, freed below */
    if (src == NULL || dst == NULL) {
        free(src);
        free(dst);
        return 1;
    }
    memset(src, 1, n);
    memset(dst, 2, n);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_ms();
        memcpy(dst, src, n);
        double ms = now_ms() - t0;
        best = ms < best ? ms : best;
    }
    printf("openblas_core %s\n", openblas_get_corename());
    printf("openblas_config %s\n", openblas_get_config());
    printf("membw %.2f\n", 2.0 * (double)n / (best * 1e6));
    double lo = 0;
    for (int rep = 0; rep < 3; rep++) {
        double g = loopback_gbps();
        lo = g > lo ? g : lo;
    }
    printf("loopback %.2f\n", lo);
    int checksum = dst[n / 2];
    free(src);
    free(dst);
    return checksum == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    int status = 0, shapes = 0;
    for (int i = 1; i < argc; i++) {
        int m, k, n;
        char extra;
        if (strcmp(argv[i], "--machine") == 0) {
            return machine_facts();
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            openblas_set_num_threads(atoi(argv[++i]));
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (sscanf(argv[i], "%dx%dx%d%c", &m, &k, &n, &extra) == 3 && m > 0 && k > 0 &&
                   n > 0) {
            status |= bench(m, k, n, seconds);
            shapes++;
        } else {
            fprintf(stderr, "usage: sgemm_bench [--threads N] [--seconds S] "
                            "MxKxN...\n");
            return 2;
        }
    }
    if (shapes == 0) {
        fprintf(stderr, "usage: sgemm_bench [--threads N] [--seconds S] "
                        "MxKxN...\n");
        return 2;
    }
    return status;
}

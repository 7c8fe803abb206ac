/*
 * heap_policy.h - how glibc's malloc keeps and returns memory in this
 * server.
 *
 * A large request (S3 of the benchmark: 2048 tokens in base64) touches
 * about 50 MB of buffers. By default glibc serves blocks of 128 KiB and
 * more with mmap (then its dynamic threshold moves up to 32 MiB) and
 * trims the top of a heap past 128 KiB free, so each such request got its
 * buffers as fresh pages from the kernel, a page fault per 4 KiB touched,
 * and handed them back when it ended. Here freed memory is kept for the
 * next request while the server is busy, and given back only once it has
 * been idle for a while (conn_guard.h's watchdog calls heap_policy_trim),
 * so resident memory still returns near its idle level when load stops.
 */
#ifndef SERVER_HEAP_POLICY_H
#define SERVER_HEAP_POLICY_H

/* Before any thread starts: blocks up to 32 MiB (glibc's 64-bit maximum
 * of M_MMAP_THRESHOLD) come from the heap, free() never trims it, and every
 * thread shares the one main arena. One arena because malloc_trim returns
 * the free top of the main arena's heap but not that of a thread arena
 * (glibc 2.36: it only madvises the chunks in bins), and a request's
 * buffers end up in that top: measured with S5 of the benchmark, resident
 * memory 10 s after the burst was 97 MB with an arena per thread and
 * 25 MB with one (idle: 15 MB). S1 (many small requests on 2 HTTP threads)
 * showed no loss from sharing it (medians 21.1k vs 20.0k req/s). */
void heap_policy_init(void);

/* Returns the free memory of every heap to the system (malloc_trim). */
void heap_policy_trim(void);

#endif /* SERVER_HEAP_POLICY_H */

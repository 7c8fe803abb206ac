/*
 * metrics.c - Prometheus counters and histograms (see metrics.h).
 *
 * Names follow Prometheus practice: a posenc_ prefix, base units (seconds,
 * bytes), _total on counters. Each series is an independent relaxed
 * atomic, so a scrape racing with requests may see a request in one series
 * and not yet in another; a histogram's _count is computed from its own
 * buckets, so +Inf and _count always agree.
 */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* Upper bounds in seconds, and the same bounds as written in `le`. */
static const uint64_t BUCKET_NS[METRICS_N_BUCKETS] = {500000ULL,     1000000ULL,    2500000ULL,
                                                      5000000ULL,    10000000ULL,   25000000ULL,
                                                      50000000ULL,   100000000ULL,  250000000ULL,
                                                      500000000ULL,  1000000000ULL, 2500000000ULL,
                                                      5000000000ULL, 7500000000ULL, 10000000000ULL};
static const char *const BUCKET_LE[METRICS_N_BUCKETS] = {"0.0005", "0.001", "0.0025", "0.005",
                                                         "0.01",   "0.025", "0.05",   "0.1",
                                                         "0.25",   "0.5",   "1",      "2.5",
                                                         "5",      "7.5",   "10"};

/* Every error code api_error.h can produce, in table order. */
#define METRICS_CODE_STRING(name, status, code) code,
static const char *const CODES[] = {API_ERROR_LIST(METRICS_CODE_STRING)};
#undef METRICS_CODE_STRING
#define N_CODES (sizeof CODES / sizeof CODES[0])

_Static_assert(sizeof CODES / sizeof CODES[0] <= METRICS_N_CODES,
               "raise METRICS_N_CODES to hold every api_error code");

void metrics_init(metrics *m, const char *const *route_labels, size_t n_routes)
{
    /* All-zero bits are a valid zero for lock-free atomic integers. */
    memset(m, 0, sizeof *m);
    m->route_labels = route_labels;
    m->n_routes = n_routes < METRICS_MAX_ROUTES ? n_routes : METRICS_MAX_ROUTES;
}

/* The counters' slot of a route index: itself, or the last for "other". */
static size_t route_slot(const metrics *m, int index)
{
    return (index >= 0 && (size_t)index < m->n_routes) ? (size_t)index : METRICS_MAX_ROUTES;
}

static const char *slot_label(const metrics *m, size_t slot)
{
    return slot < m->n_routes ? m->route_labels[slot] : "other";
}

/* Whether a slot is in use: a route's, or "other". */
static int slot_used(const metrics *m, size_t slot)
{
    return slot < m->n_routes || slot == METRICS_MAX_ROUTES;
}

static size_t code_slot(const char *code)
{
    for (size_t i = 0; i < N_CODES; i++) {
        if (strcmp(CODES[i], code) == 0)
            return i;
    }
    return METRICS_N_CODES; /* "other" */
}

void metrics_record(metrics *m, const metrics_sample *s)
{
    const memory_order rl = memory_order_relaxed;
    size_t r = route_slot(m, s->route);

    if (s->status >= 100 && s->status <= 599)
        atomic_fetch_add_explicit(&m->requests[r][s->status - 100], 1, rl);
    size_t b = 0;
    while (b < METRICS_N_BUCKETS && s->duration_ns > BUCKET_NS[b])
        b++;
    atomic_fetch_add_explicit(&m->latency[r][b], 1, rl);
    atomic_fetch_add_explicit(&m->latency_sum_ns[r], s->duration_ns, rl);
    if (s->error_code != NULL)
        atomic_fetch_add_explicit(&m->errors[code_slot(s->error_code)], 1, rl);
    atomic_fetch_add_explicit(&m->request_bytes, s->bytes_in, rl);
    atomic_fetch_add_explicit(&m->response_bytes, s->bytes_out, rl);
    atomic_fetch_add_explicit(&m->tokens, s->tokens, rl);
}

static unsigned long long load(atomic_uint_fast64_t *a)
{
    return (unsigned long long)atomic_load_explicit(a, memory_order_relaxed);
}

static void render_requests(FILE *f, metrics *m)
{
    fputs("# HELP posenc_requests_total HTTP requests finished, by route "
          "and status.\n# TYPE posenc_requests_total counter\n",
          f);
    for (size_t r = 0; r < METRICS_N_ROUTES; r++) {
        if (!slot_used(m, r))
            continue;
        for (int s = 0; s < METRICS_N_STATUS; s++) {
            unsigned long long v = load(&m->requests[r][s]);
            if (v != 0)
                fprintf(f,
                        "posenc_requests_total{route=\"%s\",status=\"%d\"} "
                        "%llu\n",
                        slot_label(m, r), s + 100, v);
        }
    }
}

static void render_latency(FILE *f, metrics *m)
{
    fputs("# HELP posenc_request_duration_seconds Time from request "
          "headers to the last response byte.\n"
          "# TYPE posenc_request_duration_seconds histogram\n",
          f);
    for (size_t r = 0; r < METRICS_N_ROUTES; r++) {
        if (!slot_used(m, r))
            continue;
        const char *label = slot_label(m, r);
        unsigned long long cum = 0;
        for (int b = 0; b <= METRICS_N_BUCKETS; b++) {
            cum += load(&m->latency[r][b]);
            fprintf(f,
                    "posenc_request_duration_seconds_bucket{route=\"%s\","
                    "le=\"%s\"} %llu\n",
                    label, b < METRICS_N_BUCKETS ? BUCKET_LE[b] : "+Inf", cum);
        }
        fprintf(f,
                "posenc_request_duration_seconds_sum{route=\"%s\"} %.9f\n"
                "posenc_request_duration_seconds_count{route=\"%s\"} %llu\n",
                label, (double)load(&m->latency_sum_ns[r]) / 1e9, label, cum);
    }
}

static void render_errors(FILE *f, metrics *m)
{
    fputs("# HELP posenc_errors_total Error responses, by error code.\n"
          "# TYPE posenc_errors_total counter\n",
          f);
    for (size_t i = 0; i < N_CODES; i++) {
        if (code_slot(CODES[i]) != i)
            continue; /* a code shared by two rows: counted in the first */
        fprintf(f, "posenc_errors_total{code=\"%s\"} %llu\n", CODES[i], load(&m->errors[i]));
    }
    unsigned long long other = load(&m->errors[METRICS_N_CODES]);
    if (other != 0)
        fprintf(f, "posenc_errors_total{code=\"other\"} %llu\n", other);
}

static void render_gauges(FILE *f, const metrics_gauges *g)
{
    fprintf(f,
            "# HELP posenc_queue_depth /encode and /apply requests waiting "
            "for a worker.\n"
            "# TYPE posenc_queue_depth gauge\n"
            "posenc_queue_depth %u\n"
            "# HELP posenc_workers_busy Workers computing a request.\n"
            "# TYPE posenc_workers_busy gauge\n"
            "posenc_workers_busy %u\n"
            "# HELP posenc_workers Worker threads (--workers).\n"
            "# TYPE posenc_workers gauge\n"
            "posenc_workers %u\n"
            "# HELP posenc_open_connections Open client connections.\n"
            "# TYPE posenc_open_connections gauge\n"
            "posenc_open_connections %u\n"
            "# HELP posenc_connections_timed_out_total Connections closed "
            "because the client kept the server waiting past "
            "--request-timeout.\n"
            "# TYPE posenc_connections_timed_out_total counter\n"
            "posenc_connections_timed_out_total %llu\n"
            "# HELP posenc_connections_over_limit_total Connections "
            "accepted past --max-connections (answered 503 and closed).\n"
            "# TYPE posenc_connections_over_limit_total counter\n"
            "posenc_connections_over_limit_total %llu\n"
            "# HELP posenc_memory_budget_bytes The memory budget of all "
            "requests together (--max-memory).\n"
            "# TYPE posenc_memory_budget_bytes gauge\n"
            "posenc_memory_budget_bytes %llu\n"
            "# HELP posenc_memory_reserved_bytes Of the memory budget, the "
            "bytes held by requests now (bodies, decoded input, working "
            "buffers, answers).\n"
            "# TYPE posenc_memory_reserved_bytes gauge\n"
            "posenc_memory_reserved_bytes %llu\n",
            g->queued, g->computing, g->workers, g->connections,
            (unsigned long long)g->connections_timed_out,
            (unsigned long long)g->connections_over_limit, (unsigned long long)g->memory_budget,
            (unsigned long long)g->memory_reserved);
}

char *metrics_render(metrics *m, const metrics_gauges *g, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (f == NULL)
        return NULL;

    fprintf(f,
            "# HELP posenc_build_info The running version.\n"
            "# TYPE posenc_build_info gauge\n"
            "posenc_build_info{version=\"%s\"} 1\n",
            POSENC_VERSION);
    render_requests(f, m);
    render_latency(f, m);
    fprintf(f,
            "# HELP posenc_in_flight_requests Requests between headers "
            "and the last response byte.\n"
            "# TYPE posenc_in_flight_requests gauge\n"
            "posenc_in_flight_requests %u\n"
            "# HELP posenc_sending_responses Of those, answered: the response "
            "is going out.\n"
            "# TYPE posenc_sending_responses gauge\n"
            "posenc_sending_responses %u\n"
            "# HELP posenc_drain_cut_responses_total Responses still going out "
            "when a drain ended (--drain-timeout + --drain-send-timeout).\n"
            "# TYPE posenc_drain_cut_responses_total counter\n"
            "posenc_drain_cut_responses_total %llu\n",
            atomic_load_explicit(&m->in_flight, memory_order_relaxed),
            atomic_load_explicit(&m->sending, memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&m->drain_cut, memory_order_relaxed));
    fprintf(f,
            "# HELP posenc_request_bytes_total Request body bytes "
            "received.\n"
            "# TYPE posenc_request_bytes_total counter\n"
            "posenc_request_bytes_total %llu\n"
            "# HELP posenc_response_bytes_total Response body bytes "
            "sent.\n"
            "# TYPE posenc_response_bytes_total counter\n"
            "posenc_response_bytes_total %llu\n"
            "# HELP posenc_tokens_total Tokens processed (batch x "
            "tokens).\n"
            "# TYPE posenc_tokens_total counter\n"
            "posenc_tokens_total %llu\n",
            load(&m->request_bytes), load(&m->response_bytes), load(&m->tokens));
    render_errors(f, m);
    if (g != NULL)
        render_gauges(f, g);

    if (ferror(f)) {
        fclose(f);
        free(buf);
        return NULL;
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}

/*
 * metrics_scrape.h - one value of the server's /metrics, for the tests
 * that watch the server's counters while they load it.
 */
#ifndef METRICS_SCRAPE_H
#define METRICS_SCRAPE_H

#include "harness.h"

/* The value of the series (name and labels exactly as printed, e.g.
 * "posenc_memory_reserved_bytes") in s's /metrics now; -1 when the scrape
 * fails or the series is absent. */
double metric_value(const server *s, const char *series);

#endif /* METRICS_SCRAPE_H */

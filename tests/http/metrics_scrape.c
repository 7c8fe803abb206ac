/*
 * metrics_scrape.c - one value of /metrics (see metrics_scrape.h).
 */
#include "metrics_scrape.h"

#include <stdlib.h>
#include <string.h>

/* The value of series in the exposition text, or -1. */
static double find_series(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return -1;
}

double metric_value(const server *s, const char *series)
{
    http_resp r;
    http_get(s, "/metrics", &r);
    double v = r.status == 200 && r.body != NULL ? find_series(r.body, series) : -1;
    http_resp_free(&r);
    return v;
}

/*
 * probe.h - `posenc-server --check`: a health probe for Docker's
 * HEALTHCHECK that needs no curl in the image.
 */
#ifndef SERVER_PROBE_H
#define SERVER_PROBE_H

#include "config.h"

/* GET http://HOST:PORT/healthz over a plain socket (HOST 0.0.0.0 or ::
 * probes the loopback address; PORT is --probe-port when set). Returns 0 on a 200 answer, 1 otherwise
 * (with the reason on stderr). Gives up after a few seconds. */
int probe_healthz(const server_config *cfg);

#endif /* SERVER_PROBE_H */

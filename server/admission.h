/*
 * admission.h - the checks a request passes on its headers alone, before
 * any of its body is read.
 *
 * In this order: API key (401, when one is set, for every path but
 * /healthz and /readyz, unknown paths included: the contract puts it
 * before any other check; a key followed by a NUL byte is wrong; closed
 * when the message is also malformed), header syntax (header_syntax.h, an
 * encoded NUL in the path, a line libmicrohttpd dropped: 400, closed),
 * framing (framing.h: 400, or 501 for a transfer coding other than
 * chunked or chunked spelled otherwise; closed), a NUL byte in any header
 * value (400, closed), an Expect other than 100-continue (417, closed),
 * route (404; on --probe-port, every route but the probes too), method
 * (405), declared body size (413), media type (415),
 * then a connection past --max-connections (503; the open probes are
 * still served on it), draining and capacity (503 with Retry-After), and
 * the memory budget for a declared body (mem_budget.h: 413 past the whole
 * budget, 503 with Retry-After when not free now).
 *
 * A 503 is sent once the body (dropped as it arrives) is in, so that a
 * client still sending reads it instead of a reset; every other refusal
 * is answered at once, and the connection closed when a body was coming.
 */
#ifndef SERVER_ADMISSION_H
#define SERVER_ADMISSION_H

#include "request.h"

/* Runs the checks on req (REQ_NEW) for url and method as libmicrohttpd
 * gives them. Afterwards req is REQ_ANSWERED (refused at once),
 * REQ_REFUSED (a 503 waits for the body to end) or REQ_RECEIVING
 * (admitted: a compute route now holds a --max-inflight slot, and a
 * declared body has its buffer). Returns libmicrohttpd's MHD_YES or
 * MHD_NO. */
int admission_check(http_request *req, const char *url, const char *method);

/* Refuses req with 503 and the message fmt: at once without a body to
 * wait for, else REQ_REFUSED. Returns as admission_check. */
int admission_refuse(http_request *req, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* SERVER_ADMISSION_H */

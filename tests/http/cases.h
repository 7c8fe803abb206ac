/*
 * cases.h - HTTP tests as data: one request and what its answer must be,
 * and one runner for a table of them. Where a group is many small
 * request/answer pairs (the error table, 404/405/415, auth, limits), it is
 * a static table of http_case and a call to run_http_cases, or (for the
 * cases that need no C to build) a directory of data files, one directory
 * per case, read at run time by run_case_suite.
 */
#ifndef POSENC_TEST_CASES_H
#define POSENC_TEST_CASES_H

#include "harness.h"

/* The Content-Type to send no Content-Type header at all. */
#define NO_CTYPE ""

typedef struct http_case {
    /* the request */
    const char *name;   /* the label; NULL: "METHOD route body" (first 120 bytes) */
    const char *method; /* NULL: "POST" */
    const char *route;
    const char *body;           /* NULL: no body and no Content-Type */
    const char *ctype;          /* with a body; NULL: application/json, NO_CTYPE: none */
    const char *const *headers; /* NULL-terminated "Name: value" list, or NULL */
    bool chunked;               /* send the body with Transfer-Encoding: chunked */
    /* the answer */
    long status;            /* 0: 200 */
    const char *code;       /* an error of the contract with this code (expect_error);
                           NULL: a success (a JSON object unless status_only) */
    const char *field;      /* with code: see expect_error (NULL: not checked) */
    const char *msg_has;    /* with code: '|'-separated substrings of error.message */
    bool status_only;       /* without code: check the status alone (non-JSON bodies) */
    const char *header;     /* a response header that must be present ... */
    const char *header_has; /* ... and contain this text */
} http_case;

/* Send the case's request and record its checks. Returns true when the
 * status (and code) matched. */
bool run_http_case(const server *s, const http_case *c);

/* run_http_case for every entry. */
void run_http_cases(const server *s, const http_case *cases, size_t n);

#define RUN_HTTP_CASES(s, table) run_http_cases((s), (table), sizeof(table) / sizeof((table)[0]))

/* ---------------------------------------------------------------------- */
/* Cases as data files (tests/http/cases/README.md)                         */
/* ---------------------------------------------------------------------- */

/* Run every case of the suite directory CASES/<suite>, where CASES is
 * $POSENC_TEST_CASES or else tests/http/cases (relative to the directory
 * make test runs in): each directory below it holds one case (files
 * request, body, expect), read at run time, so that adding a case needs no
 * rebuild. Cases run in name order. Records a failed check for a suite
 * that is missing or holds no case, and for a case its files do not
 * describe; one check that the suite was read. Returns the cases run. */
size_t run_case_suite(const server *s, const char *suite);

#endif /* POSENC_TEST_CASES_H */

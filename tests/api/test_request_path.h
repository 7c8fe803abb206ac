/*
 * test_request_path.h - regression tests of the request path: one number
 * grammar for every body size and key order, scheme params in double and
 * merged from the model.
 */
#ifndef TEST_REQUEST_PATH_H
#define TEST_REQUEST_PATH_H

#include <stddef.h>

#include "api.h"

/* When r is streamed, read the stream `chunk` bytes at a time into
 * r->body (as the server sends it) and free the stream. */
void test_collect(api_response *r, size_t chunk);

#endif /* TEST_REQUEST_PATH_H */

/*
 * test_request_path.h - regression tests of the request path: one number
 * grammar for every body size and key order (issue 14 items 3-8), scheme
 * params in double and merged from the model (items 14, 15).
 */
#ifndef TEST_REQUEST_PATH_H
#define TEST_REQUEST_PATH_H

void test_request_path(void);

#endif /* TEST_REQUEST_PATH_H */

/*
 * test_string_spans.h - long strings read from the body's text (json_doc's
 * string spans) against jansson's own strings (tests/api/test_string_spans.c).
 */
#ifndef TEST_STRING_SPANS_H
#define TEST_STRING_SPANS_H

void test_string_spans(void);

#endif /* TEST_STRING_SPANS_H */

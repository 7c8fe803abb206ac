/*
 * test_layers.c - the pieces shared across layers: the model layer's error
 * kinds in the contract's table, the one overflow-checked multiply and the
 * one JSON string escaper as server/ sees it. Expected values come from the
 * contract's error table (the Errors table of the HTTP contract, as
 * api/openapi.yaml restates it), from arithmetic on
 * SIZE_MAX and from JSON's escaping rules (RFC 8259 section 7), not from
 * the code under test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../unit/check.h"
#include "api.h"
#include "json/tensor.h"
#include "model_errors.h"
#include "test_list.h"

static void test_desc_kinds(void)
{
    static const struct {
        desc_error_kind kind;
        int status;
        const char *code;
    } rows[] = {
        {DESC_E_TYPE, 400, "invalid_request"}, {DESC_E_KEY, 400, "invalid_request"},
        {DESC_E_SHAPE, 422, "invalid_shape"},  {DESC_E_RANGE, 422, "out_of_range"},
        {DESC_E_TOO_LARGE, 422, "too_large"},  {DESC_E_MISSING_WEIGHT, 422, "invalid_request"},
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        desc_error de;
        api_error err;
        desc_fail(&de, rows[i].kind, "model.params.base", "what %zu", i);
        char want[32];
        snprintf(want, sizeof want, "what %zu", i);
        int rc = api_desc(&err, -1, &de);
        CHECK(rc == -1 && api_error_status(err.kind) == rows[i].status &&
                  strcmp(api_error_code(err.kind), rows[i].code) == 0 &&
                  strcmp(err.message, want) == 0 && strcmp(err.field, "model.params.base") == 0,
              "desc kind %d -> %d %s '%s' at %s, want %d %s", (int)rows[i].kind,
              api_error_status(err.kind), api_error_code(err.kind), err.message, err.field,
              rows[i].status, rows[i].code);
    }
    desc_error de;
    api_error err;
    desc_fail_oom(&de);
    api_desc(&err, -1, &de);
    CHECK(api_error_status(err.kind) == 503 &&
              strcmp(api_error_code(err.kind), "unavailable") == 0 && err.field[0] == '\0',
          "desc out of memory -> 503 unavailable, no field (got %d %s)", api_error_status(err.kind),
          api_error_code(err.kind));
    /* a reader's own kinds pass through desc_json to the contract's */
    static const struct {
        json_error_kind kind;
        int status;
        const char *code;
    } json_rows[] = {
        {JSON_E_INVALID, 400, "invalid_request"}, {JSON_E_SHAPE, 422, "invalid_shape"},
        {JSON_E_RANGE, 422, "out_of_range"},      {JSON_E_NON_FINITE, 422, "non_finite"},
        {JSON_E_TOO_LARGE, 422, "too_large"},     {JSON_E_NO_MEMORY, 503, "unavailable"},
    };
    for (size_t i = 0; i < sizeof json_rows / sizeof json_rows[0]; i++) {
        json_fail(&de.json, json_rows[i].kind, "params.heads", "reader %zu", i);
        int rc = api_desc(&err, desc_json(&de, -1), &de);
        bool oom = json_rows[i].kind == JSON_E_NO_MEMORY;
        char want[32];
        snprintf(want, sizeof want, "reader %zu", i);
        CHECK(rc == -1 && de.kind == DESC_E_JSON &&
                  api_error_status(err.kind) == json_rows[i].status &&
                  strcmp(api_error_code(err.kind), json_rows[i].code) == 0 &&
                  strcmp(err.field, oom ? "" : "params.heads") == 0 &&
                  (oom || strcmp(err.message, want) == 0),
              "reader kind %d -> %d %s '%s' at '%s', want %d %s", (int)json_rows[i].kind,
              api_error_status(err.kind), api_error_code(err.kind), err.message, err.field,
              json_rows[i].status, json_rows[i].code);
    }
    /* the longest message the API can hold is not cut on the way */
    char longest[API_MESSAGE_MAX];
    memset(longest, 'x', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    desc_fail(&de, DESC_E_KEY, NULL, "%s", longest);
    api_desc(&err, -1, &de);
    CHECK(strcmp(err.message, longest) == 0, "a %zu-byte message arrives whole", strlen(longest));
    CHECK(api_desc(&err, 0, &de) == 0, "api_desc(0) is success");
}

static void test_mul_size(void)
{
    size_t out = 7;
    CHECK(mul_size(SIZE_MAX / 3, 3, &out) == 0 && out == SIZE_MAX / 3 * 3,
          "mul_size: (SIZE_MAX/3)*3 fits");
    out = 7;
    CHECK(mul_size(SIZE_MAX / 2 + 1, 2, &out) == -1 && out == 7,
          "mul_size: (SIZE_MAX/2+1)*2 overflows, *out untouched");
    CHECK(mul_size(0, SIZE_MAX, &out) == 0 && out == 0, "mul_size: 0*SIZE_MAX = 0");
    CHECK(mul_size((size_t)1 << 32, (size_t)1 << 31, &out) == 0 && out == (size_t)1 << 63,
          "mul_size: 2^32*2^31 = 2^63");
    CHECK(mul_size((size_t)1 << 32, (size_t)1 << 32, &out) == -1, "mul_size: 2^64 overflows");
}

static void test_escape(void)
{
    char buf[256];
    size_t len = 0;

    buf[0] = '\0';
    /* the vector of test_json_strings (api/json), as content without quotes */
    api_json_escape(buf, &len, sizeof buf, 8,
                    "a\"\\\n\x01\xc3\xa9\xe2\x82\xac|\xe2\x82|\x80|\xc0\xaf|\xed\xa0\x80\x7f\t\r");
    const char *want = "a\\\"\\\\\\n\\u0001\xc3\xa9\xe2\x82\xac|\\ufffd\\ufffd|\\ufffd|"
                       "\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\u007f\\t\\r";
    CHECK(strcmp(buf, want) == 0 && len == strlen(want), "api_json_escape: %s", buf);
    /* whole characters only: a two-byte character that would leave 8 or
     * fewer bytes free is left out, not cut in half */
    char small[15];
    len = 0;
    api_json_escape(small, &len, sizeof small, 8, "abcde\xc3\xa9");
    CHECK(len == 5 && strcmp(small, "abcde") == 0, "escape stops before a character: '%s'", small);
    len = 0;
    api_json_escape(small, &len, sizeof small - 1, 8, "abcd\n");
    CHECK(len == 4 && strcmp(small, "abcd") == 0, "escape stops before an escape: '%s'", small);
    /* appends after what is there */
    len = 3;
    memcpy(small, "{\"a", 4);
    api_json_escape(small, &len, sizeof small, 8, "\"");
    CHECK(len == 5 && strcmp(small, "{\"a\\\"") == 0, "escape appends at *len: '%s'", small);
}

void test_layers(void)
{
    test_desc_kinds();
    test_mul_size();
    test_escape();
}

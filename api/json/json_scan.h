/*
 * json_scan.h - posenc's JSON tokenizer: one token at a time over the
 * request body, strings decoded (escapes, surrogate pairs, UTF-8 checked)
 * into the scanner's own buffer, numbers read as int64 or double.
 *
 * Its errors are placed and worded as jansson 2.14's parser words them
 * (the error is on the token just read: its line, its column counted in
 * characters, "near" its text), so that a body posenc refuses says what
 * and where exactly as before; only the first error counts.
 */
#ifndef JSON_SCAN_H
#define JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json_limits.h"

enum json_token_kind {
    JSON_TOK_INVALID = -1,
    JSON_TOK_EOF = 0, /* else '{', '}', '[', ']', ':', ',' as themselves */
    JSON_TOK_STRING = 256,
    JSON_TOK_INTEGER,
    JSON_TOK_REAL,
    JSON_TOK_TRUE,
    JSON_TOK_FALSE,
    JSON_TOK_NULL
};

/* What an error is (the codec maps it to its own kinds). */
typedef enum json_scan_fault {
    JSON_FAULT_NONE = 0,
    JSON_FAULT_SYNTAX,
    JSON_FAULT_OVERFLOW_INT,  /* an integer past int64 */
    JSON_FAULT_OVERFLOW_REAL, /* a real past double */
    JSON_FAULT_DEPTH,         /* past JSON_MAX_DEPTH */
    JSON_FAULT_NO_MEMORY,
    JSON_FAULT_REFUSED /* charge refused the string buffer's growth */
} json_scan_fault;

typedef struct json_scanner {
    const char *text; /* borrowed: the body */
    size_t len, pos;
    int token;        /* the current token */
    size_t tok_start; /* its text: text[tok_start, pos) */

    bool utf8_fault;     /* the scan stopped at bytes that are not UTF-8 */
    const char *str_val; /* a string token's value (str_len bytes): in the body
                            when it has no escape, else in str */
    size_t str_len;
    bool str_has_nul; /* the value holds a \u0000 */
    bool str_clean;   /* all printable ASCII, no escape: the body's text is the value */
    char *str;        /* owned: decoded strings and number text */
    size_t str_cap;
    json_charge charge; /* asked before str grows past JSON_UNCHARGED_BYTES */
    size_t charged;     /* what str holds of it, given back when it is freed */
    int64_t integer;
    double real;
    json_scan_fault fault; /* the first error, JSON_FAULT_NONE while none */
    char message[200];     /* its text, jansson's wording */
    size_t fault_pos;      /* where it was met */
} json_scanner;

void json_scan_init(json_scanner *s, const char *text, size_t len);
void json_scan_free(json_scanner *s);

/* Read the next token into s->token (and its value). */
void json_scan_next(json_scanner *s);

/* Record an error on the current token (the first one only stays):
 * "what near 'token'", as jansson says it. Returns false. */
bool json_scan_fail(json_scanner *s, json_scan_fault fault, const char *what);

/* Line and column (characters) of byte `at`, counted as jansson counts. */
void json_scan_line_column(const char *text, size_t at, int *line, int *column);

/* How many bytes from text[p] on are printable ASCII other than '"' and
 * '\\' (0x20..0x7E). */
size_t json_scan_clean_run(const char *text, size_t p, size_t len);

#endif /* JSON_SCAN_H */

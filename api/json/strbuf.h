/*
 * strbuf.h - a growable byte buffer for response text.
 *
 * Appends never fail visibly: the first allocation failure marks the buffer
 * failed (sb->failed) and later appends do nothing, so a writer checks once
 * at the end. The buffer owns its memory until strbuf_detach().
 */
#ifndef STRBUF_H
#define STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct strbuf {
    char *data; /* owned */
    size_t len;
    size_t cap;
    bool failed;
} strbuf;

/* Make room for `extra` more bytes; returns a pointer to write them at, or
 * NULL (and marks the buffer failed). Commit with strbuf_advance(). */
char *strbuf_reserve(strbuf *sb, size_t extra);
void strbuf_advance(strbuf *sb, size_t n);

void strbuf_put(strbuf *sb, const char *bytes, size_t n);
void strbuf_puts(strbuf *sb, const char *s);
void strbuf_putc(strbuf *sb, char c);
void strbuf_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string literal with quotes and escapes (json_escape_char). */
void strbuf_put_json_string(strbuf *sb, const char *s);

/* The most bytes json_escape_char writes for one character. */
#define JSON_ESCAPE_MAX 6

/* The one JSON string escaper: the character at s (not its NUL) as string
 * content in out: `"` `\` \n \r \t escaped short, other control bytes
 * and DEL as \u00XX, a valid UTF-8 sequence as is, an invalid or truncated
 * one as \ufffd (one byte consumed). Returns the bytes written; *consumed
 * the bytes of s used (1-4). */
size_t json_escape_char(const char *s, char out[JSON_ESCAPE_MAX], size_t *consumed);

/* Hands the bytes to the caller (caller frees) and empties the buffer;
 * returns NULL if the buffer failed (its memory is then freed). */
char *strbuf_detach(strbuf *sb, size_t *len);

void strbuf_free(strbuf *sb);

#endif /* STRBUF_H */

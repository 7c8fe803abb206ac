/*
 * test_string_spans.c - long strings taken out of jansson's way must not
 * change any answer.
 *
 * The reference is jansson itself: a service whose string_span_min is
 * SIZE_MAX hands every string to jansson, as posenc did before string
 * spans. Each request below goes to it and to services that take strings
 * of at least 1, 63, 64 and 65 characters out (strings of 63..65 sit on
 * both sides of the 64 threshold), and the answers must be the same
 * status, the same error code and the same bytes, errors included. The
 * strings go where every reader meets them: base64 embeddings (good, and
 * bad at every position class), model names, scheme, encoding, return
 * items, params choices, values described in messages, and strings with
 * escapes, non-ASCII or control bytes (which stay jansson's).
 *
 * The codec-level checks prove the spans are really taken (the stand-in
 * is `""` until a reader asks) and the default threshold is where it says.
 */
#include "test_list.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "api.h"
#include "json/base64.h"
#include "json/json_doc.h"
#include "json/strbuf.h"

typedef struct answer {
    int status;
    char *code; /* owned, or NULL */
    char *body; /* owned */
    size_t len;
} answer;

static answer ask(const api_service *svc, bool apply, const char *body, size_t len)
{
    api_response r;
    answer a = {0};
    strbuf sb = {0};

    if (apply)
        api_apply(svc, NULL, body, len, &r);
    else
        api_encode(svc, NULL, body, len, &r);
    if (r.stream.read) {
        for (;;) {
            char *room = strbuf_reserve(&sb, 4096);
            size_t n = room ? r.stream.read(r.stream.state, room, 4096) : 0;
            if (n == API_STREAM_FAILED || n == 0)
                break;
            strbuf_advance(&sb, n);
        }
        r.stream.free(r.stream.state);
        r.stream = (api_body_stream){0};
        free(r.body);
        r.body = strbuf_detach(&sb, &r.body_len);
    }
    a.status = r.status;
    a.code = r.error_code ? strdup(r.error_code) : NULL;
    a.len = r.body_len;
    a.body = r.body;
    r.body = NULL;
    api_response_free(&r);
    return a;
}

static void answer_free(answer *a)
{
    free(a->code);
    free(a->body);
}

static bool same_answer(const answer *a, const answer *b)
{
    return a->status == b->status && (a->code == NULL) == (b->code == NULL) &&
           (!a->code || strcmp(a->code, b->code) == 0) && a->len == b->len &&
           memcmp(a->body, b->body, a->len) == 0;
}

enum { N_SERVICES = 5 };
static const size_t span_mins[N_SERVICES] = {SIZE_MAX, 1, 63, 64, 65};

/* Every service answers body as the jansson-only one does; 1 when they all
 * agree (counted into *compared). */
static int all_agree(api_service *const *svcs, bool apply, const char *body, size_t len,
                     const char *what, int *compared)
{
    answer ref = ask(svcs[0], apply, body, len);
    int ok = 1;

    for (int i = 1; i < N_SERVICES; i++) {
        answer got = ask(svcs[i], apply, body, len);
        if (!same_answer(&ref, &got)) {
            if (ok)
                fprintf(stderr,
                        "string spans (min %zu) change the answer to %s:\n  jansson: %d %.*s\n"
                        "  spans:   %d %.*s\n",
                        span_mins[i], what, ref.status, (int)(ref.len < 300 ? ref.len : 300),
                        ref.body, got.status, (int)(got.len < 300 ? got.len : 300), got.body);
            ok = 0;
        }
        answer_free(&got);
    }
    answer_free(&ref);
    ++*compared;
    return ok;
}

/* A string of n characters from a repeating alphabet (printable ASCII). */
static char *filler(size_t n, const char *alphabet)
{
    char *s = malloc(n + 1); /* owned: returned to the caller */
    size_t k = strlen(alphabet);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++)
        s[i] = alphabet[i % k];
    s[n] = '\0';
    return s;
}

/* The base64 text of `count` float32 values (i * 0.25 - 3), new. */
static char *floats_base64(size_t count)
{
    float *v = malloc(count * sizeof *v + 1);
    char *text = malloc(base64_encoded_len(count * 4) + 1);
    if (!v || !text) {
        free(v);
        free(text);
        return NULL;
    }
    for (size_t i = 0; i < count; i++)
        v[i] = (float)i * 0.25f - 3.0f;
    base64_writer w = {.out = text};
    base64_write(&w, v, count * 4);
    base64_finish(&w);
    *w.out = '\0';
    free(v);
    return text;
}

/* Bodies with a string S placed where a reader meets it ("%s" is S). */
static const char *const encode_templates[] = {
    "{\"shape\":[2,8],\"scheme\":\"%s\"}",
    "{\"shape\":[2,8],\"model\":\"%s\"}",
    "{\"shape\":[2,8],\"encoding\":\"%s\"}",
    "{\"shape\":[2,8],\"offset\":\"%s\"}",
    "{\"shape\":[2,8],\"offset\":{\"a\":[\"%s\",1]}}",
    "{\"shape\":[2,8],\"positions\":\"%s\"}",
    "{\"shape\":[2,8],\"embed_scale\":\"%s\"}",
    "{\"shape\":\"%s\"}",
    "{\"embeddings\":\"%s\"}",
    "{\"embeddings\":\"%s\",\"shape\":[2,8]}",
    "{\"embeddings\":\"%s\",\"shape\":[2,8],\"encoding\":\"base64\"}",
    "{\"embeddings\":[\"%s\"],\"shape\":[1,1]}",
    "{\"shape\":[2,8],\"scheme\":\"rope\",\"params\":{\"layout\":\"%s\"}}",
    "{\"shape\":[2,8],\"scheme\":\"rope\",\"params\":{\"scaling\":{\"type\":\"%s\",\"factor\":2}}}",
    "{\"shape\":[2,8],\"scheme\":\"rope\",\"params\":{\"scaling\":"
    "{\"type\":\"%s\",\"rope_type\":\"%s\",\"factor\":2}}}",
    "{\"shape\":[2,8],\"scheme\":\"rope\",\"params\":{\"scaling\":"
    "{\"type\":\"%s\",\"rope_type\":\"%sx\",\"factor\":2}}}",
    "{\"shape\":[2,8],\"%s\":1}",
    "{\"shape\":[2,8],\"model\":{\"d_model\":8,\"heads\":1,\"scheme\":\"%s\"}}",
    "[\"%s\"]",
    "\"%s\"",
    "{\"shape\":[2,8],\"scheme\":\"%s\" x}",
    "{\"shape\":[2,8],\"scheme\":\"%s\",\"scheme\":1}",
};

static const char *const apply_templates[] = {
    "{\"shape\":[2,512],\"embeddings\":\"%s\"}",
    "{\"embeddings\":[[1,2]],\"return\":[\"q\",\"%s\"]}",
    "{\"embeddings\":[[1,2]],\"model\":\"%s\"}",
    "{\"token_ids\":\"%s\"}",
};

/* body = template with every "%s" replaced by s; new. */
static char *fill_template(const char *template, const char *s, size_t *len)
{
    strbuf sb = {0};
    for (const char *p = template; *p;) {
        const char *hole = strstr(p, "%s");
        size_t n = hole ? (size_t)(hole - p) : strlen(p);
        strbuf_put(&sb, p, n);
        if (hole)
            strbuf_puts(&sb, s);
        p += n + (hole ? 2 : 0);
    }
    return strbuf_detach(&sb, len); /* NULL when it failed */
}

/* Strings of each kind and around each threshold. */
static size_t string_cases(char **out, size_t cap)
{
    static const char *const alphabets[] = {
        "abcdefghijklmnopqrstuvwxyz",      "ABCD", "rope", "sinusoidal",
        " !#$%&'()*+,-./~{}[]:;<=>?@^_`|",
    };
    size_t n = 0;
    static const size_t lengths[] = {1, 2, 4, 5, 62, 63, 64, 65, 66, 200, 5000};
    for (size_t a = 0; a < ARRAY_LEN(alphabets); a++)
        for (size_t l = 0; l < ARRAY_LEN(lengths) && n < cap; l++)
            out[n++] = filler(lengths[l], alphabets[a]);
    /* the contract's words, exactly */
    static const char *const words[] = {"rope",    "alibi",  "base64", "json",        "q",   "v",
                                        "default", "linear", "half",   "interleaved", "yarn"};
    for (size_t w = 0; w < ARRAY_LEN(words) && n < cap; w++)
        out[n++] = strdup(words[w]);
    /* what stays jansson's: escapes, non-ASCII, DEL (valid JSON), long */
    static const char *const tails[] = {"\\\"", "\\\\",    "\\u0041", "\\n",  "\xc3\xa9",
                                        "\x7f", "\\u00e9", "\xff",    "\x01", "\\u0000"};
    for (size_t t = 0; t < ARRAY_LEN(tails) && n + 2 <= cap; t++)
        for (size_t at = 0; at < 2; at++) {
            char *base = filler(70, "abcdefgh");
            size_t bl = base ? strlen(base) : 0, tl = strlen(tails[t]);
            char *s = base ? malloc(bl + tl + 1) : NULL;
            if (s) { /* the odd character first or last */
                if (at == 0) {
                    memcpy(s, tails[t], tl);
                    memcpy(s + tl, base, bl + 1);
                } else {
                    memcpy(s, base, bl);
                    memcpy(s + bl, tails[t], tl + 1);
                }
            }
            free(base);
            out[n++] = s;
        }
    return n;
}

/* base64 embeddings of [2,512] with one fault at each position class. */
static size_t base64_cases(char **out, size_t cap)
{
    size_t n = 0;
    char *good = floats_base64(2 * 512);
    if (!good)
        return 0;
    size_t len = strlen(good);
    const size_t positions[] = {0,       1,       2,       3,       4,       100,    len / 2,
                                len - 8, len - 5, len - 4, len - 3, len - 2, len - 1};
    const char bad_chars[] = {'=', '-', '_', '.', ' '};
    out[n++] = strdup(good);
    for (size_t p = 0; p < ARRAY_LEN(positions) && n < cap; p++)
        for (size_t c = 0; c < ARRAY_LEN(bad_chars) && n < cap; c++) {
            char *s = strdup(good);
            if (s)
                s[positions[p]] = bad_chars[c];
            out[n++] = s;
        }
    if (n + 4 <= cap) {
        out[n++] = strndup(good, len - 4);    /* one group short: wrong count */
        out[n++] = strndup(good, len - 1);    /* not a multiple of 4 */
        char *s = floats_base64(2 * 512 + 1); /* one float too many */
        out[n++] = s;
        s = strdup(good); /* a NaN: 0x7FC00000 as the first float, "AADAfw" */
        if (s)
            memcpy(s, "AADAfw", 6);
        out[n++] = s;
    }
    free(good);
    return n;
}

static void test_services_agree(void)
{
    api_service *svcs[N_SERVICES] = {0};
    api_error err;
    char *strings[160] = {0}, *b64[80] = {0};
    size_t n_strings = string_cases(strings, ARRAY_LEN(strings));
    size_t n_b64 = base64_cases(b64, ARRAY_LEN(b64));
    int compared = 0, disagreed = 0;

    for (int i = 0; i < N_SERVICES; i++) {
        api_limits limits = {.string_span_min = span_mins[i]};
        svcs[i] = api_service_new(&limits, &err);
        CHECK(svcs[i] != NULL, "a service with string_span_min %zu", span_mins[i]);
        if (!svcs[i])
            goto out;
    }
    for (size_t t = 0; t < ARRAY_LEN(encode_templates); t++)
        for (size_t k = 0; k < n_strings + n_b64; k++) {
            const char *s = k < n_strings ? strings[k] : b64[k - n_strings];
            size_t len = 0;
            char *body = s ? fill_template(encode_templates[t], s, &len) : NULL;
            if (!body)
                continue;
            disagreed += !all_agree(svcs, false, body, len, encode_templates[t], &compared);
            free(body);
        }
    for (size_t t = 0; t < ARRAY_LEN(apply_templates); t++)
        for (size_t k = 0; k < n_strings + n_b64; k++) {
            const char *s = k < n_strings ? strings[k] : b64[k - n_strings];
            size_t len = 0;
            char *body = s ? fill_template(apply_templates[t], s, &len) : NULL;
            if (!body)
                continue;
            disagreed += !all_agree(svcs, true, body, len, apply_templates[t], &compared);
            free(body);
        }
    CHECK(disagreed == 0 && compared > 1000,
          "long strings read from the body answer as jansson's strings do "
          "(%d of %d requests differ)",
          disagreed, compared);
out:
    for (size_t k = 0; k < n_strings; k++)
        free(strings[k]);
    for (size_t k = 0; k < n_b64; k++)
        free(b64[k]);
    for (int i = 0; i < N_SERVICES; i++)
        api_service_free(svcs[i]);
}

/* The spans are really taken, at the threshold, and filled in on demand. */
static void test_spans_taken(void)
{
    json_doc doc;
    json_codec_error ce;
    json_doc_limits limits = {.max_depth = 8, .max_values = 100};
    char *at_min = filler(JSON_STRING_SPAN_MIN, "xyz");
    char *below = filler(JSON_STRING_SPAN_MIN - 1, "xyz");
    size_t len = 0;
    char *body = NULL;

    if (!at_min || !below)
        goto out;
    size_t cap = 2 * JSON_STRING_SPAN_MIN + 64;
    body = malloc(cap);
    if (!body)
        goto out;
    snprintf(body, cap, "{\"a\":\"%s\",\"b\":[\"%s\",\"\"],\"c\":\"\"}", at_min, below);
    len = strlen(body);
    CHECK(json_doc_load(&doc, body, len, &limits, &ce) == 0, "a body with a long string loads");
    CHECK(doc.n_strings == 1,
          "only the string of JSON_STRING_SPAN_MIN characters is a span "
          "(got %zu)",
          doc.n_strings);
    const json_t *a = json_object_get(doc.root, "a");
    const json_t *b0 = json_array_get(json_object_get(doc.root, "b"), 0);
    CHECK(json_string_length(a) == 0, "the stand-in is \"\" until a reader asks");
    size_t text_len = 0;
    const char *text = json_doc_string_text(&doc, a, &text_len);
    CHECK(text == body + 6 && text_len == JSON_STRING_SPAN_MIN,
          "json_doc_string_text gives the long string straight from the body");
    const char *value = json_doc_string(&doc, a);
    CHECK(value && strcmp(value, at_min) == 0 && json_object_get(doc.root, "a") == a,
          "json_doc_string fills the stand-in in with the string's value, in place");
    CHECK(strcmp(json_string_value(b0), below) == 0, "a shorter string stays jansson's");
    CHECK(json_doc_string(&doc, json_object_get(doc.root, "c")) &&
              json_string_length(json_object_get(doc.root, "c")) == 0,
          "a real \"\" stays empty");
    json_doc_free(&doc);

    limits.string_span_min = SIZE_MAX;
    CHECK(json_doc_load(&doc, body, len, &limits, &ce) == 0 && doc.n_strings == 0 &&
              strcmp(json_string_value(json_object_get(doc.root, "a")), at_min) == 0,
          "string_span_min SIZE_MAX leaves every string to jansson");
    json_doc_free(&doc);
out:
    free(body);
    free(at_min);
    free(below);
}

void test_string_spans(void)
{
    test_spans_taken();
    test_services_agree();
}

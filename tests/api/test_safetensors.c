/*
 * test_safetensors.c - the safetensors reader (api/safetensors.c) on files
 * written here byte by byte: half and bfloat16 conversion at their edges,
 * every float dtype read back, and each malformed header refused with a
 * message naming the file and the tensor. The HTTP-level model tests
 * (tests/models) cover whole checkpoints; these run under valgrind and the
 * sanitizers with the rest of test_api.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "models/model_dir.h"
#include "models/model_file.h"
#include "models/safetensors.h"
#include "test_list.h"

static void conversions(void)
{
    static const struct {
        unsigned bits;
        float want;
    } half[] = {
        {0x0000, 0.0f},         {0x3c00, 1.0f},      {0xc000, -2.0f},    {0x0001, 0x1p-24f},
        {0x03ff, 0x1.ff8p-15f}, {0x0400, 0x1p-14f},  {0x7bff, 65504.0f}, {0x3555, 0x1.554p-2f},
        {0x7c00, INFINITY},     {0xfc00, -INFINITY},
    };
    bool ok = true;
    for (size_t i = 0; i < ARRAY_LEN(half); i++)
        ok &= st_half_to_float(half[i].bits) == half[i].want;
    CHECK(ok, "F16: zero, normals, subnormals, max, infinities");
    CHECK(signbit(st_half_to_float(0x8000)) && st_half_to_float(0x8000) == 0.0f, "F16 -0");
    CHECK(isnan(st_half_to_float(0x7e00)), "F16 NaN");
    CHECK(st_bf16_to_float(0x3f80) == 1.0f && st_bf16_to_float(0xc040) == -3.0f &&
              st_bf16_to_float(0x0001) == 0x1p-133f && st_bf16_to_float(0x4049) == 0x1.92p+1f,
          "BF16: the upper half of a float32");
}

/* ---- files ------------------------------------------------------------------ */

static char dir[64];

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* dir/model.safetensors with this header text and data. */
static void write_file(const char *header, const unsigned char *data, size_t n)
{
    char path[128];
    unsigned char len[8];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    put_le(len, strlen(header), 8);
    fwrite(len, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    fwrite(data, 1, n, f);
    fclose(f);
}

/* The data of the good file: a F32 [2,2], a F16 [3], a BF16 [2], a F64 [1]
 * and an I64 [1] nobody reads. */
static size_t good_data(unsigned char *d)
{
    const float f32[4] = {1.5f, -2.0f, 0.25f, 3.0f};
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &f32[i], 4);
        put_le(d + 4 * i, u, 4);
    }
    put_le(d + 16, 0x3c00, 2); /* 1 */
    put_le(d + 18, 0xb800, 2); /* -0.5 */
    put_le(d + 20, 0x0001, 2); /* 2^-24 */
    put_le(d + 22, 0x3f80, 2); /* 1 */
    put_le(d + 24, 0xc2c8, 2); /* -100 */
    double v = 0.1;
    uint64_t u;
    memcpy(&u, &v, 8);
    put_le(d + 26, u, 8);
    put_le(d + 34, 7, 8);
    return 42;
}

#define GOOD_HEADER                                                                                \
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"                          \
    "\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[16,22]},"                            \
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[22,26]},"                           \
    "\"d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[26,34]},"                            \
    "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[34,42]},"                            \
    "\"__metadata__\":{\"format\":\"pt\"}}"

static void reads(void)
{
    unsigned char data[64];
    size_t n = good_data(data);
    st_set *s = NULL;
    model_error err;
    tensor t;
    const char *dtype = NULL;

    write_file(GOOD_HEADER, data, n); /* a header length that is not a multiple of 8 */
    int rc = st_set_open(dir, &s, &err);
    CHECK(rc == 0, "good file opens: %s", rc ? err.message : "");
    if (rc)
        return;
    CHECK(st_set_has(s, "a") && st_set_has(s, "i") && !st_set_has(s, "z"), "st_set_has");
    size_t any[2] = {0, 2};
    CHECK(st_set_read(s, "a", 2, any, &t, &dtype, &err) == 0 && t.dim[0] == 2 &&
              t.data[0] == 1.5f && t.data[3] == 3.0f && strcmp(dtype, "F32") == 0,
          "F32 read, any rows");
    tensor_free(&t);
    size_t three = 3, two = 2, one = 1;
    CHECK(st_set_read(s, "h", 1, &three, &t, &dtype, &err) == 0 && t.data[1] == -0.5f &&
              t.data[2] == 0x1p-24f && strcmp(dtype, "F16") == 0,
          "F16 read, subnormal kept");
    tensor_free(&t);
    CHECK(st_set_read(s, "b", 1, &two, &t, &dtype, &err) == 0 && t.data[1] == -100.0f, "BF16");
    tensor_free(&t);
    CHECK(st_set_read(s, "d", 1, &one, &t, &dtype, &err) == 0 && t.data[0] == 0.1f, "F64");
    tensor_free(&t);
    CHECK(st_set_read(s, "i", 1, &one, &t, NULL, &err) != 0 && strstr(err.message, "tensor i") &&
              strstr(err.message, "I64") && t.data == NULL,
          "I64 is refused by name: %s", err.message);
    CHECK(st_set_read(s, "a", 2, (size_t[]){2, 3}, &t, NULL, &err) != 0 &&
              strstr(err.message, "[2, 2], expected [2, 3]") && t.data == NULL,
          "shape mismatch names both shapes: %s", err.message);
    CHECK(st_set_read(s, "zz", 1, &one, &t, NULL, &err) != 0 &&
              strstr(err.message, "no tensor zz") && err.kind == MODEL_E_TENSOR,
          "missing tensor: %s", err.message);
    st_set_close(s);
}

/* Each broken header must be refused at open, naming the file and what. */
static void refused(void)
{
    static const struct {
        const char *header;
        size_t data_len;
        const char *want;
    } bad[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,9]}}", 8, "out of range"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8, "needs 8"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,0]}}", 8, "out of range"},
        {"{\"a\":{\"dtype\":\"X9\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, "shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "data_offsets"},
        {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype"},
        {"{\"a\":[1]}", 8, "not an object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,8],\"data_offsets\":[0,8]}}", 8,
         "too large"},
        {"{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 8, "whole number"},
        {"[1, 2]", 8, "not a JSON object"},
        {"{\"a\": 1,", 8, "not valid JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "duplicate"},
    };
    unsigned char data[16] = {0};

    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        st_set *s = (st_set *)(uintptr_t)1;
        model_error err = {0};
        write_file(bad[i].header, data, bad[i].data_len);
        int rc = st_set_open(dir, &s, &err);
        CHECK(rc != 0 && s == NULL && strstr(err.message, "model.safetensors") &&
                  strstr(err.message, bad[i].want),
              "bad header %zu refused with '%s': %s", i, bad[i].want, err.message);
    }

    /* a header length past the end, and a file too short for one */
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unsigned char blob[12];
    put_le(blob, 1000, 8);
    memcpy(blob + 8, "{}  ", 4);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(blob, 1, sizeof blob, f);
        fclose(f);
    }
    st_set *s = NULL;
    model_error err;
    CHECK(st_set_open(dir, &s, &err) != 0 && strstr(err.message, "header length 1000"),
          "header length past the end: %s", err.message);
    f = fopen(path, "wb");
    if (f) {
        fwrite(blob, 1, 5, f);
        fclose(f);
    }
    CHECK(st_set_open(dir, &s, &err) != 0 && strstr(err.message, "truncated"), "5-byte file: %s",
          err.message);
    unlink(path);
    CHECK(st_set_open(dir, &s, &err) != 0 && strstr(err.message, "neither") &&
              err.kind == MODEL_E_FILE,
          "no weights at all: %s", err.message);
}

/* A posenc-format directory without wq: the loader names the tensor. */
static void loader_errors(void)
{
    char path[128];
    model_error err;
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fputs("{\"d_model\": 2, \"heads\": 1}", f);
    fclose(f);
    unsigned char data[16] = {0};
    write_file("{\"wk\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", data, 16);
    CHECK(model_load_dir("m", dir, false, 0, NULL, &err) == NULL &&
              strstr(err.message, "no tensor wq"),
          "posenc format without wq: %s", err.message);
    CHECK(model_load_dir("m", dir, true, 1, NULL, &err) == NULL && strstr(err.message, ":LAYER"),
          "posenc format with a layer: %s", err.message);
    f = fopen(path, "w");
    if (f) {
        fputs("{\"model_type\": \"llama\", \"hidden_size\": 2}", f);
        fclose(f);
    }
    CHECK(model_load_dir("m", dir, false, 0, NULL, &err) == NULL &&
              strstr(err.message, "config.json: missing key 'num_attention_heads'") &&
              err.kind == MODEL_E_KEY,
          "llama config without heads: %s", err.message);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
}

/* Read system calls this process made so far (syscr of /proc/self/io),
 * or -1 when it cannot be read. */
static long long read_calls(void)
{
    char line[128];
    long long n = -1;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "syscr: %lld", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* A 1 MiB config.json is read whole, in a few read calls (jansson's own
 * file reader made one a byte: 0.7 s a MiB), and parsed right; a syntax
 * error still says where. */
static void config_read_whole(void)
{
    char path[128];
    model_error err;
    const size_t pad = (size_t)1 << 20;
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fputs("{\"d_model\": 2, \"pad\": \"", f);
    for (size_t i = 0; i < pad; i++)
        fputc('a' + (int)(i % 26), f);
    fputs("\"}", f);
    fclose(f);
    long long before = read_calls();
    json_t *cfg = model_file_json(path, 0, &err);
    long long calls = read_calls() - before;
    const char *text = json_string_value(json_object_get(cfg, "pad"));
    CHECK(json_integer_value(json_object_get(cfg, "d_model")) == 2 && text && strlen(text) == pad &&
              text[pad - 1] == 'a' + (int)((pad - 1) % 26),
          "a 1 MiB config.json parsed: %s", cfg ? "wrong values" : err.message);
    /* Under valgrind, its own reads (debug info, translations) count in
     * the same /proc/self/io, so the count means nothing there. */
    const char *valgrind = getenv("VALGRIND");
    bool counted = before >= 0 && !(valgrind && *valgrind && strcmp(valgrind, "0") != 0);
    CHECK(!counted || calls < 64, "a 1 MiB config.json in %lld read calls, want a few", calls);
    json_decref(cfg);
    f = fopen(path, "w");
    if (f) {
        fputs("{\"d_model\": 2,\n  \"heads\" 1}", f);
        fclose(f);
    }
    CHECK(model_file_json(path, 0, &err) == NULL && strstr(err.message, "config.json: ") &&
              strstr(err.message, "line 2 column"),
          "a config.json syntax error says where: %s", err.message);
    unlink(path);
}

void test_safetensors(void)
{
    snprintf(dir, sizeof dir, "/tmp/posenc-st-XXXXXX");
    bool made = mkdtemp(dir) != NULL;
    CHECK(made, "mkdtemp");
    if (!made)
        return;
    conversions();
    reads();
    refused();
    loader_errors();
    config_read_whole();
    rmdir(dir);
}

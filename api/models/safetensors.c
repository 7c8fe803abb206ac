/*
 * safetensors.c - mapped, validated safetensors files and sharded sets
 * (see safetensors.h).
 */
#include "models/safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "models/model_file.h"

#define ST_MAX_NDIM 8

/* Every dtype of the safetensors format, with its width in bits: a file
 * may hold any of them; only the float ones can be read. */
typedef enum st_kind { K_OTHER = 0, K_F32, K_F16, K_BF16, K_F64 } st_kind;

static const struct {
    const char *name;
    unsigned bits;
    st_kind kind;
} dtypes[] = {
    {"F32", 32, K_F32},      {"F16", 16, K_F16},      {"BF16", 16, K_BF16},
    {"F64", 64, K_F64},      {"BOOL", 8, K_OTHER},    {"U8", 8, K_OTHER},
    {"I8", 8, K_OTHER},      {"F8_E5M2", 8, K_OTHER}, {"F8_E4M3", 8, K_OTHER},
    {"F8_E8M0", 8, K_OTHER}, {"I16", 16, K_OTHER},    {"U16", 16, K_OTHER},
    {"I32", 32, K_OTHER},    {"U32", 32, K_OTHER},    {"I64", 64, K_OTHER},
    {"U64", 64, K_OTHER},    {"C64", 64, K_OTHER},    {"F4", 4, K_OTHER},
    {"F6_E2M3", 6, K_OTHER}, {"F6_E3M2", 6, K_OTHER},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

/* One header entry, checked against the file. */
typedef struct st_entry {
    char *name;   /* owned */
    size_t dtype; /* index into dtypes */
    size_t ndim;
    uint64_t dim[ST_MAX_NDIM];
    uint64_t begin, end; /* relative to the data section */
} st_entry;

/* One mapped file. */
typedef struct st_file {
    char *path; /* owned */
    const unsigned char *map;
    size_t map_len;
    const unsigned char *data; /* map + 8 + header length */
    uint64_t data_len;
    st_entry *entries; /* owned */
    size_t n;
} st_file;

struct st_set {
    char *dir;    /* owned */
    char *source; /* owned: the single file's or the index's path */
    st_file *single;
    json_t *index; /* owned, sharded sets only */
    const json_t *weight_map;
    st_file **shards; /* opened shards, in the order first needed */
    size_t n_shards, cap_shards;
};

/* ---- helpers ------------------------------------------------------------ */

static char *path_join(const char *dir, const char *file)
{
    size_t a = strlen(dir), b = strlen(file);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, file, b + 1);
    return p;
}

/* A file that is not what it claims to be: an error, never a crash. */
__attribute__((format(printf, 2, 3))) static int bad(model_error *err, const char *fmt, ...)
{
    va_list ap;

    err->kind = MODEL_E_FILE;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* The same about one tensor of a file. */
__attribute__((format(printf, 2, 3))) static int bad_tensor(model_error *err, const char *fmt, ...)
{
    va_list ap;

    err->kind = MODEL_E_TENSOR;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(model_error *err)
{
    return model_nomem(err, "weights");
}

static uint64_t le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

float st_half_to_float(unsigned bits)
{
    unsigned sign = bits >> 15 & 1, exp = bits >> 10 & 0x1f, man = bits & 0x3ff;
    float v;

    if (exp == 0) /* zero or subnormal: man * 2^-24 */
        v = ldexpf((float)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexpf((float)(man | 0x400), (int)exp - 25);
    return sign ? -v : v;
}

float st_bf16_to_float(unsigned bits)
{
    uint32_t u = (uint32_t)(bits & 0xffff) << 16;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* "[2, 3]" of up to ST_MAX_NDIM dims; 0 in `want` prints as '*'. */
static void shape_text(const uint64_t *dim, size_t ndim, bool stars, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < ndim && used < cap; i++) {
        if (stars && dim[i] == 0)
            used += (size_t)snprintf(buf + used, cap - used, "%s*", i ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, cap - used, "%s%llu", i ? ", " : "",
                                     (unsigned long long)dim[i]);
    }
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

/* ---- one file ------------------------------------------------------------ */

static void st_file_close(st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap((void *)(uintptr_t)f->map, f->map_len);
    for (size_t i = 0; i < f->n; i++)
        free(f->entries[i].name);
    free(f->entries);
    free(f->path);
    free(f);
}

/* Checks one header entry `name` against the data section. */
static int parse_entry(const st_file *f, const char *name, const json_t *v, st_entry *e,
                       model_error *err)
{
    const json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    const json_t *offs = json_object_get(v, "data_offsets");
    const char *p = f->path;

    if (!json_is_object(v))
        return bad_tensor(err, "%s: tensor %s: the header entry is not an object", p, name);
    if (!json_is_string(dt))
        return bad_tensor(err,
                          "%s: tensor %s: dtype is missing or "
                          "not a string",
                          p, name);
    e->dtype = N_DTYPES;
    for (size_t k = 0; k < N_DTYPES; k++)
        if (strcmp(dtypes[k].name, json_string_value(dt)) == 0)
            e->dtype = k;
    if (e->dtype == N_DTYPES)
        return bad_tensor(err, "%s: tensor %s: unknown dtype '%.40s'", p, name,
                          json_string_value(dt));
    if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_NDIM)
        return bad_tensor(err,
                          "%s: tensor %s: shape must be a list of "
                          "at most %d non-negative integers",
                          p, name, ST_MAX_NDIM);
    uint64_t numel = 1;
    bool overflow = false;
    e->ndim = json_array_size(shape);
    for (size_t i = 0; i < e->ndim; i++) {
        const json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return bad_tensor(err,
                              "%s: tensor %s: shape must be a "
                              "list of non-negative integers",
                              p, name);
        e->dim[i] = (uint64_t)json_integer_value(d);
        if (e->dim[i] != 0 && numel > UINT64_MAX / 64 / e->dim[i])
            overflow = true;
        else
            numel *= e->dim[i];
    }
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)) ||
        json_integer_value(json_array_get(offs, 0)) < 0 ||
        json_integer_value(json_array_get(offs, 1)) < 0)
        return bad_tensor(err,
                          "%s: tensor %s: data_offsets must be "
                          "[begin, end], two non-negative integers",
                          p, name);
    e->begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
    e->end = (uint64_t)json_integer_value(json_array_get(offs, 1));
    char shp[160];
    shape_text(e->dim, e->ndim, false, shp, sizeof shp);
    if (e->begin > e->end || e->end > f->data_len)
        return bad_tensor(err,
                          "%s: tensor %s: data_offsets [%llu, %llu] "
                          "are out of range: the data section holds %llu bytes (truncated file?)",
                          p, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                          (unsigned long long)f->data_len);
    if (overflow)
        return bad_tensor(err, "%s: tensor %s: shape %s is too large", p, name, shp);
    uint64_t bits = numel * dtypes[e->dtype].bits;
    if (bits % 8 != 0)
        return bad_tensor(err,
                          "%s: tensor %s: %s %s is not a whole "
                          "number of bytes",
                          p, name, dtypes[e->dtype].name, shp);
    if (e->end - e->begin != bits / 8)
        return bad_tensor(err,
                          "%s: tensor %s: data_offsets [%llu, %llu] "
                          "hold %llu bytes, but %s %s needs %llu",
                          p, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                          (unsigned long long)(e->end - e->begin), dtypes[e->dtype].name, shp,
                          (unsigned long long)(bits / 8));
    e->name = strdup(name);
    return e->name ? 0 : oom(err);
}

static int by_begin(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* No two non-empty byte ranges may share a byte. */
static int check_overlap(const st_file *f, model_error *err)
{
    const st_entry **order = malloc((f->n ? f->n : 1) * sizeof *order);
    const st_entry *prev = NULL;
    int rc = 0;

    if (!order)
        return oom(err);
    for (size_t i = 0; i < f->n; i++)
        order[i] = &f->entries[i];
    qsort(order, f->n, sizeof *order, by_begin);
    for (size_t i = 0; i < f->n && rc == 0; i++) {
        const st_entry *e = order[i];
        if (e->begin == e->end)
            continue;
        if (prev && e->begin < prev->end)
            rc = bad_tensor(err,
                            "%s: tensor %s: data_offsets [%llu, %llu] overlap tensor %s's "
                            "[%llu, %llu]",
                            f->path, e->name, (unsigned long long)e->begin,
                            (unsigned long long)e->end, prev->name, (unsigned long long)prev->begin,
                            (unsigned long long)prev->end);
        prev = e;
    }
    free(order);
    return rc;
}

static int parse_header(st_file *f, model_error *err)
{
    uint64_t n = le64(f->map);
    json_error_t jerr;
    json_t *root = NULL;
    const char *key;
    json_t *v;
    int rc = -1;

    if (n > f->map_len - 8)
        return bad(err,
                   "%s: header length %llu runs past the end "
                   "of the file (%zu bytes)",
                   f->path, (unsigned long long)n, f->map_len);
    if (n > ST_MAX_HEADER_BYTES)
        return bad(err,
                   "%s: header length %llu is over the "
                   "limit of %zu bytes",
                   f->path, (unsigned long long)n, ST_MAX_HEADER_BYTES);
    f->data = f->map + 8 + n;
    f->data_len = f->map_len - 8 - n;
    root = json_loadb((const char *)f->map + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return bad(err,
                   "%s: the header is not valid JSON (line %d "
                   "column %d: %s)",
                   f->path, jerr.line, jerr.column, jerr.text);
    if (!json_is_object(root)) {
        bad(err, "%s: the header is not a JSON object", f->path);
        goto out;
    }
    f->entries = calloc(json_object_size(root) + 1, sizeof *f->entries);
    if (!f->entries) {
        oom(err);
        goto out;
    }
    json_object_foreach (root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(v)) {
                bad(err, "%s: __metadata__ is not an object", f->path);
                goto out;
            }
            continue;
        }
        if (parse_entry(f, key, v, &f->entries[f->n], err))
            goto out;
        f->n++;
    }
    rc = check_overlap(f, err);
out:
    json_decref(root);
    return rc;
}

static int st_file_open(const char *path, st_file **out, model_error *err)
{
    st_file *f = calloc(1, sizeof *f);
    off_t size;
    int fd = -1, rc = -1;

    *out = NULL;
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return oom(err);
    }
    if (model_file_open(path, &fd, &size, err))
        goto out;
    if (size < 8) {
        bad(err,
            "%s: truncated: %lld bytes, too short for the "
            "8-byte header length",
            path, (long long)size);
        goto out;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        bad(err, "%s: cannot map: %s", path, strerror(errno));
        goto out;
    }
    f->map = map;
    f->map_len = (size_t)size;
    rc = parse_header(f, err);
out:
    if (fd >= 0)
        close(fd);
    if (rc) {
        st_file_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

static const st_entry *find_entry(const st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->entries[i].name, name) == 0)
            return &f->entries[i];
    return NULL;
}

/* Element i of a float tensor as float. */
static float element(st_kind kind, const unsigned char *b, size_t i)
{
    switch (kind) {
    case K_F16:
        return st_half_to_float((unsigned)b[2 * i] | (unsigned)b[2 * i + 1] << 8);
    case K_BF16:
        return st_bf16_to_float((unsigned)b[2 * i] | (unsigned)b[2 * i + 1] << 8);
    case K_F32: {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
        float v;
        memcpy(&v, &u, sizeof v);
        return v;
    }
    case K_F64: {
        uint64_t u = le64(b + 8 * i);
        double v;
        memcpy(&v, &u, sizeof v);
        return (float)v;
    }
    case K_OTHER:
        break;
    }
    return NAN;
}

static int read_entry(const st_file *f, const st_entry *e, size_t ndim, const size_t *dims,
                      tensor *out, model_error *err)
{
    st_kind kind = dtypes[e->dtype].kind;
    uint64_t want[ST_MAX_NDIM];
    bool ok = e->ndim == ndim && ndim <= TENSOR_MAX_NDIM;
    size_t n = 1;

    memset(out, 0, sizeof *out);
    if (kind == K_OTHER)
        return bad_tensor(err,
                          "%s: tensor %s has dtype %s; posenc "
                          "reads F32, F16, BF16 or F64",
                          f->path, e->name, dtypes[e->dtype].name);
    for (size_t i = 0; i < ndim && i < ST_MAX_NDIM; i++) {
        want[i] = dims[i];
        ok = ok && (dims[i] == 0 || dims[i] == e->dim[i]);
    }
    if (!ok) {
        char got[160], exp[160];
        shape_text(e->dim, e->ndim, false, got, sizeof got);
        shape_text(want, ndim < ST_MAX_NDIM ? ndim : ST_MAX_NDIM, true, exp, sizeof exp);
        return bad_tensor(err, "%s: tensor %s has shape %s, expected %s", f->path, e->name, got,
                          exp);
    }
    for (size_t i = 0; i < ndim; i++) {
        if (mul_size(n, (size_t)e->dim[i], &n))
            return oom(err);
        out->dim[i] = (size_t)e->dim[i];
    }
    if (n > SIZE_MAX / sizeof(float) || !(out->data = malloc((n ? n : 1) * sizeof(float))))
        return oom(err);
    out->ndim = ndim;

    const unsigned char *src = f->data + e->begin;
    float *dst = out->data;
    size_t first_bad = SIZE_MAX;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        dst[i] = element(kind, src, i);
        if (!isfinite(dst[i]) && i < first_bad)
            first_bad = i;
    }
    if (first_bad != SIZE_MAX) {
        tensor_free(out);
        return bad_tensor(err,
                          "%s: tensor %s: element %zu is not a "
                          "finite float32",
                          f->path, e->name, first_bad);
    }
    return 0;
}

/* ---- sets ------------------------------------------------------------------ */

void st_set_close(st_set *s)
{
    if (!s)
        return;
    st_file_close(s->single);
    for (size_t i = 0; i < s->n_shards; i++)
        st_file_close(s->shards[i]);
    free(s->shards);
    json_decref(s->index);
    free(s->source);
    free(s->dir);
    free(s);
}

const char *st_set_source(const st_set *s)
{
    return s->source;
}

/* A shard name must stay inside the directory. */
static bool plain_file_name(const char *name)
{
    return name[0] != '\0' && strchr(name, '/') == NULL && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0;
}

static int open_index(st_set *s, model_error *err)
{
    const char *key;
    const json_t *v;

    if (!(s->index = model_file_json(s->source, 0, err)))
        return -1;
    s->weight_map = json_object_get(s->index, "weight_map");
    if (!json_is_object(s->index) || !json_is_object(s->weight_map))
        return bad(err, "%s: no \"weight_map\" object", s->source);
    json_object_foreach ((json_t *)(uintptr_t)s->weight_map, key, v)
        if (!json_is_string(v) || !plain_file_name(json_string_value(v)))
            return bad_tensor(err,
                              "%s: weight_map entry for tensor %s "
                              "must name a file in the same directory",
                              s->source, key);
    return 0;
}

int st_set_open(const char *dir, st_set **out, model_error *err)
{
    st_set *s = calloc(1, sizeof *s);
    struct stat st;

    *out = NULL;
    if (!s || !(s->dir = strdup(dir)) || !(s->source = path_join(dir, "model.safetensors"))) {
        st_set_close(s);
        return oom(err);
    }
    if (stat(s->source, &st) == 0 || errno != ENOENT) {
        if (st_file_open(s->source, &s->single, err))
            goto fail;
    } else {
        free(s->source);
        if (!(s->source = path_join(dir, "model.safetensors.index.json"))) {
            oom(err);
            goto fail;
        }
        if (stat(s->source, &st) != 0) {
            bad(err,
                "%s: found neither model.safetensors nor "
                "model.safetensors.index.json",
                dir);
            goto fail;
        }
        if (open_index(s, err))
            goto fail;
    }
    *out = s;
    return 0;
fail:
    st_set_close(s);
    return -1;
}

bool st_set_has(const st_set *s, const char *name)
{
    if (s->single)
        return find_entry(s->single, name) != NULL;
    return json_object_get(s->weight_map, name) != NULL;
}

/* The shard holding `name` (opening it on first use), or NULL + *err. */
static st_file *shard_for(st_set *s, const char *name, model_error *err)
{
    const char *file = json_string_value(json_object_get(s->weight_map, name));
    char *path;
    st_file *f;

    if (!file) {
        bad_tensor(err, "%s: no tensor %s in weight_map", s->source, name);
        return NULL;
    }
    if (!(path = path_join(s->dir, file))) {
        oom(err);
        return NULL;
    }
    for (size_t i = 0; i < s->n_shards; i++)
        if (strcmp(s->shards[i]->path, path) == 0) {
            free(path);
            return s->shards[i];
        }
    if (s->n_shards == s->cap_shards) {
        size_t cap = s->cap_shards ? 2 * s->cap_shards : 4;
        st_file **grown = realloc(s->shards, cap * sizeof *grown);
        if (!grown) {
            free(path);
            oom(err);
            return NULL;
        }
        s->shards = grown;
        s->cap_shards = cap;
    }
    int rc = st_file_open(path, &f, err);
    free(path);
    if (rc)
        return NULL;
    s->shards[s->n_shards++] = f;
    return f;
}

int st_set_read(st_set *s, const char *name, size_t ndim, const size_t *dims, tensor *out,
                const char **dtype, model_error *err)
{
    st_file *f = s->single ? s->single : shard_for(s, name, err);
    const st_entry *e;

    memset(out, 0, sizeof *out);
    if (!f)
        return -1;
    e = find_entry(f, name);
    if (!e) {
        if (s->single)
            return bad_tensor(err, "%s: no tensor %s", f->path, name);
        return bad_tensor(err,
                          "%s: no tensor %s, though %s lists it "
                          "in this file",
                          f->path, name, s->source);
    }
    if (read_entry(f, e, ndim, dims, out, err))
        return -1;
    if (dtype)
        *dtype = dtypes[e->dtype].name;
    return 0;
}

/*
 * safetensors.h - the weights of a model directory, read from safetensors
 * files as float32: one `model.safetensors`, or the shards listed by
 * `model.safetensors.index.json`.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of
 * JSON header {"<tensor>": {"dtype", "shape", "data_offsets": [begin, end]},
 * "__metadata__": {...}}, then the data section, to which the offsets are
 * relative. Opening a file maps it read-only and checks the whole header
 * against it before anything is read: every entry's dtype is a known one,
 * its shape a list of non-negative integers, its byte range inside the data
 * section and exactly as long as dtype and shape say, and no two ranges
 * overlap. A truncated or lying file is an error that names the file and
 * the tensor, never a read past the mapping. (Unused gaps between tensors
 * are allowed: they cannot make us read wrong bytes.)
 *
 * Only F32, F16, BF16 and F64 tensors can be read (converted to float32
 * once, element by element, independent of the host's byte order and of
 * alignment); other known dtypes may sit in the file (an int64
 * `position_ids` buffer, a bool mask) as long as nobody asks for them.
 * A value that is not finite in float32 is an error naming its index.
 *
 * The files stay mapped until st_set_close(); load what you need, then
 * close. Not thread-safe (model loading is single-threaded).
 */
#ifndef SAFETENSORS_H
#define SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>

#include "json/tensor.h"
#include "models/model_error.h"

/* Largest header accepted (the safetensors library's own limit). */
#define ST_MAX_HEADER_BYTES ((size_t)100 << 20)

/* The weights of one model directory. Opaque. */
typedef struct st_set st_set;

/* Open the weights of directory `dir`: dir/model.safetensors when it
 * exists, else dir/model.safetensors.index.json (whose shards are opened,
 * and checked, when a tensor in them is first read). On failure *out is
 * NULL and *err says which file and what is wrong. */
int st_set_open(const char *dir, st_set **out, model_error *err);

/* Frees the set and unmaps every file; accepts NULL. */
void st_set_close(st_set *s);

/* Where the weights come from: the path of model.safetensors or of the
 * index. Borrowed, valid until st_set_close. */
const char *st_set_source(const st_set *s);

/* Whether a tensor of that name exists (in the single file's header, or in
 * the index's weight_map). */
bool st_set_has(const st_set *s, const char *name);

/* Read tensor `name` as float32 into *out (new data; free with
 * tensor_free).
 *   ndim, dims  the expected shape; a dims[i] of 0 accepts any size there
 *   dtype       OUT (may be NULL): its dtype on disk, a static string
 * Errors, each naming the file and the tensor: the tensor is missing (or
 * its shard is missing or bad), its dtype is not F32/F16/BF16/F64, its
 * shape differs, a value is not finite in float32, out of memory. On
 * failure *out is empty. */
int st_set_read(st_set *s, const char *name, size_t ndim, const size_t *dims, tensor *out,
                const char **dtype, model_error *err);

/* One IEEE binary16 or bfloat16 value, given as its 16 bits, as float
 * (exact: both widen without rounding). Exposed for tests. */
float st_half_to_float(unsigned bits);
float st_bf16_to_float(unsigned bits);

#endif /* SAFETENSORS_H */

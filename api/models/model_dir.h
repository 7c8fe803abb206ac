/*
 * model_dir.h - a served model from a directory: `config.json` plus
 * `model.safetensors` (or its sharded form, see safetensors.h).
 *
 * Two kinds of config.json:
 * - posenc's own: the inline-model keys of the contract (d_model, heads,
 *   kv_heads, head_dim, scheme, params, norm) with the weights in the
 *   safetensors file under the contract's names (wq, wk, wv, and the
 *   optional bq, bk, bv, norm_weight, norm_bias, position_table, t5_bias,
 *   token_embedding). A config without `model_type` is this kind. wq, wk
 *   and wv are required; other tensors in the file are ignored.
 * - Hugging Face's, recognised by its `model_type`: one of the
 *   architectures of the spec table (hf_specs.c), loaded by the generic
 *   loader (hf_decoder.c) with the architecture's hooks. One
 *   attention layer is served (`layer`, default 0); only the tensors it
 *   needs are read.
 *
 * Every file is opened as a regular file without blocking (model_file.h);
 * errors are the loader's own (model_error.h).
 */
#ifndef MODEL_DIR_H
#define MODEL_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "models/model.h"
#include "models/model_error.h"

/* Load the model in `dir` under `name`. has_layer: a layer was given
 * (allowed for Hugging Face checkpoints only). warn (may be NULL) hears
 * what is accepted but suspicious (a rope_scaling key Hugging Face does not
 * know, a key its code ignores), one line each. Returns a new model, or
 * NULL with *err saying which file, which key or tensor, and what is
 * wrong. */
model *model_load_dir(const char *name, const char *dir, bool has_layer, size_t layer,
                      const model_warner *warn, model_error *err);

#endif /* MODEL_DIR_H */

/*
 * hf_text_model.h - which text model a Hugging Face config describes.
 *
 * Most configs are their text model. A wrapper config (a vision-language
 * or multimodal model: Gemma 3, Qwen2/2.5/3-VL, Qwen3.5, Mistral 3,
 * Llama 4, GLM-4.xV, EXAONE 4.5, ...) keeps it in its text_config object,
 * whose model_type picks the architecture (or the wrapper's own text
 * class, as Hugging Face's config class fixes it); Qwen2-VL, Qwen2.5-VL
 * and GLM-4.1V/4.5V configs written before transformers 5 keep the text
 * keys at their top level. A wrapper's tensors sit under one of
 * "model.language_model.", "language_model.model." or "model.".
 *
 * Configs posenc cannot serve at all (DeepSeek-V4, MiMo-V2-Flash, vision
 * and audio towers) are refused here, naming why.
 */
#ifndef HF_TEXT_MODEL_H
#define HF_TEXT_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "models/model_error.h"

typedef struct hf_text_model {
    const char *model_type;      /* borrowed (from the config, or static) */
    json_t *config;              /* owned reference: a wrapper's text keys; NULL: the config's */
    const char *const *prefixes; /* static: a wrapper's tensor prefixes; NULL: the spec's */
    const char *wrapper;         /* borrowed: the wrapper's model_type; NULL: none */
    bool text_config;            /* the keys came from a text_config object */
} hf_text_model;

/* The text model of cfg (an object whose model_type, `type`, is a
 * string), or -1 with *err set (a refused model_type, a text_config that
 * is not an object, a wrapper without its text model). On success the
 * caller owns t->config (NULL when cfg is its own text model). */
int hf_text_model_find(const json_t *cfg, const char *type, const char *cfg_path, hf_text_model *t,
                       model_error *err);

/* The wrapper model_types whose default text model the architecture table
 * serves, ", "-separated, into buf (cut at a whole name when too small). */
void hf_wrapper_names(char *buf, size_t size);

#endif /* HF_TEXT_MODEL_H */

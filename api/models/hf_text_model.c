/*
 * hf_text_model.c - the text model of a Hugging Face config: the config
 * itself, or a wrapper's text_config (see hf_text_model.h).
 *
 * The wrappers, from their configuration_<type>.py: a config class whose
 * sub_configs fix the text class (Gemma3Config: Gemma3TextConfig, ...)
 * builds that class whatever text_config's model_type says; an AutoConfig
 * sub-config (Mistral3Config, Exaone4_5Config, Glm46VConfig, Lfm2VlConfig,
 * Kimi-K2.5) builds the class of text_config's model_type, defaulting to
 * the wrapper's. Qwen2VLConfig, Qwen2_5_VLConfig, Glm4vConfig,
 * Glm4vMoeConfig and Ernie4_5_VLMoeConfig build their text config from the
 * top-level keys when text_config is absent; Qwen2VLTextConfig and Qwen2_5_VLTextConfig read a
 * rope type "mrope" as "default" (convert_rope_params_to_dict; the M-RoPE
 * sections only matter for vision positions: for text tokens t = h = w and
 * multimodal RoPE is 1-D RoPE).
 */
#include "models/hf_text_model.h"

#include <stdio.h>
#include <string.h>

#include "models/hf_spec.h"

typedef struct wrapper {
    const char *model_type;
    const char *text_type; /* the text class's model_type, or the AutoConfig default */
    bool auto_text;        /* text_config's own model_type picks the class */
    bool flat;             /* no text_config: the top-level keys are the text model's */
    bool mrope_is_default; /* a rope type "mrope" is Hugging Face's "default" */
    const char *renamed;   /* auto_text: a text model_type read as text_type */
} wrapper;

static const wrapper wrappers[] = {
    {"gemma3", "gemma3_text", false, false, false, NULL},
    {"gemma3n", "gemma3n_text", false, false, false, NULL},
    {"gemma4", "gemma4_text", false, false, false, NULL},
    {"qwen2_vl", "qwen2_vl_text", false, true, true, NULL},
    {"qwen2_5_vl", "qwen2_5_vl_text", false, true, true, NULL},
    {"qwen3_vl", "qwen3_vl_text", false, false, false, NULL},
    {"qwen3_vl_moe", "qwen3_vl_moe_text", false, false, false, NULL},
    {"qwen3_5", "qwen3_5_text", false, false, false, NULL},
    {"qwen3_5_moe", "qwen3_5_moe_text", false, false, false, NULL},
    {"mistral3", "mistral", true, false, false, NULL},
    {"llama4", "llama4_text", false, false, false, NULL},
    {"glm4v", "glm4v_text", false, true, false, NULL},
    {"glm4v_moe", "glm4v_moe_text", false, true, false, NULL},
    {"glm46v", "glm4v_text", true, false, false, NULL},
    {"ernie4_5_vl_moe", "ernie4_5_vl_moe_text", false, true, false, NULL},
    {"exaone4_5", "exaone4", true, false, false, "exaone4_5_text"},
    {"lfm2_vl", "lfm2", true, false, false, NULL},
    {"kimi_k25", "deepseek_v3", true, false, false, NULL},
};

/* Where a wrapper's text model keeps its tensors: transformers 5 and
 * Qwen3-VL / Qwen3.5 as released; Gemma 3, Mistral 3, Llama 4 as
 * released; Qwen2-VL / Qwen2.5-VL as released. */
static const char *const wrapper_prefixes[] = {"model.language_model.", "language_model.model.",
                                               "model.", NULL};

/* model_types refused outright, with the reason */
static const struct {
    const char *model_type, *why;
} refused[] = {
    {"deepseek_v4", "its compressed_sparse_attention / heavily_compressed_attention layers turn "
                    "compressed KV entries by window positions (rope blocks keyed main / "
                    "compress), which posenc does not model"},
    {"mimo_v2_flash", "its layers differ by type in rotated fraction, kv heads and v head size, "
                      "with attention sinks on the sliding layers, which posenc does not model"},
};

/* A vision or audio encoder's config (a wrapper's vision_config or
 * audio_config given on its own). */
static bool is_tower(const char *type)
{
    static const char *const names[] = {"pixtral", "siglip", "siglip2", "clip", "whisper", "vit"};
    static const char *const suffixes[] = {"_vision",       "_vision_model", "_vision_encoder",
                                           "_vision_tower", "_audio",        "_audio_encoder",
                                           "_audio_model"};
    size_t n = strlen(type);

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(type, names[i]) == 0)
            return true;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strcmp(type + n - k, suffixes[i]) == 0)
            return true;
    }
    return false;
}

static int check_refused(const char *type, const char *cfg_path, model_error *err)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (strcmp(type, refused[i].model_type) == 0)
            return model_fail(err, MODEL_E_VALUE, "%s: model_type '%s' is not supported: %s",
                              cfg_path, type, refused[i].why);
    if (is_tower(type))
        return model_fail(err, MODEL_E_VALUE,
                          "%s: model_type '%.60s' is a vision or audio tower, which posenc does "
                          "not serve: posenc serves the attention of text models (give the "
                          "wrapper's config.json, whose text model is served)",
                          cfg_path, type);
    return 0;
}

/* A config class's rope block when the config gives none (ApertusConfig:
 * llama3 scaling of rope_theta 12e6), as rope_parameters. */
static const struct {
    const char *model_type, *block;
} default_rope[] = {
    {"apertus", "{\"rope_type\": \"llama3\", \"rope_theta\": 12000000.0, \"factor\": 8.0, "
                "\"original_max_position_embeddings\": 8192, \"low_freq_factor\": 1.0, "
                "\"high_freq_factor\": 4.0}"},
};

/* t->config with the config class's rope block when `keys` have none. */
static int rope_default(const json_t *keys, hf_text_model *t, model_error *err)
{
    const json_t *rs = json_object_get(keys, "rope_scaling");
    const json_t *rp = json_object_get(keys, "rope_parameters");

    if ((rs && !json_is_null(rs)) || (rp && !json_is_null(rp)))
        return 0;
    for (size_t i = 0; i < sizeof default_rope / sizeof default_rope[0]; i++) {
        if (strcmp(t->model_type, default_rope[i].model_type) != 0)
            continue;
        json_t *block = json_loads(default_rope[i].block, 0, NULL); /* new */
        if (!t->config)
            t->config = json_deep_copy(keys);
        if (!block || !t->config) {
            json_decref(block);
            return model_nomem(err, "the config");
        }
        if (json_object_set_new(t->config, "rope_parameters", block)) /* steals block */
            return model_nomem(err, "the config");
    }
    return 0;
}

static const wrapper *find_wrapper(const char *type)
{
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++)
        if (strcmp(type, wrappers[i].model_type) == 0)
            return &wrappers[i];
    return NULL;
}

/* Qwen2-VL's rope type "mrope" as "default", in whichever block holds it. */
static int mrope_as_default(json_t *text)
{
    static const char *const blocks[] = {"rope_scaling", "rope_parameters"};

    for (size_t i = 0; i < 2; i++) {
        json_t *b = json_object_get(text, blocks[i]);
        const json_t *t = json_object_get(b, "rope_type");
        if (!t)
            t = json_object_get(b, "type");
        if (json_is_string(t) && strcmp(json_string_value(t), "mrope") == 0 &&
            json_object_set_new(b, "rope_type", json_string("default")))
            return -1;
    }
    return 0;
}

/* The text model's model_type in a text_config object. */
static int text_type_of(const json_t *tc, const wrapper *w, const char *type, const char *cfg_path,
                        const char **out, model_error *err)
{
    const json_t *t = json_object_get(tc, "model_type");

    if (w && !w->auto_text) {
        *out = w->text_type; /* the config class fixes it */
        return 0;
    }
    if (t && !json_is_string(t))
        return model_fail(err, MODEL_E_KEY, "%s: text_config.model_type must be a string",
                          cfg_path);
    if (!t && !w)
        return model_fail(err, MODEL_E_KEY,
                          "%s: text_config has no model_type (and '%.60s' is not a wrapper "
                          "whose text model posenc knows)",
                          cfg_path, type);
    *out = t ? json_string_value(t) : w->text_type;
    if (w && w->renamed && strcmp(*out, w->renamed) == 0)
        *out = w->text_type;
    return 0;
}

int hf_text_model_find(const json_t *cfg, const char *type, const char *cfg_path, hf_text_model *t,
                       model_error *err)
{
    const json_t *tc = json_object_get(cfg, "text_config");
    const wrapper *w = find_wrapper(type);
    const json_t *keys = cfg;

    memset(t, 0, sizeof *t);
    if (check_refused(type, cfg_path, err))
        return -1;
    if (tc && !json_is_null(tc) && !json_is_object(tc))
        return model_fail(err, MODEL_E_KEY, "%s: text_config must be an object", cfg_path);
    bool has_text = json_is_object(tc);
    t->model_type = type;
    if (!w && !has_text)
        return rope_default(cfg, t, err); /* the config is its text model */
    if (has_text) {
        if (text_type_of(tc, w, type, cfg_path, &t->model_type, err))
            return -1;
        keys = tc;
    } else if (w->flat) {
        t->model_type = w->text_type;
    } else {
        return model_fail(err, MODEL_E_KEY,
                          "%s: missing key 'text_config': model_type '%s' keeps its text "
                          "model (%s) there",
                          cfg_path, type, w->text_type);
    }
    t->wrapper = type;
    t->text_config = has_text;
    t->prefixes = wrapper_prefixes;
    if (!(t->config = json_deep_copy(keys)) ||
        (w && w->mrope_is_default && mrope_as_default(t->config))) {
        json_decref(t->config);
        t->config = NULL;
        return model_nomem(err, "the text config");
    }
    return rope_default(keys, t, err);
}

void hf_wrapper_names(char *buf, size_t size)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
        if (!hf_spec_find(wrappers[i].text_type))
            continue;
        int k = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", wrappers[i].model_type);
        if (k < 0 || (size_t)k >= size - n) {
            buf[n] = '\0'; /* no partial name */
            return;
        }
        n += (size_t)k;
    }
}

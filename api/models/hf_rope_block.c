/*
 * hf_rope_block.c - which rope block of config.json serves a layer, as
 * Hugging Face's configuration classes decide it (transformers 5,
 * modeling_rope_utils.py: RotaryEmbeddingConfigMixin.convert_rope_params_to_dict
 * and standardize_rope_params; the nesting architectures' own
 * convert_rope_params_to_dict in configuration_gemma3.py, _olmo3.py,
 * _modernbert.py).
 *
 * Flat architectures (every layer one block): the block is rope_scaling
 * when it is a non-empty object (`rope_scaling or rope_parameters`), else
 * rope_parameters, else the architecture's default block (Ministral 3's
 * __post_init__ sets one when rope_parameters is None). A rope_parameters keyed by layer types is refused for
 * them: their convert_rope_params_to_dict sets rope_theta in the outer
 * dict, whose keys are then no longer layer types, so Hugging Face reads
 * the whole as one flat block of the default rope and ignores the blocks.
 *
 * Nesting architectures (hf_rope_nesting): rope_parameters, when present,
 * holds one block per layer type (a missing one is {"rope_type":
 * "default"}); absent, both blocks start as {"rope_type": "default"}. A
 * legacy rope_scaling is then merged into full_attention's block (and
 * sliding_attention's for ModernBERT) with dict.update: the block's
 * rope_type, "default" when it was the starting block, stays unless
 * rope_scaling has a rope_type of its own, so a legacy {"type": "linear"}
 * is served as the default rope, as Hugging Face serves it (warned).
 * Each block's rope_theta is its own, else the architecture's top-level
 * key for that layer type, else its default. A flat rope_parameters (keys
 * that are not layer types) is refused: Hugging Face adds the two blocks
 * beside it and serves them, ignoring what the flat one says.
 *
 * standardize_rope_params' "Case 2" (several blocks) differs from "Case 1"
 * (one block) in two ways the builder (hf_rope.c) reproduces from
 * `nested`: original_max_position_embeddings comes from the block or
 * max_position_embeddings, never from the top level; and yarn's truncate
 * is read from the outer dict (config.rope_parameters.get("truncate",
 * True) in _compute_yarn_parameters), which holds layer types only, so a
 * block's truncate is ignored (warned) and the ramp is truncated.
 *
 * posenc always gives a layer its type's block. Hugging Face does so when
 * every key of rope_parameters is among the config's layer_types (true of
 * every released checkpoint: they have layers of both types).
 */
#include <string.h>

#include "models/hf.h"

/* The layer types a nested block may be keyed by, and the names of their
 * blocks (static, for messages and /info). */
static const char *const layer_types[] = {"full_attention", "sliding_attention",
                                          "chunked_attention", NULL};
static const char *const block_names[] = {"rope_parameters.full_attention",
                                          "rope_parameters.sliding_attention",
                                          "rope_parameters.chunked_attention", NULL};

static int layer_type_index(const char *name)
{
    for (int i = 0; layer_types[i]; i++)
        if (strcmp(layer_types[i], name) == 0)
            return i;
    return -1;
}

static bool nonempty_object(const json_t *v)
{
    return json_is_object(v) && json_object_size(v) > 0;
}

/* rope_scaling and rope_parameters, each absent (NULL) or an object. */
static int read_both(const hf_load *h, const json_t **rs, const json_t **rp, model_error *err)
{
    *rs = hf_get(h, HF_KEYS("rope_scaling"), NULL);
    *rp = hf_get(h, HF_KEYS("rope_parameters"), NULL);
    if (*rs && !json_is_object(*rs))
        return hf_config_fail(h, err, "rope_scaling must be an object");
    if (*rp && !json_is_object(*rp))
        return hf_config_fail(h, err, "rope_parameters must be an object");
    return 0;
}

/* A flat architecture's block: a copy of rope_scaling or rope_parameters,
 * else of its default block. */
static int flat_block(const hf_load *h, const hf_rope_keys *keys, json_t **block, const char **name,
                      model_error *err)
{
    const json_t *rs, *rp, *v;
    const char *key;

    if (read_both(h, &rs, &rp, err))
        return -1;
    const json_t *src = nonempty_object(rs) ? rs : rp;
    if (!src && keys && keys->default_block) {
        *name = "rope_parameters";
        *block = json_loads(keys->default_block, 0, NULL);
        return *block ? 0 : model_nomem(err, "the model");
    }
    *name = src == rs ? "rope_scaling" : "rope_parameters";
    json_object_foreach ((json_t *)(uintptr_t)src, key, v)
        if (json_is_object(v))
            return hf_value_fail(h, err,
                                 "%s.%s: rope parameters per layer type are not read by "
                                 "Hugging Face's %s (its configuration keeps one block for "
                                 "every layer)",
                                 *name, key, h->m->architecture);
    if (!src)
        return 0;
    *block = json_deep_copy(src);
    return *block ? 0 : model_nomem(err, "the model");
}

/* Every key of a nested rope_parameters names a layer type and holds an
 * object. */
static int check_nested(const hf_load *h, const json_t *rp, model_error *err)
{
    const char *key;
    const json_t *v;

    json_object_foreach ((json_t *)(uintptr_t)rp, key, v) {
        if (layer_type_index(key) < 0)
            return hf_value_fail(h, err,
                                 "rope_parameters.%.40s: Hugging Face's %s keeps its rope "
                                 "blocks by layer type (full_attention, sliding_attention) "
                                 "and ignores a flat block's keys; write the blocks nested",
                                 key, h->m->architecture);
        if (!json_is_object(v))
            return hf_config_fail(h, err, "rope_parameters.%s must be an object", key);
    }
    return 0;
}

/* dict.update(rope_scaling) on a block that already has a rope_type: a
 * legacy `type` no longer picks the rope. */
static void warn_shadowed_type(const hf_load *h, const json_t *block, const json_t *rs,
                               const char *name)
{
    const json_t *t = json_object_get(rs, "type");
    const json_t *rt = json_object_get(block, "rope_type");

    if (json_is_string(t) && json_is_string(rt) && !json_object_get(rs, "rope_type") &&
        strcmp(json_string_value(t), json_string_value(rt)) != 0)
        hf_warn(h,
                "rope_scaling.type '%.40s' is not used: Hugging Face's %s merges rope_scaling "
                "into %s, whose rope_type '%.40s' stays",
                json_string_value(t), h->m->architecture, name, json_string_value(rt));
}

/* setdefault("rope_theta", <the type's top-level key, else its default>) */
static int set_theta(const hf_load *h, const hf_rope_nesting *n, int type, json_t *block,
                     model_error *err)
{
    const char *key = type == 0 ? n->full_theta : n->sliding_theta;
    double theta = type == 0 ? n->full_default : n->sliding_default;

    if (json_object_get(block, "rope_theta"))
        return 0;
    if (key && hf_number(h, key, theta, true, &theta, err))
        return -1;
    /* OLMo 3 pops rope_theta for the full block; the sliding block's pop
     * then finds nothing and takes the default */
    double top;
    if (!key && n->full_theta && hf_get(h, HF_KEYS(n->full_theta), NULL) &&
        hf_number(h, n->full_theta, theta, true, &top, err) == 0 && top != theta)
        hf_warn(h,
                "%s %g is not used by %s layers: Hugging Face's %s reads it for the "
                "full_attention block only and gives the others %g",
                n->full_theta, top, layer_types[type], h->m->architecture, theta);
    if (json_object_set_new(block, "rope_theta", json_real(theta)))
        return model_nomem(err, "the model");
    return 0;
}

/* A block of a rope_parameters used as written (Gemma 4: Gemma4TextConfig
 * converts nothing; Gemma4TextRotaryEmbedding reads rope_parameters[type]
 * ["rope_type"], the rope function its ["rope_theta"]). */
static int written_block(const hf_load *h, const hf_rope_nesting *n, const json_t *rp, int type,
                         json_t **block, model_error *err)
{
    json_t *absent = rp ? NULL : json_loads(n->as_written, 0, NULL); /* owned */
    const json_t *src = json_object_get(rp ? rp : absent, layer_types[type]);

    if (!rp && !absent)
        return model_nomem(err, "the model");
    *block = src ? json_deep_copy(src) : NULL;
    json_decref(absent);
    if (!src)
        return hf_value_fail(h, err,
                             "rope_parameters has no %s block: Hugging Face's %s reads "
                             "rope_parameters[\"%s\"] for its %s layers and fails",
                             layer_types[type], h->m->architecture, layer_types[type],
                             layer_types[type]);
    if (!*block)
        return model_nomem(err, "the model");
    static const char *const needed[] = {"rope_type", "rope_theta", NULL};
    for (const char *const *k = needed; *k; k++)
        if (!json_object_get(*block, *k))
            return hf_value_fail(h, err,
                                 "%s has no %s: Hugging Face's %s reads it from the block "
                                 "(its configuration fills in nothing)",
                                 block_names[type], *k, h->m->architecture);
    return 0;
}

static int nested_block(const hf_load *h, const hf_rope_nesting *n, int type, json_t **block,
                        model_error *err)
{
    const json_t *rs, *rp;

    if (read_both(h, &rs, &rp, err) || (rp && check_nested(h, rp, err)))
        return -1;
    if (n->as_written)
        return written_block(h, n, rp, type, block, err);
    const json_t *src = rp ? json_object_get(rp, layer_types[type]) : NULL;
    bool legacy = rs && (type == 0 || (type == 1 && n->legacy_into_sliding));
    if (legacy && rp && !src)
        return hf_value_fail(h, err,
                             "rope_scaling is given with a rope_parameters that has no %s "
                             "block: Hugging Face's %s fails updating it",
                             layer_types[type], h->m->architecture);
    *block = src ? json_deep_copy(src) : json_pack("{s:s}", "rope_type", "default");
    if (!*block)
        return model_nomem(err, "the model");
    if (legacy) {
        warn_shadowed_type(h, *block, rs, block_names[type]);
        if (json_object_update(*block, (json_t *)(uintptr_t)rs))
            return model_nomem(err, "the model");
    }
    return set_theta(h, n, type, *block, err);
}

int hf_rope_block(const hf_load *h, const hf_rope_keys *keys, const char *layer_type,
                  json_t **block, const char **name, bool *nested, model_error *err)
{
    const hf_rope_nesting *n = keys ? keys->nesting : NULL;

    *block = NULL;
    *name = NULL;
    *nested = n != NULL;
    if (!n)
        return flat_block(h, keys, block, name, err);
    int type = layer_type ? layer_type_index(layer_type) : 0;
    if (type < 0 || type > 1)
        return hf_value_fail(h, err, "layer %zu is %.40s: %s has no rope block for it", h->layer,
                             layer_type, h->m->architecture);
    *name = block_names[type];
    if (nested_block(h, n, type, block, err)) {
        json_decref(*block);
        *block = NULL;
        return -1;
    }
    return 0;
}

/*
 * hf_rope.c - RoPE parameters from one rope block of a config.json (the
 * block hf_rope_block.c picks for the layer), with the newest Hugging Face
 * semantics (modeling_rope_utils.py, standardize_rope_params and the
 * _compute_*_parameters functions):
 *
 * - The type is the block's `rope_type`, else `type`, else "default".
 * - theta: the block's rope_theta, else the top-level rope_theta, else 1e4
 *   (a nested block always has one: hf_rope_block.c sets it).
 * - partial_rotary_factor: which of the top-level key and the block's
 *   wins depends on when Hugging Face reads it. convert_rope_params_to_dict
 *   setdefaults the top-level value into the block (the block's wins);
 *   standardize_rope_params, run again by every non-default rope function
 *   once the config's leftover keys are attributes, overwrites the block's
 *   with the top-level value. So the top-level key wins for a scaled rope
 *   and for architectures that declare it (GPT-NeoX, Phi: an attribute from
 *   the start), and the block's wins for the default rope of the others.
 * - original_max_position_embeddings (yarn, llama3, longrope): in a flat
 *   block the top-level key wins (Phi-3 keeps it there), else the block's,
 *   else max_position_embeddings; in a nested block (standardize_rope_
 *   params' per-layer-type case) the block's, else max_position_embeddings.
 *   dynamic uses max_position_embeddings (HF's dynamic NTK compares against
 *   it); posenc calls that value original_max_position_embeddings.
 * - A missing yarn factor is max_position_embeddings / original (HF R3); a
 *   missing longrope factor likewise (when max_position_embeddings is
 *   there; otherwise 1).
 * - yarn's truncate is read from the block when flat; nested, Hugging Face
 *   reads it from the outer rope_parameters, which never has it: true.
 * The result is written out explicitly (every derived default visible in
 * /info) and checked by computing the frequencies once, so a bad value
 * stops the server at startup rather than failing every request.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/hf.h"
#include "models/scheme.h"
#include "json/json_fields.h"

/* The rope types, indexed by rope_type. */
typedef enum rope_type {
    RT_DEFAULT,
    RT_LINEAR,
    RT_DYNAMIC,
    RT_YARN,
    RT_LLAMA3,
    RT_LONGROPE,
    RT_PROPORTIONAL /* not a scaling: params.rope_type (and a linear factor) */
} rope_type;
static const char *const scaling_types[] = {"default", "linear",   "dynamic",      "yarn",
                                            "llama3",  "longrope", "proportional", NULL};

/* The block being read (hf_rope_block's). */
typedef struct rope_src {
    const json_t *block; /* borrowed; NULL: none */
    const char *name;    /* for messages: "rope_scaling", "rope_parameters.full_attention" */
    bool nested;         /* one of a nested rope_parameters */
} rope_src;

/* The keys Hugging Face reads for each type (modeling_rope_utils.py, the
 * _validate_*_rope_parameters functions: required and optional keys), after
 * the ones every block may hold. Anything else gets HF's warning. */
static const char *const common_keys[] = {"rope_type", "type", "rope_theta",
                                          "partial_rotary_factor", NULL};
static const char *const *const type_keys[] = {
    [RT_DEFAULT] = (const char *const[]){NULL},
    [RT_LINEAR] = (const char *const[]){"factor", NULL},
    [RT_DYNAMIC] = (const char *const[]){"factor", "original_max_position_embeddings", NULL},
    [RT_YARN] = (const char *const[]){"factor", "attention_factor", "beta_fast", "beta_slow",
                                      "mscale", "mscale_all_dim",
                                      "original_max_position_embeddings", "truncate", NULL},
    [RT_LLAMA3] = (const char *const[]){"factor", "low_freq_factor", "high_freq_factor",
                                        "original_max_position_embeddings", NULL},
    [RT_LONGROPE] = (const char *const[]){"short_factor", "long_factor", "factor",
                                          "attention_factor", "original_max_position_embeddings",
                                          NULL},
    /* its validation lists no factor, but _compute_proportional_rope_
     * parameters divides by one when given */
    [RT_PROPORTIONAL] = (const char *const[]){"factor", NULL},
};

static bool listed(const char *const *keys, const char *key)
{
    for (; *keys; keys++)
        if (strcmp(*keys, key) == 0)
            return true;
    return false;
}

/* One warning line per key of the block that HF does not read for the type
 * (HF logs "Unrecognized keys in `rope_scaling`" and goes on), but for the
 * keys the architecture reads itself (keys->block_keys). A nested block's
 * yarn truncate is read by no one (see the file comment). */
static void warn_unknown_keys(const hf_load *h, const rope_src *src, rope_type type,
                              const hf_rope_keys *keys)
{
    const char *key;
    const json_t *v;

    json_object_foreach ((json_t *)(uintptr_t)src->block, key, v) {
        if (src->nested && type == RT_YARN && strcmp(key, "truncate") == 0)
            hf_warn(h,
                    "%s.truncate is ignored: Hugging Face's yarn reads truncate from the "
                    "outer rope_parameters when the blocks are nested, and truncates",
                    src->name);
        else if (!listed(common_keys, key) && !listed(type_keys[type], key) &&
                 !(keys && keys->block_keys && listed(keys->block_keys, key)))
            hf_warn(h,
                    "%s.%s is not a key of rope type '%s'; ignored, as Hugging Face "
                    "ignores it",
                    src->name, key, scaling_types[type]);
    }
}

/* Copy block[key] into sc when present: a number (or, with is_bool, a
 * boolean). required: absent is an error. */
static int copy_key(const hf_load *h, const char *bkey, const json_t *block, const char *key,
                    bool required, bool is_bool, json_t *sc, model_error *err)
{
    const json_t *v = json_object_get(block, key);

    if (!v || json_is_null(v)) {
        if (required)
            return hf_config_fail(h, err, "%s.%s is missing (required for this rope type)", bkey,
                                  key);
        return 0;
    }
    if (is_bool ? !json_is_boolean(v) : !json_is_number(v))
        return hf_config_fail(h, err, "%s.%s must be %s", bkey, key,
                              is_bool ? "true or false" : "a number");
    if (json_object_set_new(sc, key, json_deep_copy(v)))
        return model_nomem(err, "the model");
    return 0;
}

/* A list of numbers of length n (longrope short/long factors). */
static int copy_list(const hf_load *h, const char *bkey, const json_t *block, const char *key,
                     size_t n, json_t *sc, model_error *err)
{
    const json_t *v = json_object_get(block, key), *item;
    size_t i;

    if (!json_is_array(v))
        return hf_config_fail(h, err, "%s.%s must be a list of numbers (required for longrope)",
                              bkey, key);
    json_array_foreach (v, i, item)
        if (!json_is_number(item))
            return hf_config_fail(h, err, "%s.%s[%zu] is not a number", bkey, key, i);
    if (json_array_size(v) != n)
        return hf_value_fail(h, err, "%s.%s has %zu entries; rotary_dim/2 = %zu", bkey, key,
                             json_array_size(v), n);
    if (json_object_set_new(sc, key, json_deep_copy(v)))
        return model_nomem(err, "the model");
    return 0;
}

static int set_number(json_t *obj, const char *key, double v, model_error *err)
{
    if (json_object_set_new(obj, key, json_real(v)))
        return model_nomem(err, "the model");
    return 0;
}

/* original_max_position_embeddings and max_position_embeddings, as HF
 * resolves them (see the file comment). 0 = absent. */
static int context_lengths(const hf_load *h, const rope_src *src, rope_type type, int64_t *orig,
                           int64_t *max_pos, model_error *err)
{
    const char *bkey = src->name;
    const json_t *in_block = json_object_get(src->block, "original_max_position_embeddings");

    if (hf_int(h, HF_KEYS("max_position_embeddings"), false, 0, 1, INT64_MAX / 2, max_pos, err) ||
        (!src->nested && hf_int(h, HF_KEYS("original_max_position_embeddings"), false, 0, 1,
                                INT64_MAX / 2, orig, err)))
        return -1;
    if (type == RT_DYNAMIC) {
        if (!*max_pos)
            return hf_config_fail(h, err, "dynamic rope scaling needs max_position_embeddings");
        *orig = *max_pos;
        return 0;
    }
    if (*orig)
        return 0;
    if (in_block && !json_is_null(in_block)) {
        if (!json_is_integer(in_block) || json_integer_value(in_block) < 1)
            return hf_config_fail(h, err,
                                  "%s.original_max_position_embeddings must be an "
                                  "integer >= 1",
                                  bkey);
        *orig = json_integer_value(in_block);
        return 0;
    }
    if (!*max_pos)
        return hf_config_fail(h, err,
                              "%s needs original_max_position_embeddings (in %s or at "
                              "the top level) or max_position_embeddings",
                              bkey, bkey);
    *orig = *max_pos;
    return 0;
}

/* llama3 with low_freq_factor == high_freq_factor: valid, with no band
 * between the frequencies kept and the ones divided by factor (Hugging Face
 * warns and serves it; contract 1.2). */
static void warn_flat_llama3(const hf_load *h, const char *bkey, const json_t *sc)
{
    double low = json_number_value(json_object_get(sc, "low_freq_factor"));

    if (low == json_number_value(json_object_get(sc, "high_freq_factor")))
        hf_warn(h,
                "%s.low_freq_factor = %s.high_freq_factor = %g: no wavelengths are smoothed; "
                "those above original_max_position_embeddings / %g are divided by factor, the "
                "others kept",
                bkey, bkey, low, low);
}

static int build_scaling(const hf_load *h, const rope_src *src, rope_type type, size_t rotary_dim,
                         json_t *sc, model_error *err)
{
    const char *bkey = src->name;
    const json_t *block = src->block;
    int64_t orig = 0, max_pos = 0;

    if (json_object_set_new(sc, "type", json_string(scaling_types[type])))
        return model_nomem(err, "the model");
    if (type != RT_LINEAR && context_lengths(h, src, type, &orig, &max_pos, err))
        return -1;
    if (orig && json_object_set_new(sc, "original_max_position_embeddings", json_integer(orig)))
        return model_nomem(err, "the model");
    const json_t *factor = json_object_get(block, "factor");
    bool has_factor = factor && !json_is_null(factor);
    if (has_factor && !json_is_number(factor)) /* not taken as absent */
        return hf_config_fail(h, err, "%s.factor must be a number", bkey);
    switch (type) {
    case RT_DEFAULT:
    case RT_PROPORTIONAL: /* proportional_params */
        return 0;
    case RT_LINEAR:
    case RT_DYNAMIC:
        return copy_key(h, bkey, block, "factor", true, false, sc, err);
    case RT_YARN:
        if (has_factor ? copy_key(h, bkey, block, "factor", true, false, sc, err)
            : !max_pos ? hf_config_fail(h, err,
                                        "%s.factor is missing and there is no "
                                        "max_position_embeddings to derive it from",
                                        bkey)
                       : set_number(sc, "factor", (double)max_pos / (double)orig, err))
            return -1;
        return copy_key(h, bkey, block, "attention_factor", false, false, sc, err) ||
                       copy_key(h, bkey, block, "beta_fast", false, false, sc, err) ||
                       copy_key(h, bkey, block, "beta_slow", false, false, sc, err) ||
                       copy_key(h, bkey, block, "mscale", false, false, sc, err) ||
                       copy_key(h, bkey, block, "mscale_all_dim", false, false, sc, err) ||
                       (!src->nested && copy_key(h, bkey, block, "truncate", false, true, sc, err))
                   ? -1
                   : 0;
    case RT_LLAMA3:
        if (copy_key(h, bkey, block, "factor", true, false, sc, err) ||
            copy_key(h, bkey, block, "low_freq_factor", true, false, sc, err) ||
            copy_key(h, bkey, block, "high_freq_factor", true, false, sc, err))
            return -1;
        warn_flat_llama3(h, bkey, sc);
        return 0;
    case RT_LONGROPE:
        if (has_factor ? copy_key(h, bkey, block, "factor", true, false, sc, err)
            : max_pos  ? set_number(sc, "factor", (double)max_pos / (double)orig, err)
                       : 0)
            return -1;
        return copy_list(h, bkey, block, "short_factor", rotary_dim / 2, sc, err) ||
                       copy_list(h, bkey, block, "long_factor", rotary_dim / 2, sc, err) ||
                       copy_key(h, bkey, block, "attention_factor", false, false, sc, err)
                   ? -1
                   : 0;
    }
    return 0;
}

/* The frequencies must be computable: for longrope with both factor lists. */
static int check_frequencies(const hf_load *h, const json_t *params, size_t head_dim,
                             size_t rotary_dim, model_error *err)
{
    scheme s;
    desc_error inner;
    double *inv_freq = NULL, att;
    int rc = -1;

    if (scheme_parse(SCHEME_ROPE, params, "rope", &s, &inner))
        return hf_value_fail(h, err, "%s", inner.json.message);
    pe_rope rope = {.base = s.base,
                    .head_dim = head_dim,
                    .rotary_dim = rotary_dim,
                    .layout = s.rope_layout,
                    .scaling = s.scaling,
                    .proportional = s.rope_proportional,
                    .proportion = s.has_partial_rotary_factor ? s.partial_rotary_factor : 1.0};
    if (rotary_dim < 2 || rotary_dim % 2 || rotary_dim > head_dim) {
        hf_value_fail(h, err,
                      "the rotary width %zu (head_dim %zu x partial_rotary_factor) must "
                      "be even and in [2, head_dim]",
                      rotary_dim, head_dim);
        goto out;
    }
    if (!(inv_freq = malloc(rotary_dim / 2 * sizeof *inv_freq))) {
        model_nomem(err, "the model");
        goto out;
    }
    double orig = s.scaling.original_max_position_embeddings;
    if (pe_rope_frequencies(&rope, 1.0, inv_freq, &att) != PE_OK ||
        pe_rope_frequencies(&rope, orig + 2.0, inv_freq, &att) != PE_OK) {
        hf_value_fail(h, err,
                      "the rope parameters cannot be computed (rope_theta, factor, "
                      "original_max_position_embeddings and the type's own keys must be "
                      "positive; dynamic needs a rotary width > 2)");
        goto out;
    }
    /* yarn's factor from mscale/mscale_all_dim, get_mscale(f, mscale) /
     * get_mscale(f, mscale_all_dim), can come out <= 0 (or infinite) for
     * negative values: cos and sin would flip sign. (An explicit
     * attention_factor <= 0 is already refused by scheme_parse.) */
    if (s.scaling.type == PE_ROPE_SCALING_YARN && !(att > 0 && isfinite(att))) {
        hf_value_fail(h, err,
                      "rope yarn: the attention factor derived from mscale %g and "
                      "mscale_all_dim %g (factor %g) is %g; it must be > 0",
                      s.scaling.mscale, s.scaling.mscale_all_dim, s.scaling.factor, att);
        goto out;
    }
    rc = 0;
out:
    free(inv_freq);
    scheme_free(&s);
    return rc;
}

/* theta: the block's, else the top level's, else 10000 */
static int read_theta(const hf_load *h, const json_t *block, const char *bkey,
                      const hf_rope_keys *keys, double *theta, model_error *err)
{
    const json_t *bt = json_object_get(block, "rope_theta");
    if (bt && !json_is_null(bt)) {
        if (!json_is_number(bt) || !(json_number_value(bt) > 0)) {
            hf_value_fail(h, err, "%s.rope_theta must be a number > 0", bkey);
            return -1;
        }
        *theta = json_number_value(bt);
        return 0;
    }
    return hf_number_of(h, keys && keys->theta ? keys->theta : HF_KEYS("rope_theta"), 10000.0, true,
                        theta, err)
               ? -1
               : 0;
}

/* partial_rotary_factor: the top level's wins over the block's for a
 * scaled type or an architecture that declares it, the block's for the
 * others' default rope (see the file comment); else the architecture's
 * default (GPT-NeoX 0.25, Phi 0.5). *prf stays 1 and *has_prf false when
 * none applies; *pkey names the key read. */
static int read_partial(const hf_load *h, const json_t *block, const hf_rope_keys *keys, int type,
                        double *prf, bool *has_prf, const char **pkey, model_error *err)
{
    bool partial = keys && keys->partial;
    const char *ptkey = "partial_rotary_factor";
    const json_t *pt = hf_get(h, partial ? keys->partial : HF_KEYS("partial_rotary_factor"),
                              &ptkey);
    const json_t *pb = json_object_get(block, "partial_rotary_factor");
    if (pb && json_is_null(pb))
        pb = NULL;
    if (pt && pb && !partial && type == RT_DEFAULT)
        pt = NULL; /* setdefault into the block: the block's stays */
    const json_t *pv = pt ? pt : pb;
    if (pv) {
        if (!json_is_number(pv) || !(json_number_value(pv) > 0) || json_number_value(pv) > 1) {
            char got[64];
            jf_describe(pv, got, sizeof got);
            hf_value_fail(h, err, "%s must be a number in (0, 1], got %s",
                          pt ? ptkey : "rope block's partial_rotary_factor", got);
            return -1;
        }
        *prf = json_number_value(pv);
    }
    *pkey = pt ? ptkey : "rope block's partial_rotary_factor";
    *has_prf = pv != NULL;
    if (!*has_prf && partial) {
        *prf = keys->partial_default;
        *has_prf = *prf != 1.0;
    }
    return 0;
}

/* the type: rope_type, else type, else default */
static int read_type(const hf_load *h, const json_t *block, const char *bkey, int *type,
                     model_error *err)
{
    const json_t *t = json_object_get(block, "rope_type");
    if (!t || json_is_null(t))
        t = json_object_get(block, "type");
    *type = RT_DEFAULT;
    if (!t || json_is_null(t))
        return 0;
    if (!json_is_string(t)) {
        hf_config_fail(h, err, "%s.rope_type must be a string", bkey);
        return -1;
    }
    for (*type = 0; scaling_types[*type]; (*type)++)
        if (strcmp(scaling_types[*type], json_string_value(t)) == 0)
            return 0;
    hf_value_fail(h, err,
                  "%s: rope type '%.40s' is not supported (default, linear, "
                  "dynamic, yarn, llama3, longrope, proportional)",
                  bkey, json_string_value(t));
    return -1;
}

/* Llama (no architecture partial key): the default rope ignores the factor;
 * a scaled one fails in HF (its cos/sin would be narrower than the heads
 * they multiply). Clears *has_prf. */
static int settle_llama_partial(const hf_load *h, int type, double prf, const char *pkey,
                                bool *has_prf, model_error *err)
{
    if (type != RT_DEFAULT && prf != 1.0) {
        hf_value_fail(h, err,
                      "%s = %g with rope type '%s': Hugging Face's %s does not "
                      "rotate part of a head (its rotation fails for a scaled rope); "
                      "posenc refuses rather than answer differently",
                      pkey, prf, scaling_types[type], h->m->architecture);
        return -1;
    }
    if (prf != 1.0)
        hf_warn(h, "%s = %g is ignored: Hugging Face's %s rotates the whole head", pkey, prf,
                h->m->architecture);
    *has_prf = false;
    return 0;
}

/* rope_type "proportional", and its factor (1 when absent) as linear
 * scaling when it is not 1. */
static int proportional_params(const hf_load *h, const rope_src *src, json_t *p, model_error *err)
{
    const json_t *f = json_object_get(src->block, "factor");

    if (json_object_set_new(p, "rope_type", json_string("proportional")))
        return model_nomem(err, "the model");
    if (!f || json_is_null(f))
        return 0;
    if (!json_is_number(f))
        return hf_config_fail(h, err, "%s.factor must be a number", src->name);
    if (json_number_value(f) == 1.0)
        return 0;
    json_t *sc = json_pack("{s:s, s:O}", "type", "linear", "factor", f); /* stolen by p */
    if (!sc || json_object_set_new(p, "scaling", sc))
        return model_nomem(err, "the model");
    return 0;
}

/* base, layout, partial_rotary_factor and (for a scaled type) the scaling
 * object, into p (borrowed; the scaling object is owned by p once set). */
static int write_params(const hf_load *h, const rope_src *src, int type, double theta, bool has_prf,
                        double prf, size_t rotary_dim, json_t *p, model_error *err)
{
    if (set_number(p, "base", theta, err) ||
        json_object_set_new(p, "layout", json_string("half")) ||
        (has_prf && set_number(p, "partial_rotary_factor", prf, err)))
        return -1;
    if (type == RT_DEFAULT)
        return 0;
    if (type == RT_PROPORTIONAL)
        return proportional_params(h, src, p, err);
    json_t *sc = json_object(); /* stolen by p */
    if (!sc || json_object_set_new(p, "scaling", sc))
        return model_nomem(err, "the model"), -1;
    return build_scaling(h, src, (rope_type)type, rotary_dim, sc, err);
}

/* The params of one block (see hf_rope_layer_params). */
static int block_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys,
                        const rope_src *src, json_t **params, model_error *err)
{
    json_t *p = json_object(); /* owned; *params on success */
    double theta, prf = 1.0;
    bool has_prf;
    const char *pkey;
    int type;

    *params = NULL;
    if (!p)
        return model_nomem(err, "the model");
    if (read_theta(h, src->block, src->name, keys, &theta, err) ||
        read_type(h, src->block, src->name, &type, err) ||
        read_partial(h, src->block, keys, type, &prf, &has_prf, &pkey, err))
        goto fail;
    /* proportional rotates the whole head whatever the factor says */
    if (has_prf && !(keys && keys->partial) && type != RT_PROPORTIONAL &&
        settle_llama_partial(h, type, prf, pkey, &has_prf, err))
        goto fail;
    size_t rotary_dim = has_prf && type != RT_PROPORTIONAL ? (size_t)((double)head_dim * prf)
                                                           : head_dim;
    if (src->block)
        warn_unknown_keys(h, src, (rope_type)type, keys);
    if (write_params(h, src, type, theta, has_prf, prf, rotary_dim, p, err) ||
        check_frequencies(h, p, head_dim, rotary_dim, err))
        goto fail;
    *params = p;
    return 0;
fail:
    json_decref(p);
    return -1;
}

/* The params of the block serving layer_type. */
static int layer_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys,
                        const char *layer_type, json_t **params, const char **block_name,
                        model_error *err)
{
    json_t *block; /* owned */
    rope_src src;

    *params = NULL;
    if (hf_rope_block(h, keys, layer_type, &block, &src.name, &src.nested, err))
        return -1;
    src.block = block;
    if (!src.name)
        src.name = "rope_parameters";
    int rc = block_params(h, head_dim, keys, &src, params, err);
    json_decref(block);
    if (block_name) /* "rope_parameters.<type>": the type */
        *block_name = src.nested ? strchr(src.name, '.') + 1 : NULL;
    return rc;
}

int hf_rope_layer_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys,
                         const char *layer_type, json_t **params, const char **block_name,
                         model_error *err)
{
    json_t *other = NULL; /* owned */

    /* Hugging Face builds the rotary embedding of every layer type: a bad
     * block stops the load whichever layer is served */
    if (keys && keys->nesting && layer_type) {
        const char *t = strcmp(layer_type, "full_attention") == 0 ? "sliding_attention"
                                                                  : "full_attention";
        if (layer_params(h, head_dim, keys, t, &other, NULL, err))
            return -1;
        json_decref(other);
    }
    return layer_params(h, head_dim, keys, layer_type, params, block_name, err);
}

int hf_rope_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys, json_t **params,
                   model_error *err)
{
    return layer_params(h, head_dim, keys, NULL, params, NULL, err);
}

/*
 * hf_rope.c - RoPE parameters from a Llama-family config.json, with the
 * newest Hugging Face semantics (modeling_rope_utils.py,
 * standardize_rope_params and the _compute_*_parameters functions):
 *
 * - The block is `rope_scaling` when it is a non-empty object, else
 *   `rope_parameters` (the newer name, which may also hold rope_theta and
 *   partial_rotary_factor). Its type is `rope_type`, else `type`, else
 *   "default". Per-layer-type nested blocks are not supported.
 * - theta: the block's rope_theta, else the top-level rope_theta, else 1e4.
 * - partial_rotary_factor: the top-level key wins over the block's.
 * - original_max_position_embeddings (yarn, llama3, longrope): the
 *   top-level key wins (Phi-3 keeps it there), else the block's, else
 *   max_position_embeddings. dynamic uses max_position_embeddings (HF's
 *   dynamic NTK compares against it); posenc calls that value
 *   original_max_position_embeddings.
 * - A missing yarn factor is max_position_embeddings / original (HF R3); a
 *   missing longrope factor likewise (when max_position_embeddings is
 *   there; otherwise 1).
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
    RT_LONGROPE
} rope_type;
static const char *const scaling_types[] = {"default", "linear",   "dynamic", "yarn",
                                            "llama3",  "longrope", NULL};

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
};

static bool listed(const char *const *keys, const char *key)
{
    for (; *keys; keys++)
        if (strcmp(*keys, key) == 0)
            return true;
    return false;
}

/* One warning line per key of the block that HF does not read for the type
 * (HF logs "Unrecognized keys in `rope_scaling`" and goes on). */
static void warn_unknown_keys(const hf_load *h, const char *bkey, const json_t *block,
                              rope_type type)
{
    const char *key;
    const json_t *v;

    json_object_foreach ((json_t *)(uintptr_t)block, key, v)
        if (!listed(common_keys, key) && !listed(type_keys[type], key))
            hf_warn(h,
                    "%s.%s is not a key of rope type '%s'; ignored, as Hugging Face "
                    "ignores it",
                    bkey, key, scaling_types[type]);
}

/* A non-empty object (HF tests the block's truthiness). */
static bool nonempty_object(const json_t *v)
{
    return json_is_object(v) && json_object_size(v) > 0;
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
static int context_lengths(const hf_load *h, const char *bkey, const json_t *block, rope_type type,
                           int64_t *orig, int64_t *max_pos, model_error *err)
{
    const json_t *in_block = json_object_get(block, "original_max_position_embeddings");

    if (hf_int(h, HF_KEYS("max_position_embeddings"), false, 0, 1, INT64_MAX / 2, max_pos, err) ||
        hf_int(h, HF_KEYS("original_max_position_embeddings"), false, 0, 1, INT64_MAX / 2, orig,
               err))
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

static int build_scaling(const hf_load *h, const char *bkey, const json_t *block, rope_type type,
                         size_t rotary_dim, json_t *sc, model_error *err)
{
    int64_t orig = 0, max_pos = 0;

    if (json_object_set_new(sc, "type", json_string(scaling_types[type])))
        return model_nomem(err, "the model");
    if (type != RT_LINEAR && context_lengths(h, bkey, block, type, &orig, &max_pos, err))
        return -1;
    if (orig && json_object_set_new(sc, "original_max_position_embeddings", json_integer(orig)))
        return model_nomem(err, "the model");
    bool has_factor = json_is_number(json_object_get(block, "factor"));
    switch (type) {
    case RT_DEFAULT:
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
                       copy_key(h, bkey, block, "truncate", false, true, sc, err)
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
                    .scaling = s.scaling};
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

/* The block's shape: rope_scaling and the chosen block are objects, with no
 * per-layer-type nested blocks. */
static int check_block(const hf_load *h, const json_t *rs, const json_t *block, const char *bkey,
                       model_error *err)
{
    if ((rs && !json_is_object(rs)) || (block && !json_is_object(block))) {
        hf_config_fail(h, err, "%s must be an object",
                       rs && !json_is_object(rs) ? "rope_scaling" : "rope_parameters");
        return -1;
    }
    const char *key;
    const json_t *v;
    json_object_foreach ((json_t *)(uintptr_t)block, key, v)
        if (json_is_object(v)) {
            hf_value_fail(h, err, "%s.%s: rope parameters per layer type are not supported", bkey,
                          key);
            return -1;
        }
    return 0;
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

/* partial_rotary_factor: the top level's wins over the block's, else the
 * architecture's default (GPT-NeoX 0.25, Phi 0.5). *prf stays 1 and
 * *has_prf false when none applies; *pkey names the key read. */
static int read_partial(const hf_load *h, const json_t *block, const hf_rope_keys *keys,
                        double *prf, bool *has_prf, const char **pkey, model_error *err)
{
    bool partial = keys && keys->partial;
    const char *ptkey = "partial_rotary_factor";
    const json_t *pt = hf_get(h, partial ? keys->partial : HF_KEYS("partial_rotary_factor"),
                              &ptkey);
    const json_t *pb = json_object_get(block, "partial_rotary_factor");
    const json_t *pv = pt ? pt : (pb && !json_is_null(pb)) ? pb : NULL;
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
                  "dynamic, yarn, llama3, longrope)",
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

/* base, layout, partial_rotary_factor and (for a scaled type) the scaling
 * object, into p (borrowed; the scaling object is owned by p once set). */
static int write_params(const hf_load *h, const char *bkey, const json_t *block, int type,
                        double theta, bool has_prf, double prf, size_t rotary_dim, json_t *p,
                        model_error *err)
{
    if (set_number(p, "base", theta, err) ||
        json_object_set_new(p, "layout", json_string("half")) ||
        (has_prf && set_number(p, "partial_rotary_factor", prf, err)))
        return -1;
    if (type == RT_DEFAULT)
        return 0;
    json_t *sc = json_object(); /* stolen by p */
    if (!sc || json_object_set_new(p, "scaling", sc))
        return model_nomem(err, "the model"), -1;
    return build_scaling(h, bkey, block, (rope_type)type, rotary_dim, sc, err);
}

int hf_rope_params(const hf_load *h, size_t head_dim, const hf_rope_keys *keys, json_t **params,
                   model_error *err)
{
    const json_t *rs = hf_get(h, HF_KEYS("rope_scaling"), NULL);
    const json_t *rp = hf_get(h, HF_KEYS("rope_parameters"), NULL);
    const json_t *block = nonempty_object(rs) ? rs : rp;
    const char *bkey = block == rs ? "rope_scaling" : "rope_parameters";
    json_t *p = json_object(); /* owned; *params on success */
    double theta, prf = 1.0;
    bool has_prf;
    const char *pkey;
    int type;

    *params = NULL;
    if (!p)
        return model_nomem(err, "the model");
    if (check_block(h, rs, block, bkey, err) || read_theta(h, block, bkey, keys, &theta, err) ||
        read_partial(h, block, keys, &prf, &has_prf, &pkey, err) ||
        read_type(h, block, bkey, &type, err))
        goto fail;
    if (has_prf && !(keys && keys->partial) &&
        settle_llama_partial(h, type, prf, pkey, &has_prf, err))
        goto fail;
    size_t rotary_dim = has_prf ? (size_t)((double)head_dim * prf) : head_dim;
    if (block)
        warn_unknown_keys(h, bkey, block, (rope_type)type);
    if (write_params(h, bkey, block, type, theta, has_prf, prf, rotary_dim, p, err) ||
        check_frequencies(h, p, head_dim, rotary_dim, err))
        goto fail;
    *params = p;
    return 0;
fail:
    json_decref(p);
    return -1;
}

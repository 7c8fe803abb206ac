/*
 * scheme.c - decode and validate scheme parameters (see scheme.h).
 *
 * Parameter names, defaults and RoPE scaling keys follow the contract and
 * the newest Hugging Face rope_scaling semantics (modeling_rope_utils.py): `type` or
 * its alias `rope_type`; required keys per type; an explicit yarn factor
 * wins.
 */
#include "models/scheme.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_fields.h"
#include "json/tensor.h"

const char *const scheme_names[] = {"sinusoidal", "learned", "rope",   "alibi",
                                    "t5",         "none",    "rope2d", NULL};

static const char *const sinusoidal_keys[] = {"base", "layout", "score_scale", NULL};
static const char *const learned_keys[] = {"score_scale", NULL};
static const char *const rope_keys[] = {"base",       "head_dim",
                                        "rotary_dim", "rope_type",
                                        "layout",     "partial_rotary_factor",
                                        "scaling",    "score_scale",
                                        "mrope",      "tokens_per_second",
                                        NULL};
static const char *const alibi_keys[] = {"heads",        "form",        "bf16",
                                         "bias_divisor", "score_scale", NULL};
static const char *const t5_keys[] = {"num_buckets", "max_distance", "bidirectional", "score_scale",
                                      NULL};
static const char *const none_keys[] = {"score_scale", NULL};
static const char *const rope2d_keys[] = {"variant", "head_dim", "base", "score_scale", NULL};

static const char *const *const keys_by_kind[] = {
    [SCHEME_SINUSOIDAL] = sinusoidal_keys,
    [SCHEME_LEARNED] = learned_keys,
    [SCHEME_ROPE] = rope_keys,
    [SCHEME_ALIBI] = alibi_keys,
    [SCHEME_T5] = t5_keys,
    [SCHEME_NONE] = none_keys,
    [SCHEME_ROPE2D] = rope2d_keys,
};

bool scheme_is_absolute(scheme_kind kind)
{
    return kind == SCHEME_SINUSOIDAL || kind == SCHEME_LEARNED;
}

bool scheme_reports_attention_factor(const scheme *s)
{
    return s->kind == SCHEME_ROPE &&
           (s->scaling.type == PE_ROPE_SCALING_YARN || s->scaling.type == PE_ROPE_SCALING_LONGROPE);
}

void scheme_free(scheme *s)
{
    if (!s)
        return;
    free(s->short_factor);
    free(s->long_factor);
    s->short_factor = s->long_factor = NULL;
    s->scaling.short_factor = s->scaling.long_factor = NULL;
}

/* ---- rope scaling ---------------------------------------------------- */

/* HF get_mscale, as lib/rope_freq.c computes it. */
static double get_mscale(double scale, double m)
{
    return scale <= 1.0 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

/* A yarn attention factor derived from mscale / mscale_all_dim must be a
 * usable scale (> 0), as an explicit attention_factor must be. */
static int check_yarn_attention(const pe_rope_scaling *sc, const char *path, desc_error *err)
{
    if (sc->type != PE_ROPE_SCALING_YARN || sc->has_attention_factor || !sc->has_mscale ||
        sc->mscale == 0.0 || !sc->has_mscale_all_dim || sc->mscale_all_dim == 0.0)
        return 0;
    double att = get_mscale(sc->factor, sc->mscale) / get_mscale(sc->factor, sc->mscale_all_dim);
    if (att > 0 && isfinite(att))
        return 0;
    jpath at = jpath_key(path, "mscale");
    return desc_fail(err, DESC_E_RANGE, at.s,
                     "the attention factor derived from %s and mscale_all_dim is %g; it must be "
                     "> 0",
                     at.s, att);
}

static const char *const scaling_types[] = {"default", "linear",   "dynamic", "yarn",
                                            "llama3",  "longrope", NULL};
static const pe_rope_scaling_type scaling_type_values[] = {PE_ROPE_SCALING_NONE,
                                                           PE_ROPE_SCALING_LINEAR,
                                                           PE_ROPE_SCALING_DYNAMIC,
                                                           PE_ROPE_SCALING_YARN,
                                                           PE_ROPE_SCALING_LLAMA3,
                                                           PE_ROPE_SCALING_LONGROPE};

static const char *const *const scaling_keys[] = {
    (const char *const[]){"type", "rope_type", NULL},
    (const char *const[]){"type", "rope_type", "factor", NULL},
    (const char *const[]){"type", "rope_type", "factor", "original_max_position_embeddings",
                          "alpha", NULL},
    (const char *const[]){"type", "rope_type", "factor", "original_max_position_embeddings",
                          "beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim",
                          "truncate", NULL},
    (const char *const[]){"type", "rope_type", "factor", "low_freq_factor", "high_freq_factor",
                          "original_max_position_embeddings", NULL},
    (const char *const[]){"type", "rope_type", "short_factor", "long_factor", "factor",
                          "attention_factor", "original_max_position_embeddings", NULL},
};

static const char *const *const scaling_required[] = {
    (const char *const[]){NULL},
    (const char *const[]){"factor", NULL},
    (const char *const[]){"factor", "original_max_position_embeddings", NULL},
    (const char *const[]){"factor", "original_max_position_embeddings", NULL},
    (const char *const[]){"factor", "low_freq_factor", "high_freq_factor",
                          "original_max_position_embeddings", NULL},
    (const char *const[]){"short_factor", "long_factor", "original_max_position_embeddings", NULL},
};

/* The numbers (and truncate) of a scaling object into sc; *has_orig and
 * *orig: original_max_position_embeddings. */
static int read_scaling_numbers(const json_doc *doc, const json_t *v, const char *path,
                                pe_rope_scaling *sc, bool *has_orig, int64_t *orig, desc_error *err)
{
    bool present;

    if (desc_json(err, jf_number(doc, v, path, "factor", true, &sc->has_factor, &sc->factor,
                                 &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "beta_fast", false, &sc->has_beta_fast,
                                 &sc->beta_fast, &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "beta_slow", false, &sc->has_beta_slow,
                                 &sc->beta_slow, &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "attention_factor", true, &sc->has_attention_factor,
                                 &sc->attention_factor, &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "mscale", false, &sc->has_mscale, &sc->mscale,
                                 &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "mscale_all_dim", false, &sc->has_mscale_all_dim,
                                 &sc->mscale_all_dim, &err->json)) ||
        desc_json(err, jf_bool(v, path, "truncate", &present, &sc->truncate, &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "alpha", true, &present, &sc->alpha, &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "low_freq_factor", true, &present,
                                 &sc->low_freq_factor, &err->json)) ||
        desc_json(err, jf_number(doc, v, path, "high_freq_factor", true, &present,
                                 &sc->high_freq_factor, &err->json)) ||
        desc_json(err, jf_int(doc, v, path, "original_max_position_embeddings", 1, PE_MAX_POSITION,
                              has_orig, orig, &err->json)))
        return -1;
    return 0;
}

static int parse_scaling(const json_doc *doc, const json_t *v, const char *path, scheme *s,
                         desc_error *err)
{
    pe_rope_scaling *sc = &s->scaling;
    const json_t *type = jf_get(v, "type"), *rope_type = NULL;
    bool present;
    int which = 0;
    int64_t orig;

    if (!json_is_object(v))
        return desc_fail(err, DESC_E_TYPE, path, "%s must be an object", path);
    rope_type = jf_get(v, "rope_type");
    /* long strings get their values from the body before they are compared */
    if (type && rope_type && json_is_string(type) && json_is_string(rope_type) &&
        (!json_doc_string(doc, type) || !json_doc_string(doc, rope_type)))
        return desc_fail_oom(err);
    if (type && rope_type && !json_equal(type, rope_type))
        return desc_fail(err, DESC_E_KEY, path, "%s.type and %s.rope_type disagree", path, path);
    if (desc_json(err, jf_choice(doc, v, path, type ? "type" : "rope_type", scaling_types, &present,
                                 &which, &err->json)))
        return -1;
    if (!present) {
        jpath at = jpath_key(path, "type");
        return desc_fail(err, DESC_E_KEY, at.s, "missing field '%s'", at.s);
    }
    if (desc_json(err, jf_check_object(v, path, scaling_keys[which], &err->json)))
        return -1;
    for (const char *const *k = scaling_required[which]; *k; k++)
        if (!jf_get(v, *k)) {
            jpath at = jpath_key(path, *k);
            return desc_fail(err, DESC_E_KEY, at.s, "missing field '%s' (required for %s scaling)",
                             at.s, scaling_types[which]);
        }
    /* a request's scaling replaces the model's whole (params merge by key) */
    free(s->short_factor);
    free(s->long_factor);
    s->short_factor = s->long_factor = NULL;
    s->short_len = s->long_len = 0;
    memset(sc, 0, sizeof *sc);
    sc->type = scaling_type_values[which];
    sc->truncate = true;
    if (read_scaling_numbers(doc, v, path, sc, &present, &orig, err))
        return -1;
    if (present)
        sc->original_max_position_embeddings = (double)orig;
    if (!sc->has_beta_fast)
        sc->beta_fast = 32.0;
    if (!sc->has_beta_slow)
        sc->beta_slow = 1.0;
    /* low == high is valid (no band between the kept and the divided
     * frequencies; contract 1.2); a high below the low is not */
    if (sc->type == PE_ROPE_SCALING_LLAMA3 && sc->high_freq_factor < sc->low_freq_factor) {
        jpath at = jpath_key(path, "high_freq_factor");
        return desc_fail(err, DESC_E_RANGE, at.s, "%s must not be less than low_freq_factor", at.s);
    }
    if (sc->type == PE_ROPE_SCALING_LONGROPE) {
        jpath sf = jpath_key(path, "short_factor"), lf = jpath_key(path, "long_factor");
        /* settings, read in double (contract 1.1), not float32 data */
        if (desc_json(err, double_list_from_json(doc, jf_get(v, "short_factor"), sf.s, true,
                                                 &s->short_factor, &s->short_len, &err->json)) ||
            desc_json(err, double_list_from_json(doc, jf_get(v, "long_factor"), lf.s, true,
                                                 &s->long_factor, &s->long_len, &err->json)))
            return -1;
        sc->short_factor = s->short_factor;
        sc->long_factor = s->long_factor;
    }
    return check_yarn_attention(sc, path, err);
}

/* ---- per scheme ------------------------------------------------------- */

/* rope_type: "default", or "proportional" (Gemma 4's full layers: the
 * whole head rotates, its first floor(partial_rotary_factor * head_dim / 2)
 * pairs turning). Proportional takes no rotary_dim and no scaling but
 * linear (Hugging Face divides its frequencies by factor). */
static int parse_rope_type(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                           desc_error *err)
{
    static const char *const rope_types[] = {"default", "proportional", NULL};
    int which = s->rope_proportional;
    bool present;

    if (desc_json(err, jf_choice(doc, params, path, "rope_type", rope_types, &present, &which,
                                 &err->json)))
        return -1;
    s->rope_proportional = which == 1;
    if (!s->rope_proportional)
        return 0;
    if (s->rotary_dim) {
        jpath at = jpath_key(path, "rotary_dim");
        return desc_fail(err, DESC_E_KEY, at.s,
                         "rope_type proportional rotates the whole head: give "
                         "partial_rotary_factor, not rotary_dim");
    }
    if (s->scaling.type != PE_ROPE_SCALING_NONE && s->scaling.type != PE_ROPE_SCALING_LINEAR) {
        jpath at = jpath_key(path, "scaling");
        return desc_fail(err, DESC_E_KEY, at.s,
                         "rope_type proportional takes no scaling but linear (its factor)");
    }
    return 0;
}

/* The keys of params present override *s (already the model's or the
 * defaults). */
static int parse_rope(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                      desc_error *err)
{
    bool present;
    int64_t n;
    int layout = s->rope_layout == PE_ROPE_INTERLEAVED;
    static const char *const layouts[] = {"half", "interleaved", NULL};

    if (desc_json(err,
                  jf_number(doc, params, path, "base", true, &present, &s->base, &err->json)) ||
        desc_json(err,
                  jf_choice(doc, params, path, "layout", layouts, &present, &layout, &err->json)))
        return -1;
    s->rope_layout = layout ? PE_ROPE_INTERLEAVED : PE_ROPE_HALF;
    if (desc_json(err, jf_int(doc, params, path, "head_dim", 2, SCHEME_MAX_DIM, &present, &n,
                              &err->json)))
        return -1;
    if (present)
        s->head_dim = (size_t)n;
    if (desc_json(err, jf_int(doc, params, path, "rotary_dim", 2, SCHEME_MAX_DIM, &present, &n,
                              &err->json)))
        return -1;
    if (present)
        s->rotary_dim = (size_t)n;
    double factor;
    if (desc_json(err, jf_number(doc, params, path, "partial_rotary_factor", true, &present,
                                 &factor, &err->json)))
        return -1;
    if (present) {
        s->has_partial_rotary_factor = true;
        s->partial_rotary_factor = factor;
    }
    if (s->rotary_dim && s->has_partial_rotary_factor) {
        jpath at = jpath_key(path, "partial_rotary_factor");
        return desc_fail(err, DESC_E_KEY, at.s,
                         "give rotary_dim or partial_rotary_factor, not both");
    }
    if (s->has_partial_rotary_factor && s->partial_rotary_factor > 1) {
        jpath at = jpath_key(path, "partial_rotary_factor");
        return desc_fail(err, DESC_E_RANGE, at.s, "%s = %g must be in (0, 1]", at.s,
                         s->partial_rotary_factor);
    }
    if (scheme_parse_multimodal(doc, params, path, s, err))
        return -1;
    const json_t *scaling = jf_get(params, "scaling");
    if (scaling) {
        jpath at = jpath_key(path, "scaling");
        if (parse_scaling(doc, scaling, at.s, s, err))
            return -1;
    }
    return parse_rope_type(doc, params, path, s, err);
}

static int range_fail(const char *path, const char *key, int64_t v, int64_t lo, int64_t hi,
                      desc_error *err)
{
    jpath at = jpath_key(path, key);
    return desc_fail(err, DESC_E_RANGE, at.s,
                     "%s = %" PRId64 " is out of range (must be in [%" PRId64 ", %" PRId64 "])",
                     at.s, v, lo, hi);
}

/* heads, form, and the bias's bf16 rounding and divisor (Falcon's). */
static int parse_alibi(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                       desc_error *err)
{
    /* indexed by pe_alibi_form */
    static const char *const forms[] = {[PE_ALIBI_SYMMETRIC] = "symmetric",
                                        [PE_ALIBI_BLOOM] = "bloom",
                                        [PE_ALIBI_MPT] = "mpt",
                                        NULL};
    bool present;
    int64_t n;
    int which = (int)s->alibi_form;
    double divisor;

    if (desc_json(err,
                  jf_int(doc, params, path, "heads", 1, SCHEME_MAX_DIM, &present, &n, &err->json)))
        return -1;
    if (present)
        s->heads = (size_t)n;
    if (desc_json(err, jf_choice(doc, params, path, "form", forms, &present, &which, &err->json)) ||
        desc_json(err,
                  jf_bool(params, path, "bf16", &present, &s->alibi_rounding.bf16, &err->json)) ||
        desc_json(err, jf_number(doc, params, path, "bias_divisor", true, &present, &divisor,
                                 &err->json)))
        return -1;
    s->alibi_form = (pe_alibi_form)which;
    if (present)
        s->alibi_rounding.divisor = divisor;
    return 0;
}

/* num_buckets and max_distance bound each other: checked on the merged
 * values, whichever side (model or request) gave them. */
static int parse_t5(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                    desc_error *err)
{
    bool present;
    int64_t n;

    if (desc_json(err,
                  jf_bool(params, path, "bidirectional", &present, &s->bidirectional, &err->json)))
        return -1;
    int64_t lo = s->bidirectional ? 4 : 2, hi = 1 << 20;
    if (desc_json(err, jf_int(doc, params, path, "num_buckets", INT64_MIN, INT64_MAX, &present, &n,
                              &err->json)))
        return -1;
    if (present) {
        s->num_buckets = (size_t)n;
        s->given_num_buckets = true;
        if (n < lo || n > hi)
            return range_fail(path, "num_buckets", n, lo, hi, err);
    } else if (s->given_num_buckets && ((int64_t)s->num_buckets < lo)) {
        return range_fail(path, "num_buckets", (int64_t)s->num_buckets, lo, hi, err);
    }
    size_t exact = (s->bidirectional ? s->num_buckets / 2 : s->num_buckets) / 2;
    lo = (int64_t)exact + 1;
    hi = (int64_t)1 << 40;
    if (desc_json(err, jf_int(doc, params, path, "max_distance", INT64_MIN, INT64_MAX, &present, &n,
                              &err->json)))
        return -1;
    if (present) {
        s->max_distance = n;
        s->given_max_distance = true;
    }
    if (s->given_max_distance && (s->max_distance < lo || s->max_distance > hi))
        return range_fail(path, "max_distance", s->max_distance, lo, hi, err);
    if (!s->given_max_distance && s->max_distance <= (int64_t)exact) {
        jpath at = jpath_key(path, "max_distance");
        return desc_fail(err, DESC_E_RANGE, at.s,
                         "the default max_distance %lld is too small for num_buckets %zu",
                         (long long)s->max_distance, s->num_buckets);
    }
    return 0;
}

static void scheme_defaults(scheme_kind kind, scheme *out)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->base = 10000.0;
    out->num_buckets = 32;
    out->max_distance = 128;
    out->bidirectional = true;
}

int scheme_copy(const scheme *from, scheme *to)
{
    *to = *from;
    to->short_factor = to->long_factor = NULL;
    to->scaling.short_factor = to->scaling.long_factor = NULL;
    if (from->short_factor) {
        to->short_factor = malloc(from->short_len * sizeof *to->short_factor);
        to->long_factor = malloc(from->long_len * sizeof *to->long_factor);
        if (!to->short_factor || !to->long_factor) {
            scheme_free(to);
            return -1;
        }
        memcpy(to->short_factor, from->short_factor, from->short_len * sizeof *to->short_factor);
        memcpy(to->long_factor, from->long_factor, from->long_len * sizeof *to->long_factor);
        to->scaling.short_factor = to->short_factor;
        to->scaling.long_factor = to->long_factor;
    }
    return 0;
}

int scheme_parse(scheme_kind kind, const json_t *params, const char *path, scheme *out,
                 desc_error *err)
{
    return scheme_decode(NULL, kind, params, path, NULL, out, err);
}

int scheme_decode(const json_doc *doc, scheme_kind kind, const json_t *params, const char *path,
                  const scheme *base, scheme *out, desc_error *err)
{
    bool present;
    int which = 0;
    json_t *empty = NULL;
    int rc = -1;

    if (base && base->kind == kind) {
        if (scheme_copy(base, out))
            return desc_fail_oom(err);
    } else {
        scheme_defaults(kind, out);
    }
    if (!params)
        params = empty = json_object();
    if (!params) {
        scheme_free(out);
        return desc_fail_oom(err);
    }
    double score_scale;
    if (desc_json(err, jf_check_object(params, path, keys_by_kind[kind], &err->json)) ||
        desc_json(err, jf_number(doc, params, path, "score_scale", false, &present, &score_scale,
                                 &err->json)))
        goto out;
    if (present) {
        out->has_score_scale = true;
        out->score_scale = score_scale;
    }
    switch (kind) {
    case SCHEME_SINUSOIDAL: {
        static const char *const layouts[] = {"interleaved", "split", NULL};
        which = out->sin_layout == PE_SIN_SPLIT;
        if (desc_json(err, jf_number(doc, params, path, "base", true, &present, &out->base,
                                     &err->json)) ||
            desc_json(err, jf_choice(doc, params, path, "layout", layouts, &present, &which,
                                     &err->json)))
            goto out;
        out->sin_layout = which ? PE_SIN_SPLIT : PE_SIN_INTERLEAVED;
        break;
    }
    case SCHEME_ROPE:
        if (parse_rope(doc, params, path, out, err))
            goto out;
        break;
    case SCHEME_ALIBI:
        if (parse_alibi(doc, params, path, out, err))
            goto out;
        break;
    case SCHEME_T5:
        if (parse_t5(doc, params, path, out, err))
            goto out;
        break;
    case SCHEME_ROPE2D:
        if (scheme_parse_rope2d(doc, params, path, out, err))
            goto out;
        break;
    case SCHEME_LEARNED:
    case SCHEME_NONE:
        break;
    }
    rc = 0;
out:
    if (rc)
        scheme_free(out);
    json_decref(empty);
    return rc;
}

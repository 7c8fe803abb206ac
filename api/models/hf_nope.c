/*
 * hf_nope.c - architectures whose global layers have no rope at all
 * ("NoPE"): Cohere 2 (model_type cohere2, Command R7B / Command A) and
 * EXAONE 4 (model_type exaone4). Their specs are in hf_specs.c; what the
 * hooks here decide is whether layer L rotates.
 *
 * Both read layer_types (sliding_attention / full_attention per layer,
 * checked by the loader) or, without it, sliding_window_pattern: layer L
 * is sliding unless (L + 1) is a multiple of the pattern (default 4 for
 * both configs).
 *
 * Cohere2Attention (modeling_cohere2.py) keeps sliding_window =
 * config.sliding_window on sliding layers and None on full ones, and
 * applies apply_rotary_pos_emb only when it is not None: full layers never
 * rotate, and with sliding_window null no layer does.
 *
 * Exaone4Attention (modeling_exaone4.py) rotates when config.sliding_window
 * is None or the layer is sliding: with a window, full layers are NoPE;
 * without one, every layer rotates. Exaone4Config sets the pattern to 0
 * when sliding_window is null and, without layer_types, derives them with
 * (i + 1) % pattern, which fails in Python: posenc refuses that config,
 * and a pattern that is not an integer (the docstring's "LLLG", which the
 * same line cannot take either), naming the key.
 *
 * On a NoPE layer the rope parameters are still read and checked (Hugging
 * Face builds the model's one rotary embedding whatever the layer), then
 * dropped: the layer's scheme is none.
 */
#include "models/hf_spec.h"

/* Layer L without rope: scheme none, empty params. */
static int drop_rope(hf_load *h, model_error *err)
{
    model *m = h->m;

    json_decref(m->params);
    m->params = json_object();
    m->scheme = SCHEME_NONE;
    return m->params ? 0 : model_nomem(err, "the model");
}

/* Whether the config has a sliding window: sliding_window absent (both
 * configs default to 4096) or a positive integer; null is none. */
static int has_window(const hf_load *h, bool *windowed, model_error *err)
{
    const json_t *sw = json_object_get(h->config, "sliding_window");
    int64_t w;

    *windowed = !json_is_null(sw);
    if (*windowed && hf_int(h, HF_KEYS("sliding_window"), false, 4096, 1, INT64_MAX, &w, err))
        return -1;
    return 0;
}

int hf_cohere2_params(hf_load *h, hf_plan *p, model_error *err)
{
    bool windowed;

    if (has_window(h, &windowed, err) || hf_sliding_pattern(h, p, 4, err))
        return -1;
    return windowed && p->sliding ? 0 : drop_rope(h, err);
}

int hf_exaone4_params(hf_load *h, hf_plan *p, model_error *err)
{
    bool windowed;

    if (has_window(h, &windowed, err))
        return -1;
    if (!windowed && !hf_get(h, HF_KEYS("layer_types"), NULL))
        return hf_value_fail(h, err,
                             "sliding_window is null and layer_types is absent: Exaone4Config "
                             "then derives layer_types with sliding_window_pattern 0, (i + 1) %% "
                             "0, "
                             "which fails; give layer_types");
    if (windowed && hf_sliding_pattern(h, p, 4, err))
        return -1;
    return windowed && !p->sliding ? drop_rope(h, err) : 0;
}

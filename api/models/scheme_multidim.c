/*
 * scheme_multidim.c - the params of positions in more than one dimension
 * (contract 1.3): rope's `mrope` ({"section": [s_t, s_h, s_w], "style":
 * "chunked" | "interleaved" | "ernie"}; its fit to the rotary width is
 * checked where the width is known, rope_plan_init) and
 * `tokens_per_second`, and the rope2d scheme's `variant`, `head_dim` and
 * `base`.
 */
#include "models/scheme.h"

#include "json/json_fields.h"
#include "json/tensor.h"

const char *const scheme_mrope_styles[] = {"chunked", "interleaved", "ernie", NULL};
const char *const scheme_rope2d_variants[] = {[PE_ROPE2D_QWEN_VIT] = "qwen_vit",
                                              [PE_ROPE2D_PIXTRAL] = "pixtral",
                                              [PE_ROPE2D_LLAMA4] = "llama4_vision",
                                              [PE_ROPE2D_GEMMA4] = "gemma4_vision",
                                              NULL};

static int parse_mrope(const json_doc *doc, const json_t *v, const char *path, pe_mrope *out,
                       desc_error *err)
{
    static const char *const keys[] = {"section", "style", NULL};
    jpath sec_path = jpath_key(path, "section");
    bool present;
    int style = 0;
    int_array sec;

    if (desc_json(err, jf_check_object(v, path, keys, &err->json)) ||
        desc_json(err, jf_choice(doc, v, path, "style", scheme_mrope_styles, &present, &style,
                                 &err->json)))
        return -1;
    const json_t *section = jf_get(v, "section");
    if (!section)
        return desc_fail(err, DESC_E_KEY, sec_path.s, "missing field '%s'", sec_path.s);
    if (desc_json(err, int_array_from_json(doc, section, sec_path.s, 0, SCHEME_MAX_DIM,
                                           JSON_E_RANGE, &sec, &err->json)))
        return -1;
    bool three = sec.ndim == 1 && sec.dim[0] == 3;
    for (size_t i = 0; three && i < 3; i++)
        out->section[i] = (size_t)sec.data[i];
    int_array_free(&sec);
    if (!three)
        return desc_fail(err, DESC_E_SHAPE, sec_path.s, "%s must be three integers [s_t, s_h, s_w]",
                         sec_path.s);
    out->style = (pe_mrope_style)(PE_MROPE_CHUNKED + style);
    return 0;
}

int scheme_parse_multimodal(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                            desc_error *err)
{
    const json_t *mrope = jf_get(params, "mrope");
    bool present;
    double tps;

    if (mrope) {
        jpath at = jpath_key(path, "mrope");
        if (parse_mrope(doc, mrope, at.s, &s->mrope, err))
            return -1;
    }
    if (desc_json(err, jf_number(doc, params, path, "tokens_per_second", true, &present, &tps,
                                 &err->json)))
        return -1;
    if (present)
        s->tokens_per_second = tps;
    return 0;
}

int scheme_parse_rope2d(const json_doc *doc, const json_t *params, const char *path, scheme *s,
                        desc_error *err)
{
    const char *const *variants = scheme_rope2d_variants;
    bool present, has_base;
    int which = 0;
    int64_t n;

    if (desc_json(err,
                  jf_choice(doc, params, path, "variant", variants, &present, &which, &err->json)))
        return -1;
    if (!present) {
        jpath at = jpath_key(path, "variant");
        return desc_fail(err, DESC_E_KEY, at.s,
                         "missing field '%s' (qwen_vit, pixtral, llama4_vision or gemma4_vision)",
                         at.s);
    }
    s->rope2d_variant = (pe_rope2d_variant)which;
    if (desc_json(err,
                  jf_number(doc, params, path, "base", true, &has_base, &s->base, &err->json)) ||
        desc_json(err, jf_int(doc, params, path, "head_dim", 4, SCHEME_MAX_DIM, &present, &n,
                              &err->json)))
        return -1;
    if (!has_base)
        s->base = s->rope2d_variant == PE_ROPE2D_GEMMA4 ? 100.0 : 10000.0;
    if (present)
        s->head_dim = (size_t)n;
    return 0;
}

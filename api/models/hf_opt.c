/*
 * hf_opt.c - what OPT (model_type opt; its spec in hf_specs.c: learned
 * positions read two rows into their table, positions from the attention
 * mask) decides from its config: pre- or post-norm layers, and the
 * options it refuses.
 *
 * Hugging Face's modeling_opt.py: OPTLearnedPositionalEmbedding (an
 * nn.Embedding of max_position_embeddings + 2 rows, offset 2) looks up
 * row position + 2, its positions (cumsum(mask) * mask - 1) from the
 * attention mask (0..T-1 without one). OPTDecoder.forward adds them to
 * embed_tokens(ids) (project_in first when word_embed_proj_dim differs
 * from hidden_size: refused below). OPTDecoderLayer: with
 * do_layer_norm_before (default true) self_attn_layer_norm before the
 * attention, else after it (then nothing before). OPTAttention: q/k/v
 * nn.Linear with biases (enable_bias), q scaled by head_dim^-0.5, which
 * posenc returns unscaled and applies in scores as score_scale. So layer
 * 0: scheme learned, model.table_offset 2 (the request adds it to every
 * position), norm = self_attn_layer_norm or none; layer L > 0: scheme none.
 *
 * Tensors: [model.]decoder.embed_tokens.weight, .embed_positions.weight,
 * .layers.L.self_attn.{q,k,v}_proj.{weight,bias},
 * .layers.L.self_attn_layer_norm.{weight,bias}.
 */
#include "models/hf_spec.h"

int hf_opt_configure(hf_load *h, hf_plan *p, model_error *err)
{
    int64_t proj, d = p->a.hidden;
    bool norm_before, affine;

    if (hf_int(h, HF_KEYS("word_embed_proj_dim"), false, d, 1, SCHEME_MAX_DIM, &proj, err) ||
        hf_bool(h, "do_layer_norm_before", true, &norm_before, err) ||
        hf_bool(h, "layer_norm_elementwise_affine", true, &affine, err))
        return -1;
    if (proj != d)
        return hf_value_fail(h, err,
                             "word_embed_proj_dim %lld differs from hidden_size %lld: posenc "
                             "does not model OPT's project_in/project_out",
                             (long long)proj, (long long)d);
    if (!affine && norm_before)
        return hf_value_fail(h, err,
                             "layer_norm_elementwise_affine = false is not supported "
                             "(a LayerNorm without weight and bias)");
    if (!norm_before)
        p->norm = PE_NORM_NONE; /* post-norm: nothing before the attention */
    return 0;
}

/* The position table must reach past its offset. */
int hf_opt_weights(hf_load *h, hf_plan *p, model_error *err)
{
    const model *m = h->m;

    (void)p;
    if (h->layer == 0 && m->weights[W_POSITION_TABLE].dim[0] <= (size_t)m->table_offset)
        return hf_value_fail(h, err,
                             "embed_positions has %zu rows: OPT reads its positions %lld "
                             "rows in",
                             m->weights[W_POSITION_TABLE].dim[0], (long long)m->table_offset);
    return 0;
}

/*
 * hf_opt.c - OPT (model_type opt): learned positions read two rows into
 * their table, positions from the attention mask, pre- or post-norm layers.
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
#include "models/hf.h"

int hf_opt_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    int64_t d, heads, proj;
    size_t head_dim, L = h->layer;
    bool norm_before, bias, affine;

    if (hf_int(h, HF_KEYS("hidden_size"), true, 0, 1, SCHEME_MAX_DIM, &d, err) ||
        hf_int(h, HF_KEYS("num_attention_heads"), true, 0, 1, SCHEME_MAX_DIM, &heads, err) ||
        hf_check_layer(h, HF_KEYS("num_hidden_layers"), err) ||
        hf_int(h, HF_KEYS("word_embed_proj_dim"), false, d, 1, SCHEME_MAX_DIM, &proj, err) ||
        hf_bool(h, "do_layer_norm_before", true, &norm_before, err) ||
        hf_bool(h, "enable_bias", true, &bias, err) ||
        hf_bool(h, "layer_norm_elementwise_affine", true, &affine, err) ||
        hf_head_dim(h, "hidden_size", (size_t)d, (size_t)heads, &head_dim, err))
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
    m->d_model = (size_t)d;
    m->heads = m->kv_heads = (size_t)heads;
    m->head_dim = head_dim;
    m->norm = norm_before ? PE_NORM_LAYER : PE_NORM_NONE;
    m->norm_eps = 1e-5; /* nn.LayerNorm's default: OPT passes no eps */
    m->scheme = L == 0 ? SCHEME_LEARNED : SCHEME_NONE;
    m->position_rule = MODEL_POSITIONS_OPT;
    m->table_offset = 2; /* OPTLearnedPositionalEmbedding.offset */
    m->params = json_object();
    if (!m->params)
        return model_nomem(err, "the model");

    size_t n = m->d_model;
    if (hf_pick_prefix(h, HF_KEYS("model.decoder.", "decoder.", ""), err,
                       "layers.%zu.self_attn.q_proj.weight", L) ||
        hf_linear(h, W_WQ, n, n, err, "layers.%zu.self_attn.q_proj.weight", L) ||
        hf_linear(h, W_WK, n, n, err, "layers.%zu.self_attn.k_proj.weight", L) ||
        hf_linear(h, W_WV, n, n, err, "layers.%zu.self_attn.v_proj.weight", L))
        return -1;
    if (bias && (hf_weight(h, W_BQ, 1, n, 0, err, "layers.%zu.self_attn.q_proj.bias", L) ||
                 hf_weight(h, W_BK, 1, n, 0, err, "layers.%zu.self_attn.k_proj.bias", L) ||
                 hf_weight(h, W_BV, 1, n, 0, err, "layers.%zu.self_attn.v_proj.bias", L)))
        return -1;
    if (norm_before &&
        (hf_weight(h, W_NORM_WEIGHT, 1, n, 0, err, "layers.%zu.self_attn_layer_norm.weight", L) ||
         hf_weight(h, W_NORM_BIAS, 1, n, 0, err, "layers.%zu.self_attn_layer_norm.bias", L)))
        return -1;
    if (L > 0)
        return 0;
    if (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, n, err, "embed_tokens.weight") ||
        hf_weight(h, W_POSITION_TABLE, 2, 0, n, err, "embed_positions.weight"))
        return -1;
    if (m->weights[W_POSITION_TABLE].dim[0] <= (size_t)m->table_offset)
        return hf_value_fail(h, err,
                             "embed_positions has %zu rows: OPT reads its positions %lld "
                             "rows in",
                             m->weights[W_POSITION_TABLE].dim[0], (long long)m->table_offset);
    return 0;
}

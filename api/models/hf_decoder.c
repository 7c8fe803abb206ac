/*
 * hf_decoder.c - the one loader of every Hugging Face architecture: reads
 * config.json and the checkpoint's tensors as the architecture's spec
 * (hf_spec.h, the table in hf_specs.c) says, and calls its hooks where the
 * architecture computes differently.
 *
 * The steps, in order: pad_token_id (RoBERTa's position rule), the shape
 * keys, eps, the bias key, head_dim, layer_types (or the spec's rule
 * without it), the rope switch key, no_rope_layers, the
 * refused options, the configure hook; the shape checks and the model's
 * shape; the scheme params (rope, alibi, learned, none), the params hook,
 * Gemma's score transforms, a score scale and an embedding multiplier
 * from the config; the tensor prefix, q/k/v (and biases), the norm, the q/k
 * norms, layer 0's embeddings; the weights hook.
 */
#include <stdio.h>
#include <string.h>

#include "models/hf_spec.h"

static int nomem(model_error *err)
{
    return model_nomem(err, "the model");
}

/* ---- config ---------------------------------------------------------------- */

/* The shape keys (hidden size, heads, kv heads, layer count, head_dim),
 * eps and the bias key into the plan and the model. */
static int read_shape(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_spec *s = p->spec;
    const hf_shape_keys *k = s->shape;
    hf_attention_heads *a = &p->a;

    a->head_dim = s->head_dim_default;
    if (hf_int(h, k->hidden, true, 0, 1, SCHEME_MAX_DIM, &a->hidden, err) ||
        hf_int(h, k->heads, true, 0, 1, SCHEME_MAX_DIM, &a->heads, err))
        return -1;
    a->kv_heads = a->heads;
    if ((k->kv_heads &&
         hf_int(h, k->kv_heads, false, s->kv_heads_default ? s->kv_heads_default : a->heads, 1,
                SCHEME_MAX_DIM, &a->kv_heads, err)) ||
        hf_check_layer(h, k->layers, err))
        return -1;
    hf_get(h, k->hidden, &p->hidden_key);
    if (s->eps_key) {
        double *eps = s->eps_into == HF_EPS_EMBED_NORM ? &h->m->embed_norm_eps
                      : s->eps_into == HF_EPS_QK_NORM  ? &h->m->qk_norm_eps
                                                       : &h->m->norm_eps;
        if (hf_number(h, s->eps_key, s->eps_default, true, eps, err))
            return -1;
    } else {
        h->m->norm_eps = s->eps_default;
    }
    p->bias = s->bias_always;
    if (s->bias_key && hf_bool(h, s->bias_key, s->bias_default, &p->bias, err))
        return -1;
    if (s->bias_always)
        p->bias = true;
    if (k->head_dim && hf_int(h, k->head_dim, k->head_dim_required, s->head_dim_default, 1,
                              SCHEME_MAX_DIM, &a->head_dim, err))
        return -1;
    return 0;
}

/* The message of r with `value` where it says "%s". */
static int refuse(const hf_load *h, const hf_refusal *r, const char *value, model_error *err)
{
    const char *at = strstr(r->message, "%s");

    if (!at)
        return hf_value_fail(h, err, "%s", r->message);
    return hf_value_fail(h, err, "%.*s%.40s%s", (int)(at - r->message), r->message, value, at + 2);
}

static int check_refusals(const hf_load *h, const hf_refusal *r, model_error *err)
{
    for (; r && r->key; r++) {
        if (r->kind == HF_REFUSE_PRESENT) {
            if (hf_get(h, HF_KEYS(r->key), NULL))
                return refuse(h, r, "", err);
            continue;
        }
        if (r->kind == HF_REFUSE_STRING) {
            const char *v;
            bool ok = false;
            if (hf_string(h, r->key, r->allowed[0], &v, err))
                return -1;
            for (const char *const *a = r->allowed; *a; a++)
                ok = ok || strcmp(*a, v) == 0;
            if (!ok)
                return refuse(h, r, v, err);
            continue;
        }
        bool dflt = r->kind == HF_REFUSE_FALSE, v;
        if (hf_bool(h, r->key, dflt, &v, err))
            return -1;
        if (v == dflt)
            continue;
        if (r->kind == HF_WARN_TRUE)
            hf_warn(h, "%s", r->message);
        else
            return refuse(h, r, "", err);
    }
    return 0;
}

/* Architectures whose q/k norms a config boolean switches on (Cohere's
 * use_qk_norm, StableLM's and Phi's qk_layernorm; default false). */
static int read_qk_norm_key(const hf_load *h, hf_plan *p, model_error *err)
{
    bool on = true;

    if (p->spec->qk_norm_key && hf_bool(h, p->spec->qk_norm_key, false, &on, err))
        return -1;
    if (!on)
        p->qk_norm = MODEL_QK_NORM_NONE;
    return 0;
}

/* The model's shape from the plan: heads dividing kv_heads, head_dim. */
static int set_shape(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_shape_keys *k = p->spec->shape;
    model *m = h->m;

    if (k->check_kv && hf_check_kv_heads(h, &p->a, err))
        return -1;
    size_t head_dim = (size_t)p->a.head_dim;
    if (!head_dim && hf_head_dim(h, k->hidden_name ? k->hidden_name : p->hidden_key,
                                 (size_t)p->a.hidden, (size_t)p->a.heads, &head_dim, err))
        return -1;
    m->d_model = (size_t)p->a.hidden;
    m->heads = (size_t)p->a.heads;
    m->kv_heads = (size_t)p->a.kv_heads;
    m->head_dim = head_dim;
    m->scheme = p->scheme;
    m->norm = p->norm;
    m->qk_norm = p->qk_norm;
    m->qk_norm_type = p->spec->qk_norm_type == PE_NORM_LAYER ? PE_NORM_LAYER : PE_NORM_RMS;
    if (m->qk_norm && p->spec->eps_into == HF_EPS_NORM)
        m->qk_norm_eps = m->norm_eps; /* q_norm and k_norm take the config's eps */
    m->position_rule = p->spec->position_rule;
    m->table_offset = p->spec->table_offset;
    return 0;
}

/* Whether the config gives rope_theta at the top level or in its block. */
static bool has_theta(const hf_load *h)
{
    const json_t *rs = hf_get(h, HF_KEYS("rope_scaling"), NULL);
    const json_t *rp = hf_get(h, HF_KEYS("rope_parameters"), NULL);

    return hf_get(h, HF_KEYS("rope_theta"), NULL) ||
           (json_is_object(rs) && json_object_get(rs, "rope_theta")) ||
           (json_is_object(rp) && json_object_get(rp, "rope_theta"));
}

/* The rope_scaling type (its "type", else "rope_type") must be one the
 * architecture's code knows, when the spec lists them. */
static int check_scaling_type(const hf_load *h, const hf_spec *s, model_error *err)
{
    const json_t *rs = hf_get(h, HF_KEYS("rope_scaling"), NULL), *t;

    if (!s->rope_scaling_types || !json_is_object(rs))
        return 0;
    if (!(t = json_object_get(rs, "type")))
        t = json_object_get(rs, "rope_type");
    if (!json_is_string(t))
        return hf_config_fail(h, err, "rope_scaling.type must be a string");
    char known[128] = "";
    for (const char *const *k = s->rope_scaling_types; *k; k++) {
        if (strcmp(*k, json_string_value(t)) == 0)
            return 0;
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                 k == s->rope_scaling_types ? "" : ", ", *k);
    }
    return hf_value_fail(h, err,
                         "rope_scaling.type '%.40s' is not one %s's modeling code knows (%s)",
                         json_string_value(t), h->m->architecture, known);
}

/* m->params for the plan's scheme, unless a hook built them. */
static int build_params(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_spec *s = p->spec;
    model *m = h->m;

    if (m->params)
        return 0;
    if (p->scheme != SCHEME_ROPE) {
        /* owned by m, as every params object a hook builds */
        m->params = s->alibi_form && p->scheme == SCHEME_ALIBI
                        ? json_pack("{s:s}", "form", s->alibi_form)
                        : json_object();
        return m->params ? 0 : nomem(err);
    }
    if (check_scaling_type(h, s, err))
        return -1;
    if (s->rope.nesting) /* the layer type's block, theta included */
        return hf_rope_layer_params(h, m->head_dim, &s->rope,
                                    p->sliding ? "sliding_attention" : "full_attention", &m->params,
                                    &m->rope_block, err);
    if (hf_rope_params(h, m->head_dim, &s->rope, &m->params, err))
        return -1;
    if ((s->rope_layout && json_object_set_new(m->params, "layout", json_string(s->rope_layout))) ||
        (s->rope_theta_default && !has_theta(h) &&
         json_object_set_new(m->params, "base", json_real(s->rope_theta_default))))
        return nomem(err);
    return 0;
}

/* Layer L's type: layer_types, or what the spec says without it. */
static int read_layer_kind(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_spec *s = p->spec;
    const char *const *keys = s->layer_types_keys ? s->layer_types_keys : HF_KEYS("layer_types");

    if (!s->reads_layer_types)
        return 0;
    if (hf_get(h, keys, NULL))
        return hf_layer_type(h, keys, &p->sliding, err);
    if (s->attn_idxs_key)
        return hf_attention_layer_list(h, s->attn_idxs_key, &p->sliding, err);
    if (s->layer_types_absent)
        return hf_serve_layer_type(h, s->layer_types_absent, &p->sliding, err);
    if (!s->layer_pattern_key)
        return 0;
    if (!hf_get(h, HF_KEYS(s->layer_pattern_key), NULL))
        return hf_config_fail(h, err, "missing key '%s' (or %s): which layers are attention",
                              s->layer_pattern_key, keys[0]);
    return hf_pattern_layer_type(h, s->layer_pattern_key, &p->sliding, err);
}

/* No rotation unless the spec's switch key has its value (Granite 4.0-H). */
static int read_rope_switch(hf_load *h, hf_plan *p, model_error *err)
{
    const char *v;

    if (!p->spec->rope_when_key)
        return 0;
    if (hf_string(h, p->spec->rope_when_key, NULL, &v, err))
        return -1;
    if (!v || strcmp(v, p->spec->rope_when_value) != 0)
        p->scheme = SCHEME_NONE;
    return 0;
}

/* Whether layer L is a NoPE layer (scheme none). */
static int read_nope(hf_load *h, hf_plan *p, model_error *err)
{
    bool rope;

    if (hf_layer_uses_rope(h, p->spec->nope == HF_NOPE_EMPTY_DEFAULT, &rope, err))
        return -1;
    if (!rope)
        p->scheme = SCHEME_NONE;
    return 0;
}

/* The score scale and the embedding multiplier a config may give. */
static int read_multipliers(hf_load *h, const hf_spec *s, model_error *err)
{
    model *m = h->m;
    double v;

    /* null is Python's None, which the model's inputs_embeds * None fails on */
    const json_t *mult = s->embed_multiplier_key
                             ? json_object_get(h->config, s->embed_multiplier_key)
                             : NULL;
    if (mult && json_is_null(mult))
        return hf_value_fail(h, err,
                             "%s is null: Hugging Face's model multiplies the embeddings by it "
                             "and fails",
                             s->embed_multiplier_key);

    if (s->score_scale_key) {
        if (hf_number(h, s->score_scale_key, s->score_scale_default, true, &v, err))
            return -1;
        if (json_object_set_new(m->params, "score_scale", json_real(v)))
            return nomem(err);
    }
    if (!s->embed_multiplier_key)
        return 0;
    if (hf_number(h, s->embed_multiplier_key, 1.0, true, &v, err))
        return -1;
    if (m->norm == PE_NORM_NONE)
        return hf_value_fail(h, err, "%s needs a norm before the attention to be folded into",
                             s->embed_multiplier_key);
    if (h->layer == 0)
        m->norm_eps /= v * v; /* later layers see the hidden state, not the embeddings */
    return 0;
}

/* ---- tensors -------------------------------------------------------------- */

#define LAYER "%s.%zu%s.%s"

/* q, k and v of layer L (and their biases), as the names say. */
static int read_qkv(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_tensor_names *n = p->spec->names;
    const model *m = h->m;
    size_t L = h->layer, d = m->d_model;
    size_t qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    const char *dir = n->layer_dir, *tail = n->layer_tail ? n->layer_tail : "";
    char w[128], b[128];

    if (n->qkv == HF_QKV_FUSED) {
        int nw = snprintf(w, sizeof w, "%s.%zu%s.%s.weight", dir, L, tail, n->q);
        int nb = snprintf(b, sizeof b, "%s.%zu%s.%s.bias", dir, L, tail, n->q);
        if (nw < 0 || (size_t)nw >= sizeof w || nb < 0 || (size_t)nb >= sizeof b)
            return model_fail(err, MODEL_E_TENSOR, "tensor name too long");
        return hf_split_fused(h, p->fused, w, p->bias ? b : NULL, err);
    }
    if (n->qkv != HF_QKV_SEPARATE)
        return 0;
    if (hf_linear(h, W_WQ, qd, d, err, LAYER ".weight", dir, L, tail, n->q) ||
        hf_linear(h, W_WK, kvd, d, err, LAYER ".weight", dir, L, tail, n->k) ||
        hf_linear(h, W_WV, kvd, d, err, LAYER ".weight", dir, L, tail, n->v))
        return -1;
    if (p->bias && (hf_weight(h, W_BQ, 1, qd, 0, err, LAYER ".bias", dir, L, tail, n->q) ||
                    hf_weight(h, W_BK, 1, kvd, 0, err, LAYER ".bias", dir, L, tail, n->k) ||
                    hf_weight(h, W_BV, 1, kvd, 0, err, LAYER ".bias", dir, L, tail, n->v)))
        return -1;
    return 0;
}

static void one_plus(tensor *t)
{
    for (size_t i = 0; t->data && i < t->dim[0]; i++)
        t->data[i] = 1.0f + t->data[i]; /* (1.0 + weight.float()), a float32 sum */
}

/* One [head_dim] tensor <name>.<i>.weight of layer L per head i, gathered
 * into weights[w] as [heads][head_dim] (StableLM's LayerNorm per head). */
static int read_each_head(hf_load *h, const hf_tensor_names *n, weight_id w, size_t heads,
                          const char *name, model_error *err)
{
    const char *dir = n->layer_dir, *tail = n->layer_tail ? n->layer_tail : "";
    size_t hd = h->m->head_dim;
    tensor *t = &h->m->weights[w];
    tensor one = {0}; /* owned: head i's weight, freed before the next */

    tensor_free(t);
    if (hf_new_matrix(t, heads, hd, err)) /* owned by the model */
        return -1;
    for (size_t i = 0; i < heads; i++) {
        if (hf_tensor(h, 1, hd, 0, &one, &h->m->weight_dtype[w], err, LAYER ".%zu.weight", dir,
                      h->layer, tail, name, i))
            return -1;
        memcpy(t->data + i * hd, one.data, hd * sizeof *one.data);
        tensor_free(&one);
    }
    return 0;
}

/* The q/k norms' weights of layer L as the spec stores them. */
static int read_qk_norms(hf_load *h, const hf_plan *p, model_error *err)
{
    const hf_tensor_names *n = p->spec->names;
    const model *m = h->m;
    size_t L = h->layer, hd = m->head_dim;
    const char *dir = n->layer_dir, *tail = n->layer_tail ? n->layer_tail : "";
    bool wide = p->qk_norm != MODEL_QK_NORM_PER_HEAD; /* the width, or a weight per head */

    if (n->qk_norm_tensors == HF_QK_NORM_EACH_HEAD)
        return read_each_head(h, n, W_Q_NORM_WEIGHT, m->heads, n->q_norm, err) ||
               read_each_head(h, n, W_K_NORM_WEIGHT, m->kv_heads, n->k_norm, err);
    if (n->qk_norm_tensors == HF_QK_NORM_MATRIX)
        return hf_weight(h, W_Q_NORM_WEIGHT, 2, m->heads, hd, err, LAYER ".weight", dir, L, tail,
                         n->q_norm) ||
               hf_weight(h, W_K_NORM_WEIGHT, 2, m->kv_heads, hd, err, LAYER ".weight", dir, L, tail,
                         n->k_norm);
    size_t qn = wide ? m->heads * hd : hd, kn = wide ? m->kv_heads * hd : hd;
    if (hf_weight(h, W_Q_NORM_WEIGHT, 1, qn, 0, err, LAYER ".weight", dir, L, tail, n->q_norm) ||
        hf_weight(h, W_K_NORM_WEIGHT, 1, kn, 0, err, LAYER ".weight", dir, L, tail, n->k_norm))
        return -1;
    if (!n->qk_norm_bias)
        return 0;
    return hf_weight(h, W_Q_NORM_BIAS, 1, qn, 0, err, LAYER ".bias", dir, L, tail, n->q_norm) ||
           hf_weight(h, W_K_NORM_BIAS, 1, kn, 0, err, LAYER ".bias", dir, L, tail, n->k_norm);
}

/* The prefix, q/k/v, the pre-attention norm and the q/k norms of layer L. */
static int read_layer(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_spec *s = p->spec;
    const hf_tensor_names *n = s->names;
    model *m = h->m;
    size_t L = h->layer, d = m->d_model;
    const char *dir = n->layer_dir, *tail = n->layer_tail ? n->layer_tail : "";
    const char *first = n->qkv == HF_QKV_HOOK ? p->norm_name : n->q;

    const char *const *prefixes = h->prefixes ? h->prefixes : s->prefixes;

    if (prefixes && hf_pick_prefix(h, prefixes, err, LAYER ".weight", dir, L, tail, first))
        return -1;
    if (read_qkv(h, p, err))
        return -1;
    if (p->norm != PE_NORM_NONE &&
        (hf_weight(h, W_NORM_WEIGHT, 1, d, 0, err, LAYER ".weight", dir, L, tail, p->norm_name) ||
         (s->norm_bias &&
          hf_weight(h, W_NORM_BIAS, 1, d, 0, err, LAYER ".bias", dir, L, tail, p->norm_name))))
        return -1;
    if (p->qk_norm && read_qk_norms(h, p, err))
        return -1;
    if (s->norm_one_plus) {
        one_plus(&m->weights[W_NORM_WEIGHT]);
        one_plus(&m->weights[W_Q_NORM_WEIGHT]);
        one_plus(&m->weights[W_K_NORM_WEIGHT]);
    }
    return 0;
}

/* The embedding LayerNorm under its name, or its TF-era .gamma / .beta. */
static int read_embed_norm(hf_load *h, const hf_tensor_names *n, model_error *err)
{
    size_t d = h->m->d_model;
    bool old = n->embed_norm_tf_names && !hf_has(h, "%s.weight", n->embed_norm) &&
               hf_has(h, "%s.gamma", n->embed_norm);

    if (hf_weight(h, W_EMBED_NORM_WEIGHT, 1, d, 0, err, "%s.%s", n->embed_norm,
                  old ? "gamma" : "weight") ||
        hf_weight(h, W_EMBED_NORM_BIAS, 1, d, 0, err, "%s.%s", n->embed_norm,
                  old ? "beta" : "bias"))
        return -1;
    return 0;
}

/* Layer 0's token table, position table and embedding norm. */
static int read_embeddings(hf_load *h, hf_plan *p, model_error *err)
{
    const hf_spec *s = p->spec;
    const hf_tensor_names *n = s->names;
    model *m = h->m;
    size_t d = m->d_model;
    const char *const *e = n->embed;

    if (h->layer > 0)
        return 0;
    if (s->token_ids_refusal) {
        m->token_ids_refusal = s->token_ids_refusal;
        return 0;
    }
    while (e[1] && !hf_has(h, "%s", *e))
        e++;
    if (hf_weight(h, W_TOKEN_EMBEDDING, 2, 0, d, err, "%s", *e) ||
        (s->embed_scale && hf_gemma_embed_scale(h, s, err)) ||
        (n->position_table &&
         hf_weight(h, W_POSITION_TABLE, 2, 0, d, err, "%s", n->position_table)))
        return -1;
    if (!s->embed_norm)
        return 0;
    m->embed_norm = s->embed_norm;
    if (s->eps_into == HF_EPS_NORM)
        m->embed_norm_eps = m->norm_eps;
    return read_embed_norm(h, n, err);
}

int hf_decoder_load(hf_load *h, const hf_spec *s, model_error *err)
{
    hf_plan p = {.spec = s,
                 .scheme = s->scheme,
                 .norm = s->norm,
                 .norm_name = s->names->norm,
                 .fused = s->names->fused,
                 .qk_norm = s->qk_norm};

    if (s->positions_layer0_only && h->layer > 0)
        p.scheme = SCHEME_NONE;
    /* RoBERTa's positions count from the pad; one past the largest
     * position could never be a table row */
    if (s->position_rule == MODEL_POSITIONS_PAD_IDS &&
        hf_int(h, HF_KEYS("pad_token_id"), false, 1, 0, PE_MAX_POSITION - 1, &h->m->pad_token_id,
               err))
        return -1;
    if (read_shape(h, &p, err) || read_layer_kind(h, &p, err) || read_rope_switch(h, &p, err) ||
        (s->nope && read_nope(h, &p, err)) || check_refusals(h, s->refusals, err) ||
        read_qk_norm_key(h, &p, err) || (s->configure && s->configure(h, &p, err)) ||
        set_shape(h, &p, err) || build_params(h, &p, err) || (s->params && s->params(h, &p, err)) ||
        (s->gemma_scores && hf_score_transforms(h, s->softcap_default, err)) ||
        read_multipliers(h, s, err))
        return -1;
    if (read_layer(h, &p, err) || read_embeddings(h, &p, err) ||
        (s->weights && s->weights(h, &p, err)))
        return -1;
    return 0;
}

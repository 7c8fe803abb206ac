/*
 * model_dir.c - load a model directory: read config.json, tell posenc's
 * own format from a Hugging Face checkpoint, load the tensors, then fuse
 * the projection and release what the fused copy replaces (see
 * model_dir.h).
 */
#include "models/model_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "models/hf_spec.h"
#include "models/hf_text_model.h"
#include "models/model_file.h"
#include "models/safetensors.h"
#include "models/scheme.h"

static int nomem(model_error *err)
{
    return model_nomem(err, "the model");
}

/* A failure of a model.h or scheme.h function (a description error),
 * rewrapped as the loader's: "<where>: <message>". */
static int rewrap(model_error *err, model_error_kind kind, const char *where,
                  const desc_error *inner)
{
    return model_fail(err, kind, "%s: %s", where, inner->json.message);
}

/* ---- posenc's own format ----------------------------------------------- */

/* The contract's weights present in the file, with their expected shapes. */
static int read_contract_weights(model *m, st_set *w, model_error *err)
{
    size_t d = m->d_model, qd = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    const struct {
        size_t ndim, d0, d1;
    } want[W_CONTRACT_COUNT] = {
        [W_WQ] = {2, d, qd},
        [W_WK] = {2, d, kvd},
        [W_WV] = {2, d, kvd},
        [W_BQ] = {1, qd, 0},
        [W_BK] = {1, kvd, 0},
        [W_BV] = {1, kvd, 0},
        [W_NORM_WEIGHT] = {1, d, 0},
        [W_NORM_BIAS] = {1, d, 0},
        [W_POSITION_TABLE] = {2, 0, d},
        [W_T5_BIAS] = {2, 0, m->heads},
        [W_TOKEN_EMBEDDING] = {2, 0, d},
    };

    for (int k = 0; k < W_CONTRACT_COUNT; k++) {
        const char *name = weight_names[k];
        size_t dims[2] = {want[k].d0, want[k].d1};
        if (!st_set_has(w, name)) {
            if (k <= W_WV)
                return model_fail(err, MODEL_E_TENSOR,
                                  "%s: no tensor %s (a "
                                  "posenc-format model needs wq, wk and wv)",
                                  st_set_source(w), name);
            continue;
        }
        if (st_set_read(w, name, want[k].ndim, dims, &m->weights[k], &m->weight_dtype[k], err))
            return -1;
    }
    return 0;
}

/* What a weight table is for must match the config: a norm and its
 * weights go together; the model's own scheme has its table. */
static int check_contract_weights(const model *m, const char *cfg_path, const char *src,
                                  model_error *err)
{
    if (m->norm == PE_NORM_NONE && (model_has(m, W_NORM_WEIGHT) || model_has(m, W_NORM_BIAS)))
        return model_fail(err, MODEL_E_TENSOR,
                          "%s: tensor %s is given but %s has no "
                          "norm",
                          src, model_has(m, W_NORM_WEIGHT) ? "norm_weight" : "norm_bias", cfg_path);
    if (m->norm != PE_NORM_NONE && !model_has(m, W_NORM_WEIGHT))
        return model_fail(err, MODEL_E_TENSOR,
                          "%s: no tensor norm_weight, which the "
                          "norm of %s needs",
                          src, cfg_path);
    if (m->norm == PE_NORM_RMS && model_has(m, W_NORM_BIAS))
        return model_fail(err, MODEL_E_TENSOR,
                          "%s: tensor norm_bias: rmsnorm takes "
                          "no bias",
                          src);
    if (m->scheme == SCHEME_LEARNED && !model_has(m, W_POSITION_TABLE))
        return model_fail(err, MODEL_E_TENSOR,
                          "%s: no tensor position_table, which "
                          "scheme learned (%s) needs",
                          src, cfg_path);
    if (m->scheme == SCHEME_T5) {
        scheme s;
        desc_error inner;
        if (!model_has(m, W_T5_BIAS))
            return model_fail(err, MODEL_E_TENSOR,
                              "%s: no tensor t5_bias, which "
                              "scheme t5 (%s) needs",
                              src, cfg_path);
        if (scheme_parse(SCHEME_T5, m->params, "params", &s, &inner))
            return rewrap(err, MODEL_E_VALUE, cfg_path, &inner);
        if (s.num_buckets != m->weights[W_T5_BIAS].dim[0])
            return model_fail(err, MODEL_E_TENSOR,
                              "%s: tensor t5_bias has %zu rows but "
                              "params.num_buckets is %zu",
                              src, m->weights[W_T5_BIAS].dim[0], s.num_buckets);
    }
    return 0;
}

static int load_posenc(model *m, const json_t *cfg, const char *cfg_path, st_set *w,
                       model_error *err)
{
    desc_error inner;

    if (model_parse_description(cfg, "", false, m, &inner))
        return rewrap(err, MODEL_E_VALUE, cfg_path, &inner);
    return read_contract_weights(m, w, err) ||
                   check_contract_weights(m, cfg_path, st_set_source(w), err)
               ? -1
               : 0;
}

/* ---- Hugging Face ----------------------------------------------------------- */

/* The unsupported-model_type error: the table's model_type values. */
static int unsupported(const char *cfg_path, const hf_text_model *t, model_error *err)
{
    char names[2048], wrappers[512]; /* the table's model_type values, the wrappers served */

    hf_spec_names(names, sizeof names);
    hf_wrapper_names(wrappers, sizeof wrappers);
    if (t->wrapper)
        return model_fail(err, MODEL_E_VALUE,
                          "%s: model_type '%.60s' serves its text model, model_type '%.60s', "
                          "which is not supported (%s)",
                          cfg_path, t->wrapper, t->model_type, names);
    return model_fail(err, MODEL_E_VALUE,
                      "%s: model_type '%.60s' is not supported (%s; wrappers of these: %s; a "
                      "config without model_type is posenc's own format)",
                      cfg_path, t->model_type, names, wrappers);
}

/* The text model's spec and config (a wrapper's text_config) into h. */
static int load_hf_text(model *m, hf_load *h, const hf_text_model *t, model_error *err)
{
    const hf_spec *spec = hf_spec_find(t->model_type);

    if (!spec)
        return unsupported(h->config_path, t, err);
    free(m->architecture);
    if (!(m->architecture = strdup(t->model_type)))
        return nomem(err);
    if (t->wrapper) {
        snprintf(m->wrapper, sizeof m->wrapper, "%s", t->wrapper);
        m->text_config = t->text_config;
    }
    if (t->config)
        h->config = t->config;
    h->prefixes = t->prefixes;
    return hf_decoder_load(h, spec, err);
}

static int load_hf(model *m, const json_t *cfg, const char *cfg_path, st_set *w, size_t layer,
                   const model_warner *warn, model_error *err)
{
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    hf_load h = {.config_path = cfg_path,
                 .config = cfg,
                 .weights = w,
                 .layer = layer,
                 .m = m,
                 .warn = warn};
    hf_text_model text = {0}; /* owns text.config */
    desc_error inner;
    scheme check;

    if (!type)
        return model_fail(err, MODEL_E_KEY, "%s: model_type must be a string", cfg_path);
    if (hf_text_model_find(cfg, type, cfg_path, &text, err)) {
        json_decref(text.config);
        return -1;
    }
    m->layer = layer;
    int rc = load_hf_text(m, &h, &text, err);
    json_decref(text.config);
    if (rc)
        return -1;
    /* The bound of inline models: keeps every BLAS size within an int. */
    if ((m->heads + 2 * m->kv_heads) * m->head_dim > (size_t)1 << 24)
        return model_fail(err, MODEL_E_VALUE,
                          "%s: (heads + 2*kv_heads)*head_dim "
                          "= %zu is too large",
                          cfg_path, (m->heads + 2 * m->kv_heads) * m->head_dim);
    /* The loader builds params itself; check them like any model's. */
    if (scheme_parse(m->scheme, m->params, "params", &check, &inner))
        return rewrap(err, MODEL_E_VALUE, cfg_path, &inner);
    scheme_free(&check);
    return 0;
}

/* ---- both --------------------------------------------------------------------- */

/* The projection is fused once; the separate copies go, their shapes stay
 * for /info. The dtype on disk is the weights' common one, or "mixed". */
static int finish(model *m, const char *where, model_error *err)
{
    desc_error inner;

    if (model_fuse(m, &inner))
        return rewrap(err, MODEL_E_NOMEM, where, &inner);
    for (weight_id w = W_WQ; w <= W_BV; w++) {
        free(m->weights[w].data);
        m->weights[w].data = NULL;
    }
    m->dtype = NULL;
    for (int w = 0; w < W_COUNT; w++) {
        const char *dt = m->weight_dtype[w];
        if (!dt)
            continue;
        if (m->dtype && strcmp(m->dtype, dt) != 0) {
            m->dtype = "mixed";
            break;
        }
        m->dtype = dt;
    }
    if (!m->dtype)
        m->dtype = "F32";
    return 0;
}

model *model_load_dir(const char *name, const char *dir, bool has_layer, size_t layer,
                      const model_warner *warn, model_error *err)
{
    size_t n = strlen(dir);
    char *cfg_path = malloc(n + sizeof "/config.json");
    json_t *cfg = NULL;
    st_set *w = NULL;
    model *m = NULL;
    int rc = -1;

    if (!cfg_path) {
        nomem(err);
        return NULL;
    }
    memcpy(cfg_path, dir, n);
    memcpy(cfg_path + n, "/config.json", sizeof "/config.json");
    if (!(cfg = model_file_json(cfg_path, 0, err)))
        goto out;
    if (!json_is_object(cfg)) {
        model_fail(err, MODEL_E_FILE, "%s: not a JSON object", cfg_path);
        goto out;
    }
    const json_t *type = json_object_get(cfg, "model_type");
    bool hf = type && !json_is_null(type);
    if (has_layer && !hf) {
        model_fail(err, MODEL_E_VALUE,
                   "%s has no model_type, so it is posenc's own "
                   "format: :LAYER is only for Hugging Face checkpoints",
                   cfg_path);
        goto out;
    }
    if (st_set_open(dir, &w, err))
        goto out;
    if (!(m = model_alloc(name, st_set_source(w), "posenc"))) {
        nomem(err);
        goto out;
    }
    if (hf ? load_hf(m, cfg, cfg_path, w, layer, warn, err) : load_posenc(m, cfg, cfg_path, w, err))
        goto out;
    rc = finish(m, dir, err);
out:
    st_set_close(w);
    json_decref(cfg);
    free(cfg_path);
    if (rc) {
        model_free(m);
        return NULL;
    }
    return m;
}

/*
 * info.c - GET /info: version, build, threads, limits and the models.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "diagnose/pe_diagnose.h"
#include "respond.h"
#include "service.h"
#include "json/float_text.h"
#include "json/strbuf.h"

static void write_norm(strbuf *sb, const char *key, pe_norm_kind kind, double eps)
{
    if (kind == PE_NORM_NONE)
        strbuf_printf(sb, ",\"%s\":null", key);
    else
        strbuf_printf(sb, ",\"%s\":{\"type\":\"%s\",\"eps\":%.17g}", key, model_norm_names[kind],
                      eps);
}

/* The norms and the steps around the projection and rotation that the
 * model has (loaded checkpoints only, but for the pre-attention norm). */
static void write_steps(strbuf *sb, const model *m)
{
    write_norm(sb, "norm", m->norm, m->norm_eps);
    /* Only loaded checkpoints have an input stage beyond the contract's. */
    if (m->embed_norm != PE_NORM_NONE)
        write_norm(sb, "embed_norm", m->embed_norm, m->embed_norm_eps);
    /* q/k norms (bias: Phi's only) and a score soft cap: only the checkpoints that have them */
    if (m->qk_norm != MODEL_QK_NORM_NONE)
        strbuf_printf(sb,
                      ",\"qk_norm\":{\"type\":\"%s\",\"over\":\"%s\",\"weights\":\"%s\","
                      "%s\"eps\":%.17g}",
                      m->qk_norm_type == PE_NORM_LAYER ? "layernorm" : "rmsnorm",
                      m->qk_norm == MODEL_QK_NORM_WIDTH ? "width" : "head",
                      m->qk_norm == MODEL_QK_NORM_HEAD_WEIGHTS ? "per_head" : "shared",
                      m->weights[W_Q_NORM_BIAS].ndim ? "\"bias\":true," : "", m->qk_norm_eps);
    /* gated attention: sigmoid(z.w_gate + b_gate) multiplies the attention's output */
    if (m->gated)
        strbuf_puts(sb, ",\"gate\":\"sigmoid\"");
    /* how a legacy rotary_dim was read (MiniMax-M2): rotary_dim as partial */
    if (m->rotary_dim_rule)
        strbuf_printf(sb, ",\"rotary_dim_rule\":\"%s\"", m->rotary_dim_rule);
    /* Gemma 4: v's weightless norm, v from k's projection, shared k and v */
    if (m->v_norm)
        strbuf_printf(sb, ",\"v_norm\":{\"type\":\"rmsnorm\",\"eps\":%.17g}", m->v_norm_eps);
    if (m->k_eq_v)
        strbuf_puts(sb, ",\"k_eq_v\":true");
    if (m->kv_shared)
        strbuf_printf(sb, ",\"kv_shared_from\":%zu", m->kv_shared_from);
    if (m->score_softcap > 0.0)
        strbuf_printf(sb, ",\"score_softcap\":%.17g", m->score_softcap);
    if (m->qkv_clip > 0.0)
        strbuf_printf(sb, ",\"clip_qkv\":%.17g", m->qkv_clip);
    /* Llama 4: after the rotation */
    if (m->post_rope_qk_norm) /* weighted: HunYuan's RMSNorm, one weight for the heads */
        strbuf_printf(sb,
                      ",\"post_rope_qk_norm\":{\"type\":\"%s\",\"over\":\"head\",%s"
                      "\"eps\":%.17g}",
                      model_post_rope_weighted(m) ? "rmsnorm" : "l2norm",
                      model_post_rope_weighted(m) ? "\"weights\":\"shared\"," : "",
                      m->post_rope_qk_norm_eps);
    if (m->attn_temperature)
        strbuf_printf(sb, ",\"attn_temperature\":{\"floor_scale\":%.17g,\"attn_scale\":%.17g}",
                      m->attn_floor_scale, m->attn_temperature_scale);
    if (m->q_scale) /* Ministral 3: every layer, from the position id */
        strbuf_printf(sb,
                      ",\"q_scale\":{\"form\":\"mistral\",\"beta\":%.17g,"
                      "\"original_max_position_embeddings\":%.17g}",
                      m->q_scale_beta, m->q_scale_orig);
}

/* How positions come from attention_mask / token_ids (contract v1.1). */
static void write_positions(strbuf *sb, const model *m)
{
    strbuf_printf(sb, ",\"positions\":{\"rule\":\"%s\"",
                  model_position_rule_names[m->position_rule]);
    if (m->position_rule == MODEL_POSITIONS_PAD_IDS)
        strbuf_printf(sb, ",\"pad_token_id\":%" PRId64, m->pad_token_id);
    if (m->table_offset)
        strbuf_printf(sb, ",\"table_offset\":%" PRId64, m->table_offset);
    strbuf_putc(sb, '}');
}

/* MLA's ranks and gpt_oss's sink logits, when the model has them. */
static void write_attention_extras(strbuf *sb, const model *m)
{
    if (m->mla) /* DeepSeek's multi-head latent attention */
        strbuf_printf(sb,
                      ",\"mla\":{\"q_lora_rank\":%zu,\"kv_lora_rank\":%zu,"
                      "\"qk_nope_head_dim\":%zu,\"qk_rope_head_dim\":%zu,\"v_head_dim\":%zu,"
                      "\"eps\":%.17g}",
                      m->mla_w.q_lora_rank, m->mla_w.kv_lora_rank, m->mla_w.nope_dim,
                      m->mla_w.rope_dim, m->mla_w.v_dim, m->mla_w.q_norm_eps);
    /* gpt_oss: the sink logits, one per head (scores stay the tokens' logits) */
    const tensor *sinks = &m->weights[W_ATTN_SINKS];
    if (sinks->ndim == 1) {
        strbuf_puts(sb, ",\"attention_sinks\":[");
        for (size_t h = 0; h < sinks->dim[0]; h++) {
            char text[FLOAT_TEXT_MAX];
            float_to_text(sinks->data[h], text);
            strbuf_printf(sb, "%s%s", h ? "," : "", text);
        }
        strbuf_putc(sb, ']');
    }
}

/* The shape and the dtype on disk of every weight the model has. */
static void write_weights(strbuf *sb, const model *m)
{
    strbuf_puts(sb, ",\"weights\":{");
    bool first = true;
    for (int w = 0; w < W_COUNT; w++) {
        const tensor *t = &m->weights[w];
        if (t->ndim == 0)
            continue;
        strbuf_printf(sb, "%s\"%s\":[", first ? "" : ",", weight_names[w]);
        for (size_t i = 0; i < t->ndim; i++)
            strbuf_printf(sb, "%s%zu", i ? "," : "", t->dim[i]);
        strbuf_putc(sb, ']');
        first = false;
    }
    strbuf_puts(sb, "},\"dtypes\":{");
    first = true;
    for (int w = 0; w < W_COUNT; w++) {
        if (m->weights[w].ndim == 0)
            continue;
        strbuf_printf(sb, "%s\"%s\":", first ? "" : ",", weight_names[w]);
        strbuf_put_json_string(sb, m->weight_dtype[w] ? m->weight_dtype[w] : "F32");
        first = false;
    }
    strbuf_putc(sb, '}');
}

static void write_model(strbuf *sb, const model *m)
{
    strbuf_puts(sb, "{\"name\":");
    strbuf_put_json_string(sb, m->name);
    strbuf_puts(sb, ",\"architecture\":");
    strbuf_put_json_string(sb, m->architecture);
    if (m->wrapper[0]) { /* architecture is the text model's model_type */
        strbuf_printf(sb, ",\"text_config\":%s,\"wrapper\":", m->text_config ? "true" : "false");
        strbuf_put_json_string(sb, m->wrapper);
    }
    strbuf_printf(sb, ",\"layer\":%zu,\"dtype\":", m->layer);
    strbuf_put_json_string(sb, m->dtype ? m->dtype : "F32");
    strbuf_printf(sb,
                  ",\"d_model\":%zu,\"heads\":%zu,\"kv_heads\":%zu,\"head_dim\":%zu,"
                  "\"scheme\":",
                  m->d_model, m->heads, m->kv_heads, m->head_dim);
    strbuf_put_json_string(sb, scheme_names[m->scheme]);
    char *params = json_dumps(m->params, JSON_COMPACT | JSON_ENCODE_ANY);
    strbuf_puts(sb, ",\"params\":");
    strbuf_puts(sb, params ? params : "{}");
    free(params);
    if (m->rope_block) /* the block of a nested rope_parameters the layer uses */
        strbuf_printf(sb, ",\"rope_block\":\"%s\"", m->rope_block);
    write_steps(sb, m);
    write_positions(sb, m);
    write_attention_extras(sb, m);
    strbuf_puts(sb, ",\"source\":");
    strbuf_put_json_string(sb, m->source);
    write_weights(sb, m);
    strbuf_putc(sb, '}');
}

void api_info(const api_service *svc, const api_server_facts *facts, api_response *out)
{
    strbuf sb = {0};
    api_error err;

    strbuf_puts(&sb, "{\"name\":\"posenc\",\"version\":");
    strbuf_put_json_string(&sb, facts->version ? facts->version : POSENC_VERSION);
    strbuf_puts(&sb, ",\"build\":{\"compiler\":");
    strbuf_put_json_string(&sb, facts->build ? facts->build : "");
    strbuf_puts(&sb, ",\"openmp\":true}");
    strbuf_printf(&sb, ",\"threads\":{\"http\":%u,\"workers\":%u,\"omp\":%u}", facts->http_threads,
                  facts->workers, facts->omp_threads);
    strbuf_printf(&sb,
                  ",\"limits\":{\"max_body_bytes\":%zu,\"max_tokens\":%zu,"
                  "\"max_output_elements\":%zu,\"max_connections\":%u,"
                  "\"max_position\":9007199254740991,\"max_dim\":%zu,"
                  "\"max_heads\":%zu,\"max_batch\":%zu,\"max_json_depth\":%zu,"
                  "\"max_inflight\":%u,\"workers\":%u,\"timeout_s\":%u,"
                  "\"request_timeout_s\":%u,\"connection_memory_bytes\":%zu}",
                  facts->max_body_bytes, svc->limits.max_tokens, svc->limits.max_output_elements,
                  facts->max_connections, svc->limits.max_dim, svc->limits.max_heads,
                  svc->limits.max_batch, svc->limits.max_json_depth, facts->max_inflight,
                  facts->workers, facts->timeout_s, facts->request_timeout_s,
                  facts->connection_memory);
    strbuf_printf(&sb, ",\"auth\":%s", facts->api_key_required ? "true" : "false");
    strbuf_printf(&sb, ",\"memory\":{\"budget_bytes\":%zu,\"reserved_bytes\":%zu}",
                  facts->memory_budget, facts->memory_reserved);
    strbuf_puts(&sb,
                ",\"schemes\":[\"sinusoidal\",\"learned\",\"rope\",\"alibi\",\"t5\",\"none\"]");
    /* /diagnose's finding codes: the lib's, then the q/k/v ones */
    strbuf_puts(&sb, ",\"diagnose\":{\"finding_codes\":[");
    for (int c = 0; c < PE_DX_CODE_COUNT; c++) {
        strbuf_put_json_string(&sb, pe_dx_code_name((pe_dx_code)c));
        strbuf_putc(&sb, ',');
    }
    strbuf_puts(&sb, "\"weights_permuted\",\"weights_transposed\",\"projection_mismatch\","
                     "\"qk_norm_mismatch\",\"value_rotated\"]}");
    strbuf_puts(&sb, ",\"models\":[");
    for (size_t i = 0; i < svc->n_models; i++) {
        if (i)
            strbuf_putc(&sb, ',');
        write_model(&sb, svc->models[i]);
    }
    strbuf_puts(&sb, "]}");
    memset(out, 0, sizeof *out);
    if (respond_json(out, &sb, 0, &err))
        api_respond_error(out, &err);
}

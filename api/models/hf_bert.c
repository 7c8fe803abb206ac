/*
 * hf_bert.c - what BERT and RoBERTa (model_type bert, roberta,
 * xlm-roberta; their specs in hf_specs.c: learned absolute positions, the
 * embedding LayerNorm, post-norm layers) add: the token-type embedding and
 * RoBERTa's positions counted from the padding token.
 *
 * Hugging Face's BertEmbeddings: e = LayerNorm(word_embeddings[ids] +
 * token_type_embeddings[0] + position_embeddings[positions]) (eps
 * layer_norm_eps); the same with inputs_embeds in place of the word
 * embeddings. posenc serves token type 0 (what BERT uses when no
 * token_type_ids are given). The layers are post-norm: layer 0's attention
 * sees e itself, and layer L's sees the previous layer's output, already
 * normalised. So layer 0: scheme learned, input_bias = the type-0 row,
 * embed_norm = the embedding LayerNorm, no attention norm; layer L > 0:
 * scheme none and no norm at all. q/k/v are nn.Linear with biases.
 *
 * Tensors: [bert.]embeddings.{word,position,token_type}_embeddings.weight,
 * [bert.]embeddings.LayerNorm.{weight,bias} (or the older .gamma/.beta),
 * [bert.]encoder.layer.L.attention.self.{query,key,value}.{weight,bias}.
 * The position_ids buffer some checkpoints carry is not read.
 *
 * RoBERTa (modeling_roberta.py; XLM-R's modeling_xlm_roberta.py is a copy):
 * RobertaEmbeddings.forward takes position_ids, when none are given, from
 * create_position_ids_from_input_ids(input_ids, padding_idx): mask = ids !=
 * pad; positions = cumsum(mask) * mask + pad, so the table's rows start at
 * pad + 1 and every pad token reads row pad; with inputs_embeds,
 * create_position_ids_from_inputs_embeds: pad + 1 .. pad + T. padding_idx
 * is config.pad_token_id (RobertaConfig's default 1). The request side
 * derives them (request_positions_from_ids); the spec names the rule, the
 * loader reads the pad and this file checks that the table reaches past
 * it. Tensors under roberta. instead of bert.
 */
#include <stdlib.h>
#include <string.h>

#include "models/hf_spec.h"

/* Row 0 of token_type_embeddings as input_bias. */
static int token_type0(hf_load *h, size_t d, model_error *err)
{
    model *m = h->m;
    tensor table, *t = &m->weights[W_INPUT_BIAS];

    if (hf_tensor(h, 2, 0, d, &table, &m->weight_dtype[W_INPUT_BIAS], err,
                  "embeddings.token_type_embeddings.weight"))
        return -1;
    if (table.dim[0] == 0) {
        tensor_free(&table);
        return model_fail(err, MODEL_E_TENSOR,
                          "%s: tensor %sembeddings."
                          "token_type_embeddings.weight has no rows (posenc serves token type 0)",
                          st_set_source(h->weights), h->prefix);
    }
    /* The first row is the start of the block: keep it, drop the rest. */
    float *row = realloc(table.data, d * sizeof *row);
    t->data = row ? row : table.data;
    t->ndim = 1;
    t->dim[0] = d;
    return 0;
}

int hf_bert_weights(hf_load *h, hf_plan *p, model_error *err)
{
    (void)p;
    return h->layer == 0 ? token_type0(h, h->m->d_model, err) : 0;
}

int hf_roberta_weights(hf_load *h, hf_plan *p, model_error *err)
{
    const model *m = h->m;
    const tensor *table = &m->weights[W_POSITION_TABLE];

    if (hf_bert_weights(h, p, err))
        return -1;
    if (h->layer == 0 && (uint64_t)m->pad_token_id + 1 >= (uint64_t)table->dim[0])
        return hf_value_fail(h, err,
                             "pad_token_id %lld leaves no row of position_embeddings (%zu rows): "
                             "RoBERTa's positions start at pad_token_id + 1",
                             (long long)m->pad_token_id, table->dim[0]);
    return 0;
}

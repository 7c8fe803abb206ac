/*
 * hf_roberta.c - RoBERTa and XLM-RoBERTa (model_type roberta, xlm-roberta):
 * BERT's embeddings and post-norm layers (hf_bert.c) under the roberta.
 * prefix, with positions counted from the padding token.
 *
 * Hugging Face's RobertaEmbeddings.forward (modeling_roberta.py; XLM-R's
 * modeling_xlm_roberta.py is a copy) takes position_ids, when none are
 * given, from create_position_ids_from_input_ids(input_ids, padding_idx):
 * mask = ids != pad; positions = cumsum(mask) * mask + pad, so the table's
 * rows start at pad + 1 and every pad token reads row pad; with
 * inputs_embeds, create_position_ids_from_inputs_embeds: pad + 1 .. pad + T.
 * padding_idx is config.pad_token_id (RobertaConfig's default 1). The
 * request side derives them (request_positions_from_ids); this loader
 * names the rule and the pad.
 */
#include "models/hf.h"

int hf_roberta_load(hf_load *h, model_error *err)
{
    model *m = h->m;
    int64_t pad;

    /* a pad past the largest position could never be a table row */
    if (hf_int(h, HF_KEYS("pad_token_id"), false, 1, 0, PE_MAX_POSITION - 1, &pad, err) ||
        hf_bert_like_load(h, HF_KEYS("roberta.", ""), err))
        return -1;
    m->position_rule = MODEL_POSITIONS_PAD_IDS;
    m->pad_token_id = pad;
    const tensor *table = &m->weights[W_POSITION_TABLE];
    if (h->layer == 0 && (uint64_t)pad + 1 >= (uint64_t)table->dim[0])
        return hf_value_fail(h, err,
                             "pad_token_id %lld leaves no row of position_embeddings (%zu rows): "
                             "RoBERTa's positions start at pad_token_id + 1",
                             (long long)pad, table->dim[0]);
    return 0;
}

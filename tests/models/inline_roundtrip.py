"""Inline models say what loaded models do (contract 1.3): for loaded
fixtures of every architecture family the suite builds (the checkpoint
builders of checkpoints.py and the arch_* modules), /info's description of
the model, with the info-only keys dropped and its `weights` shapes
replaced by the arrays in effect (the checkpoint's tensors in the
contract's orientation, fused projections split (ModernBERT's Wqkv
included, its embedding norm at layer 0), Gemma's and Qwen3.5's
(1 + w) norms folded, DeepSeek-V3's rope channels de-interleaved, gated
q_proj split into wq and w_gate), sent as an inline model to /apply must
give bit for bit the loaded model's answer: q, k, v, scores (bias for the
relative schemes, the gate for gated attention), for one sequence and for
a left-padded causal batch (each model's position rule). Then: inline
models whose steps are malformed, or whose weights do not fit their steps,
are refused naming the key."""
import numpy as np

import checkpoints as ck
from arch_2026 import glm_ckpt, gpt_oss_ckpt, internlm2_ckpt
from arch_block_keys import hunyuan_ckpt, ministral3_ckpt
from arch_rope_blocks import modernbert_ckpt, olmo3_ckpt, to_v5
from arch_families import fam_ckpt, glm_lite_ckpt
from arch_hybrid import granite_h_ckpt, lfm2_ckpt
from arch_mistral4 import mistral4_ckpt
import arch_common as ac
import arch_wrappers as aw
from arch_dsa import dsa_ckpt
from arch_gated import gated_ckpt
from arch_minimax import minimax_ckpt
from arch_phi import phi_ln_checkpoint
from harness import Server, fixture_args, info_models, stop_clean

RNG = np.random.default_rng(1300)

# What /info says of a model that is not its description (provenance and
# the weights' shapes and dtypes on disk).
INFO_ONLY = ("name", "architecture", "layer", "dtype", "source", "weights", "dtypes", "wrapper",
             "text_config")

ONE_PLUS = ("gemma", "gemma2", "gemma3_text", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
GATED = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
# token tables used as stored (Gemma's and MiniCPM's are scaled at load)
PLAIN_TABLE = ("llama", "qwen3", "minimax_m2", "exaone4")


def fixtures():
    """name: (checkpoint, layer, prefix of its tensors)."""
    g3 = ck.gemma3()
    # Gemma 3 >= 4B as transformers 5 saves it: a gemma3 wrapper whose
    # text_config holds nested rope blocks (a yarn full block, a sliding one)
    g3_text = ck.gemma3(seed=1318, prefix="model.language_model.",
                        rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                      "original_max_position_embeddings": 16})
    g3w = ac.wrap(ck.Checkpoint(to_v5(g3_text.config, "gemma3_text"), g3_text.tensors), "gemma3")
    mb = modernbert_ckpt(seed=1317)
    l4 = ck.llama4_text()
    ds3 = ck.deepseek()
    return {
        "llama": (ck.llama(), 0, "model."), "llama_l1": (ck.llama(seed=2, bias=True), 1, "model."),
        "qwen2": (ck.llama(seed=3, model_type="qwen2", bias=True, head_dim=12), 0, "model."),
        "gpt2": (ck.gpt2(), 0, ""), "gpt2_l1": (ck.gpt2(seed=4, prefix="transformer."), 1,
                                               "transformer."),
        "bert": (ck.bert(), 0, "bert."), "roberta": (ck.roberta(), 0, "roberta."),
        "opt": (ck.opt(), 0, "model.decoder."), "bloom": (ck.bloom(), 0, "transformer."),
        "bloom_l1": (ck.bloom(seed=5), 1, "transformer."), "t5": (ck.t5(), 0, ""),
        "gpt_neox": (ck.gpt_neox(), 0, "gpt_neox."), "phi": (ck.phi(), 0, "model."),
        "phi_qkln": (phi_ln_checkpoint(1301), 1, "model."), "phi3": (ck.phi3(), 0, "model."),
        "starcoder2": (ck.starcoder2(), 0, "model."), "gemma": (ck.gemma(), 0, "model."),
        "gemma2": (ck.gemma2(), 1, "model."), "gemma3": (g3, 0, "model."),
        "gemma3_l5": (g3, 5, "model."), "qwen3": (ck.qwen3(), 0, "model."),
        "olmo2": (ck.olmo2(), 1, "model."), "mpt": (ck.mpt(attn={"clip_qkv": 0.5}), 0, "transformer."),
        "llama4_rope": (l4, 0, "language_model.model."),
        "llama4_nope": (l4, 3, "language_model.model."),
        "deepseek_v3": (ds3, 1, "model."),
        "deepseek_v2": (ck.deepseek(seed=7, model_type="deepseek_v2", q_lora_rank=None), 0,
                        "model."),
        "cohere_qk": (ck.cohere(qk_norm=True), 0, "model."), "cohere2": (ck.cohere2(), 1, "model."),
        "stablelm_qk": (ck.stablelm(qk_norm=True), 0, "model."),
        "minicpm": (ck.minicpm(), 1, "model."), "exaone4": (ck.exaone4(), 0, "model."),
        "internlm2": (internlm2_ckpt(), 0, "model."), "glm4": (glm_ckpt(), 0, "model."),
        "gpt_oss": (gpt_oss_ckpt(), 0, "model."),
        "granite": (ck.llama(seed=6, model_type="granite", attention_multiplier=0.2,
                             embedding_multiplier=3.0), 0, "model."),
        "qwen3_5": (gated_ckpt(), 3, "model.language_model."),
        "qwen3_next": (gated_ckpt(seed=3510, prefix="model.", model_type="qwen3_next",
                                  layer_types=None, bias=True), 3, "model."),
        "minimax_m2": (minimax_ckpt(), 0, "model."),
        "glm_moe_dsa": (dsa_ckpt(model_type="glm_moe_dsa", seed=3215), 0, "model."),
        "falcon_mq": (ck.falcon(), 0, "transformer."),
        "falcon_new_l1": (ck.falcon(seed=1305, new_arch=True, kv_heads=2, bias=True), 1,
                          "transformer."),
        "smollm3_nope": (ck.llama(seed=8, model_type="smollm3", layers=4), 3, "model."),
        "ministral3": (ministral3_ckpt(seed=1310), 1, "model."),
        "hunyuan": (hunyuan_ckpt(seed=1311), 0, "model."),
        "olmo3": (olmo3_ckpt(seed=1312), 3, "model."),
        "qwen2_5_vl": (aw.qwen2_vl_text(1314, "F32", "model.", model_type="qwen2_5_vl"), 1,
                       "model."),
        "qwen3_vl": (ac.wrap(aw.qwen3_vl_text(1315, "F32", "model.language_model."), "qwen3_vl"),
                     0, "model.language_model."),
        "glm4v": (ac.wrap(aw.glm4v_text(1316, "F32", "model.language_model."), "glm4v"), 1,
                  "model.language_model."),
        "modernbert": (mb, 0, "model."), "modernbert_l1": (mb, 1, "model."),
        "modernbert_l3": (mb, 3, "model."),
        "gemma3_nested": (g3w, 0, "model.language_model."),
        "gemma3_nested_l5": (g3w, 5, "model.language_model."),
        # families of the table, a hybrid stack's attention layer, Mistral 4, ERNIE-4.5-VL
        "qwen3_moe": (fam_ckpt("qwen3_moe", 1320, qk="vector", hd=16), 1, "model."),
        "qwen2_moe": (fam_ckpt("qwen2_moe", 1321, bias=True, qkv_bias=True), 0, "model."),
        "glm4_moe": (fam_ckpt("glm4_moe", 1322, qk="vector", hd=16, use_qk_norm=True,
                              partial_rotary_factor=0.5, attention_bias=True, bias=True), 0,
                     "model."),
        "seed_oss": (fam_ckpt("seed_oss", 1323, bias=True, attention_bias=True), 0, "model."),
        "apertus": (fam_ckpt("apertus", 1324, qk="vector", rope_theta=None), 1, "model."),
        "ernie4_5_moe": (fam_ckpt("ernie4_5_moe", 1325, use_bias=True, bias=True), 0, "model."),
        "exaone_moe": (fam_ckpt("exaone_moe", 1326, layers=4, qk="vector", hd=16,
                                layer_types=["sliding_attention"] * 3 + ["full_attention"],
                                sliding_window=128), 0, "model."),
        "afmoe": (fam_ckpt("afmoe", 1327, layers=4, qk="vector", mup_enabled=True,
                           layer_types=["sliding_attention"] * 3 + ["full_attention"],
                           sliding_window=1024), 1, "model."),
        "arcee": (fam_ckpt("arcee", 1328, kv=1), 0, "model."),
        "glm4_moe_lite": (glm_lite_ckpt(1329, "F32"), 1, "model."),
        "granitemoehybrid": (granite_h_ckpt(1330, "F32", {0, 2},
                                            layer_types=["full_attention", "linear_attention"] * 2,
                                            position_embedding_type="rope"), 2, "model."),
        "mistral4": (mistral4_ckpt(seed=1331), 1, "model."),
        "granitemoe": (ck.llama(seed=1332, model_type="granitemoe", attention_multiplier=0.2,
                                embedding_multiplier=0.7071), 1, "model."),
        "ernie4_5_vl": (ac.wrap(fam_ckpt("ernie4_5_vl_moe_text", 1333,
                                         prefix="model.language_model.", hd=16, kv=None,
                                         rope_theta=None, rope_parameters={
                                             "rope_type": "default", "rope_theta": 5e5,
                                             "mrope_section": [3, 3, 2]}), "ernie4_5_vl_moe"),
                        1, "model.language_model."),
        "lfm2": (lfm2_ckpt(1334, "F32", {0, 2}, layer_types=["full_attention", "conv"] * 2), 2,
                 "model."),
    }


# --------------------------------------------------- the weights in effect
def f32(a):
    return np.asarray(a, np.float32)


def _heads_split(rows, parts, heads, hd):
    """A fused [heads][parts][hd][in] weight (rows first) into parts lists."""
    r = rows.reshape(heads, parts, hd, *rows.shape[1:])
    return [r[:, i].reshape(heads * hd, *rows.shape[1:]) for i in range(parts)]


def _qkv_fused(arch, cfg, t, m):
    """q, k, v rows of a fused tensor t ([rows] or [rows][in]), per layout."""
    H, KV, hd = m["heads"], m["kv_heads"], m["head_dim"]
    if arch in ("gpt_neox", "bloom"):
        return _heads_split(t, 3, H, hd)
    if arch == "internlm2" or (arch == "falcon" and cfg.get("new_decoder_architecture")):
        g = H // KV
        r = t.reshape(KV, g + 2, hd, *t.shape[1:])
        return [r[:, :g].reshape(H * hd, *t.shape[1:]), r[:, g].reshape(KV * hd, *t.shape[1:]),
                r[:, g + 1].reshape(KV * hd, *t.shape[1:])]
    return np.split(t, [H * hd, (H + KV) * hd])  # stacked: phi3, mpt


FUSED = {"gpt_neox": "attention.query_key_value", "bloom": "self_attention.query_key_value",
         "modernbert": "attn.Wqkv",
         "phi3": "self_attn.qkv_proj", "mpt": "attn.Wqkv", "internlm2": "attention.wqkv",
         "falcon": "self_attention.query_key_value"}
LAYER_DIR = {"gpt2": "h", "bloom": "h", "falcon": "h", "mpt": "blocks", "bert": "encoder.layer",
             "roberta": "encoder.layer", "t5": "encoder.block"}
NORM = {"gpt2": "ln_1", "opt": "self_attn_layer_norm", "mpt": "norm_1", "modernbert": "attn_norm",
        "lfm2": "operator_norm",
        "internlm2": "attention_norm", "t5": "layer.0.layer_norm"}
QKV_NAMES = {"bert": "attention.self.{}", "roberta": "attention.self.{}",
             "t5": "layer.0.SelfAttention.{}"}


def _projections(arch, cfg, w, lp, m, out):
    """wq, wk, wv (and biases) of layer prefix lp into out."""
    if arch == "gpt2":  # Conv1D [in][3d]
        d = m["d_model"]
        for i, n in enumerate("qkv"):
            out["w" + n] = w[lp + "attn.c_attn.weight"][:, i * d:(i + 1) * d]
            out["b" + n] = w[lp + "attn.c_attn.bias"][i * d:(i + 1) * d]
        return
    if arch in FUSED:
        for suffix, key in (("weight", "w"), ("bias", "b")):
            t = w.get(lp + FUSED[arch] + "." + suffix)
            if t is not None:
                for n, part in zip("qkv", _qkv_fused(arch, cfg, t, m)):
                    out[key + n] = part.T if key == "w" else part
        return
    names = QKV_NAMES.get(arch, "self_attn.{}_proj")
    for n, hf in zip("qkv", ("query", "key", "value") if arch in ("bert", "roberta")
                     else ("q", "k", "v")):
        base = lp + names.format(hf)
        out["w" + n] = w[base + ".weight"].T
        if base + ".bias" in w:
            out["b" + n] = w[base + ".bias"]
    if arch in GATED:  # [heads][query | gate][hd]
        H, hd = m["heads"], m["head_dim"]
        for key, t in (("w", w[lp + "self_attn.q_proj.weight"]),
                       ("b", w.get(lp + "self_attn.q_proj.bias"))):
            if t is None:
                continue
            r = t.reshape(H, 2, hd, *t.shape[1:])
            q, gate = r[:, 0].reshape(H * hd, *t.shape[1:]), r[:, 1].reshape(H * hd, *t.shape[1:])
            out[key + "q"], out[key + "_gate"] = (q.T, gate.T) if key == "w" else (q, gate)


def _deinterleave(t, off, group, r):
    """Columns [off + g*group, +r) of t: (x0, x1, x2, ...) -> (x0, x2, ..., x1, x3, ...)."""
    t = t.copy()
    for g in range(off, t.shape[1] - r + 1, group):
        s = t[:, g:g + r]
        t[:, g:g + r] = np.concatenate([s[:, 0::2], s[:, 1::2]], 1)
    return t


def _mla(arch, m, w, lp, out):
    a, mla = lp + "self_attn.", m["mla"]
    nope, rope, kvr = mla["qk_nope_head_dim"], mla["qk_rope_head_dim"], mla["kv_lora_rank"]
    if mla["q_lora_rank"]:
        out["q_a_proj"] = w[a + "q_a_proj.weight"].T
        out["q_a_norm_weight"] = w[a + "q_a_layernorm.weight"]
        out["q_b_proj"] = w[a + "q_b_proj.weight"].T
    else:
        out["q_b_proj"] = w[a + "q_proj.weight"].T
    out["kv_a_proj"] = w[a + "kv_a_proj_with_mqa.weight"].T
    out["kv_a_norm_weight"] = w[a + "kv_a_layernorm.weight"]
    out["kv_b_proj"] = w[a + "kv_b_proj.weight"].T
    if arch != "deepseek_v2":  # V3's apply_rotary_pos_emb_interleave, folded
        out["q_b_proj"] = _deinterleave(out["q_b_proj"], nope, nope + rope, rope)
        out["kv_a_proj"] = _deinterleave(out["kv_a_proj"], kvr, kvr + rope, rope)


def _qk_norms(arch, m, w, lp, out):
    a = lp + "self_attn."
    if arch == "stablelm":
        for n in "qk":
            heads = m["heads"] if n == "q" else m["kv_heads"]
            out[n + "_norm_weight"] = np.stack(
                [w[a + f"{n}_layernorm.norms.{h}.weight"] for h in range(heads)])
        return
    for n in "qk":
        name = a + {"phi": f"{n}_layernorm", "lfm2": f"{n}_layernorm",
                    "hunyuan_v1_dense": ("query" if n == "q" else "key") + "_layernorm"}.get(
                        arch, f"{n}_norm")
        out[n + "_norm_weight"] = w[name + ".weight"]
        if name + ".bias" in w:
            out[n + "_norm_bias"] = w[name + ".bias"]


def _embeddings(arch, cfg, w, prefix, out):
    """Layer 0's tables beside the token table (not attached: the round trip
    sends embeddings)."""
    e = prefix + "embeddings."
    if arch in ("bert", "roberta"):
        out["position_table"] = w[e + "position_embeddings.weight"]
        out["input_bias"] = w[e + "token_type_embeddings.weight"][0]
        out["embed_norm_weight"], out["embed_norm_bias"] = (w[e + "LayerNorm.weight"],
                                                            w[e + "LayerNorm.bias"])
    elif arch == "gpt2":
        out["position_table"] = w[prefix + "wpe.weight"]
    elif arch == "opt":
        out["position_table"] = w[prefix + "embed_positions.weight"]
    elif arch == "modernbert":  # its LayerNorm has no bias
        out["embed_norm_weight"] = w[e + "norm.weight"]
    elif arch == "bloom":
        out["embed_norm_weight"] = w[prefix + "word_embeddings_layernorm.weight"]
        out["embed_norm_bias"] = w[prefix + "word_embeddings_layernorm.bias"]


def effective(m, ckpt, layer, prefix):
    """The arrays in effect for every weight /info lists (but the token table)."""
    arch, cfg, w = m["architecture"], ckpt.config, ckpt.weights()
    lp = f"{prefix}{LAYER_DIR.get(arch, 'layers')}.{layer}."
    out = {}
    if "mla" in m:
        _mla(arch, m, w, lp, out)
    else:
        _projections(arch, cfg, w, lp, m, out)
    norm = lp + NORM.get(arch, "input_layernorm")
    if arch == "falcon" and lp + "ln_attn.weight" in w:  # new_decoder_architecture's two norms
        norm = lp + "ln_attn"
    if norm + ".weight" in w:
        out["norm_weight"] = w[norm + ".weight"]
        if norm + ".bias" in w:
            out["norm_bias"] = w[norm + ".bias"]
    if "qk_norm" in m or "weights" in m.get("post_rope_qk_norm", {}):
        _qk_norms(arch, m, w, lp, out)
    if arch == "t5":
        out["t5_bias"] = w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    if "attention_sinks" in m:
        out["attention_sinks"] = w[lp + "self_attn.sinks"]
    if layer == 0:
        _embeddings(arch, cfg, w, prefix, out)
    out = {k: f32(v) for k, v in out.items()}
    if arch in ONE_PLUS:  # (1.0 + weight.float()), a float32 sum
        for k in ("norm_weight", "q_norm_weight", "k_norm_weight"):
            if k in out:
                out[k] = np.float32(1.0) + out[k]
    return {k: v for k, v in out.items() if k in m["weights"]}


def inline_of(m, ckpt, layer, prefix):
    desc = {k: v for k, v in m.items() if k not in INFO_ONLY}
    desc["weights"] = {k: v.tolist() for k, v in effective(m, ckpt, layer, prefix).items()}
    return desc


# ------------------------------------------------------------ the checks
def _returns(m):
    ret = ["q", "k", "v", "scores", "encoded"]
    if m["scheme"] in ("alibi", "t5"):
        ret.append("bias")
    if m.get("gate"):
        ret.append("gate")
    return ret


def _same(C, label, loaded, inline, ret):
    diff = [k for k in ret if loaded.get(k) != inline.get(k)]
    C.check(not diff and loaded.get("shape") == inline.get("shape"),
            f"{label}: the inline model from /info answers bit for bit as the loaded one "
            f"(differs: {diff})")


def _round_trip(C, srv, name, m, ckpt, layer, prefix):
    listed = set(m["weights"]) - {"token_embedding"}
    model = inline_of(m, ckpt, layer, prefix)
    if not C.check(set(model["weights"]) == listed,
                   f"{name}: the test extracts every weight /info lists: "
                   f"{sorted(listed - set(model['weights']))} missing"):
        return
    T, d, ret = 6, m["d_model"], _returns(m)
    x = RNG.standard_normal((T, d)).astype(np.float32).tolist()
    requests = [{}, {"embeddings": [x, x[2:] + x[:2]], "causal": True,
                     "attention_mask": [[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]}]
    if m["scheme"] != "learned":  # far positions: Llama 4's temperature, YaRN's ramp
        requests.append({"offset": 20000})
    if m["architecture"] in PLAIN_TABLE and layer == 0:  # the table as stored: token_ids too
        table = ckpt.weights()[prefix + "embed_tokens.weight"]
        model["weights"]["token_embedding"] = f32(table).tolist()
        requests.append({"token_ids": [3, 1, 4, 1, 5, 9], "embeddings": None})
    for extra in requests:
        body = {k: v for k, v in dict({"embeddings": x, "return": ret}, **extra).items()
                if v is not None}
        st1, a = srv.request("/apply", dict(body, model=name))
        st2, b = srv.request("/apply", dict(body, model=model))
        if C.check(st1 == st2 == 200, f"{name} {sorted(extra)}: {st1} {st2} {str(b)[:300]}"):
            _same(C, f"{name} {sorted(extra) or 'one row'}", a, b, ret)


def _refusals(C, srv, models):
    """Malformed steps and weights that do not fit them: 400/422 naming the key."""
    base = inline_of(models["qwen3"][0], *models["qwen3"][1:])
    w = base["weights"]
    cases = [
        ("qk_norm type", {"qk_norm": {"type": "l2"}}, 400, "model.qk_norm.type"),
        ("qk_norm over", {"qk_norm": dict(base["qk_norm"], over="rows")}, 400,
         "model.qk_norm.over"),
        ("qk_norm per_head rmsnorm", {"qk_norm": dict(base["qk_norm"], weights="per_head")},
         400, "model.qk_norm.weights"),
        ("qk_norm unknown key", {"qk_norm": dict(base["qk_norm"], where="before")}, 400,
         "model.qk_norm.where"),
        ("qk_norm eps 0", {"qk_norm": dict(base["qk_norm"], eps=0)}, 422, "model.qk_norm.eps"),
        ("no q_norm_weight", {"weights": {k: v for k, v in w.items() if k != "q_norm_weight"}},
         422, "model.weights.q_norm_weight"),
        ("q_norm_weight width", {"weights": dict(w, q_norm_weight=[1.0] * 7)}, 422,
         "model.weights.q_norm_weight"),
        ("q_norm_weight without qk_norm", {"qk_norm": None}, 400,
         "model.weights.q_norm_weight"),
        ("gate without w_gate", {"gate": "sigmoid"}, 422, "model.weights.w_gate"),
        ("gate tanh", {"gate": "tanh"}, 400, "model.gate"),
        ("w_gate without gate", {"weights": dict(w, w_gate=w["wq"])}, 400,
         "model.weights.w_gate"),
        ("softcap 0", {"score_softcap": 0}, 422, "model.score_softcap"),
        ("clip_qkv a string", {"clip_qkv": "1"}, 400, "model.clip_qkv"),
        ("positions rule", {"positions": {"rule": "alibi"}}, 400, "model.positions.rule"),
        ("pad_token_id with cumsum", {"positions": {"rule": "cumsum(mask)-1",
                                                    "pad_token_id": 1}}, 400,
         "model.positions.pad_token_id"),
        ("attn_temperature without attn_scale", {"attn_temperature": {"floor_scale": 8}}, 400,
         "model.attn_temperature.attn_scale"),
        ("post_rope_qk_norm type", {"post_rope_qk_norm": {"type": "layernorm"}}, 400,
         "model.post_rope_qk_norm.type"),
        ("post_rope_qk_norm rmsnorm without weights",
         {"qk_norm": None, "post_rope_qk_norm": {"type": "rmsnorm"}}, 400,
         "model.post_rope_qk_norm.weights"),
        ("post_rope_qk_norm l2norm with weights",
         {"qk_norm": None, "post_rope_qk_norm": {"type": "l2norm", "weights": "shared"}}, 400,
         "model.post_rope_qk_norm.weights"),
        ("post_rope_qk_norm rmsnorm beside qk_norm",
         {"post_rope_qk_norm": {"type": "rmsnorm", "weights": "shared"}}, 400,
         "model.post_rope_qk_norm"),
        ("post_rope_qk_norm rmsnorm without q_norm_weight",
         {"qk_norm": None, "post_rope_qk_norm": {"type": "rmsnorm", "weights": "shared"},
          "weights": {k: v for k, v in w.items() if k not in ("q_norm_weight", "k_norm_weight")}},
         422, "model.weights.q_norm_weight"),
        ("q_scale without beta", {"q_scale": {"form": "mistral",
                                              "original_max_position_embeddings": 16}}, 400,
         "model.q_scale.beta"),
        ("q_scale form", {"q_scale": {"form": "llama", "beta": 0.1,
                                      "original_max_position_embeddings": 16}}, 400,
         "model.q_scale.form"),
        ("embed_norm without weight", {"embed_norm": {"type": "layernorm"}}, 422,
         "model.weights.embed_norm_weight"),
        ("mla with wq", {"mla": {"q_lora_rank": 0, "kv_lora_rank": 4, "qk_nope_head_dim": 4,
                                 "qk_rope_head_dim": 12, "v_head_dim": 4}, "qk_norm": None,
                         "kv_heads": base["heads"]}, 400, "model.weights.wq"),
        ("mla head_dim", {"mla": {"q_lora_rank": 0, "kv_lora_rank": 4, "qk_nope_head_dim": 2,
                                  "qk_rope_head_dim": 4, "v_head_dim": 4}}, 422, "model.mla"),
        ("rotary_dim_rule", {"rotary_dim_rule": "all"}, 400, "model.rotary_dim_rule"),
        ("attention_sinks twice, differing", {"attention_sinks": [0.5] * 4,
                                              "weights": dict(w, attention_sinks=[0.25] * 4)},
         422, "model.attention_sinks"),
    ]
    x = [[0.1] * base["d_model"]] * 3
    for label, over, status, field in cases:
        model = {k: v for k, v in dict(base, **over).items() if v is not None}
        st, r = srv.request("/apply", {"model": model, "embeddings": x})
        C.check(st == status and r.get("error", {}).get("field") == field,
                f"inline model ({label}) -> {status} naming {field}: {st} {r}")


def roundtrip_checks(root, C):
    fx = fixtures()
    names = list(fx)
    for part in range(0, len(names), 30):  # a server serves at most 32 models
        group = {n: fx[n] for n in names[part:part + 30]}
        args = fixture_args(root, f"roundtrip{part}",
                            {n: (c, layer, 0) for n, (c, layer, _) in group.items()})
        with Server(args) as srv:
            models = info_models(C, srv, "roundtrip")
            if models:
                for name, (ckpt, layer, prefix) in group.items():
                    _round_trip(C, srv, name, models[name], ckpt, layer, prefix)
                if "qwen3" in group:
                    _refusals(C, srv, {"qwen3": (models["qwen3"],) + fx["qwen3"]})
            stop_clean(C, srv, "roundtrip")

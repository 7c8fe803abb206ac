#!/usr/bin/python3
"""Model directories over HTTP: for each architecture (Llama family, GPT-2,
BERT, BLOOM, T5; GPT-NeoX, Phi, Phi-3, StarCoder2, Gemma in a second
server; Qwen3, OLMo 2, Gemma 2, Gemma 3 (q/k norms, two rope bases, score
scale and soft cap) in a third; Llama 4's text model (NoPE layers, the
interleaved rotation, L2 norm after it, attention temperature) in a fourth;
DeepSeek-V2/V3's multi-head latent attention in a fifth; Granite and
SmolLM3, Llama variations that are table entries only, in a sixth:
llama_variants.py), each dtype (F32, F16, BF16), single and sharded files,
layer 0 and a later layer, token_ids and embeddings, /apply must return the
Q, K, V (and BLOOM/T5 biases, and scores) of the numpy references in
hf_ref.py; every Hugging Face rope scaling type is checked the same way;
/info must describe each model; and every malformed checkpoint must stop
the server at startup with exit status 2 and a message naming the file and
the tensor or key (FIFOs in place of files included, and messages longer
than the API's 512-byte error text); accepted oddities (rope_scaling keys
Hugging Face does not read, Llama's ignored partial_rotary_factor) give one
warning line each.

Usage: BUILD=build tests/models/test_models.py [NAME...]   (prints "N passed, M failed")
       tests/models/test_models.py --list   (the group names, one a line; GROUPS says what each checks)
       tests/models/test_models.py --jobs=2 [NAME...]   (the groups in two processes at once)
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arch_2026  # noqa: E402
import arch_wrappers  # noqa: E402
import arch_families  # noqa: E402
import arch_hybrid  # noqa: E402
import arch_block_keys  # noqa: E402
import arch_rope_blocks  # noqa: E402
import rope_proportional  # noqa: E402
import checkpoints as ck  # noqa: E402
import hf_ref  # noqa: E402
import llama_variants  # noqa: E402
import arch_options  # noqa: E402
import arch_phi  # noqa: E402
import arch_falcon_alibi  # noqa: E402
import arch_gated  # noqa: E402
import arch_gemma4  # noqa: E402
import arch_minimax  # noqa: E402
import arch_dsa  # noqa: E402
import inline_roundtrip  # noqa: E402
import mask_models  # noqa: E402
import mrope_refs  # noqa: E402
import mrope_loaded  # noqa: E402
import rope2d_refs  # noqa: E402
import self_diagnose  # noqa: E402
import st_write  # noqa: E402
from harness import Checks, Server, run_failing, sanitizer_clean  # noqa: E402

C = Checks()
self_diagnose.install(C)
RNG = np.random.default_rng(1234)


def arr(resp, key):
    return np.array(resp[key], np.float64)


# ------------------------------------------------------------------ models
class Case:
    """One served model: its name, checkpoint, layer, tensor-name prefix and
    reference function."""

    def __init__(self, name, ckpt, ref, layer=0, prefix=None, shards=0, config=None):
        self.name, self.ckpt, self.ref, self.layer = name, ckpt, ref, layer
        self.prefix, self.shards, self.config = prefix, shards, config

    def reference(self, x, positions, from_ids=False):
        kw = {} if self.prefix is None else {"prefix": self.prefix}
        if self.ref in (hf_ref.gemma, hf_ref.gemma2, hf_ref.gemma3, hf_ref.minicpm):
            # the normalizer's rounding depends on the path
            kw.update(from_ids=from_ids, dtype=self.ckpt.tensors[0][1])
        return self.ref(self.config or self.ckpt.config, self.ckpt.weights(), x, positions,
                        self.layer, **kw)

    @property
    def d(self):
        c = self.ckpt.config
        return c.get("hidden_size") or c.get("n_embd") or c.get("n_embed") or c.get("d_model")


def token_table(case):
    w = case.ckpt.weights()
    for key in ("model.embed_tokens.weight", "language_model.model.embed_tokens.weight",
                "embed_tokens.weight", "wte.weight",
                "gpt_neox.embed_in.weight", "embed_in.weight",
                "transformer.wte.weight", "bert.embeddings.word_embeddings.weight",
                "embeddings.word_embeddings.weight", "word_embeddings.weight",
                "transformer.word_embeddings.weight", "encoder.embed_tokens.weight",
                "shared.weight"):
        if key in w:
            return w[key]
    raise KeyError(case.name)


def compare(case, what, resp, want, keys):
    for k in keys:
        if k not in resp:
            C.check(False, f"{case.name} {what}: no '{k}' in the response")
            continue
        C.close(f"{case.name} {what}: {k}", arr(resp, k), want[k])


def run_case(srv, case):
    keys = ["q", "k", "v", "scores"] + (["bias"] if case.ref in (hf_ref.bloom, hf_ref.t5,
                                                                hf_ref.mpt) else [])
    ret = keys
    T = 7
    pos = np.arange(T)
    if case.layer == 0:
        table = token_table(case)
        ids = RNG.integers(0, table.shape[0], T)
        st, r = srv.request("/apply", {"model": case.name, "token_ids": ids.tolist(), "return": ret})
        if C.check(st == 200, f"{case.name} token_ids: status {st} {r}"):
            compare(case, "token_ids", r, case.reference(table[ids], pos, from_ids=True), keys)
    # embeddings: inputs_embeds at layer 0, the hidden state later
    x = RNG.standard_normal((T, case.d)).astype(np.float32)
    st, r = srv.request("/apply", {"model": case.name, "embeddings": x.tolist(), "return": ret})
    if C.check(st == 200, f"{case.name} embeddings: status {st} {r}"):
        compare(case, "embeddings", r, case.reference(x.astype(np.float64), pos), keys)
    if case.layer > 0:
        st, r = srv.request("/apply", {"model": case.name, "token_ids": [1, 2]})
        C.check(st == 422 and r["error"].get("field") == "token_ids" and "layer" in
                r["error"]["message"], f"{case.name}: token_ids past layer 0 -> 422, got {st} {r}")


def extra_requests(srv, cases):
    """Batches, offsets, explicit positions, an id out of range."""
    g = cases["gpt2"]
    table = token_table(g)
    ids = RNG.integers(0, table.shape[0], (2, 5))
    st, r = srv.request("/apply", {"model": "gpt2", "token_ids": ids.tolist(), "offset": 30})
    if C.check(st == 200, f"gpt2 batched + offset: status {st} {r}"):
        for b in range(2):
            want = g.reference(table[ids[b]], np.arange(30, 35))
            for k in "qkv":
                C.close(f"gpt2 batched row {b} offset 30: {k}", arr(r, k)[b], want[k])
    st, r = srv.request("/apply", {"model": "gpt2", "token_ids": [1, 2], "offset": 39})
    C.check(st == 422 and "40" in r["error"]["message"],
            f"gpt2 position past n_positions -> 422 naming the limit, got {st} {r}")
    lm = cases["llama"]
    table = token_table(lm)
    ids, pos = [3, 9, 1, 4], np.array([5, 6, 40, 41])
    st, r = srv.request("/apply", {"model": "llama", "token_ids": ids, "positions": pos.tolist()})
    if C.check(st == 200, f"llama positions: status {st} {r}"):
        want = lm.reference(table[ids], pos)
        for k in "qkv":
            C.close(f"llama explicit positions: {k}", arr(r, k), want[k])
    t = cases["t5"]
    table = token_table(t)
    ids, pos = [3, 9, 1, 4, 7, 8, 2], np.array([0, 3, 9, 20, 45, 70, 130])
    st, r = srv.request("/apply", {"model": "t5", "token_ids": ids, "positions": pos.tolist(),
                                   "return": ["bias", "scores"]})
    if C.check(st == 200, f"t5 far positions: status {st} {r}"):
        want = t.reference(table[ids], pos)
        for k in ("bias", "scores"):
            C.close(f"t5 far positions (log buckets): {k}", arr(r, k), want[k])
    st, r = srv.request("/apply", {"model": "llama", "token_ids": [1, 50]})
    C.check(st == 422 and r["error"].get("field", "").startswith("token_ids") and "1" in
            r["error"]["field"], f"llama token id 50 of 50 -> 422 naming the index, got {st} {r}")


def check_info(srv, cases):
    st, info = srv.request("/info")
    if not C.check(st == 200, f"/info status {st}"):
        return
    models = {m["name"]: m for m in info["models"]}
    C.check("default" in models and models["default"]["architecture"] == "posenc"
            and models["default"]["d_model"] == 16,
            "a loaded model named default replaces the built-in one")
    check_info_cases(models, cases)
    check_info_specific(models)


def check_info_cases(models, cases):
    """What /info says of every served case: architecture, layer, dtype, ..."""
    for case in cases.values():
        m = models.get(case.name)
        if not C.check(m is not None, f"/info lists {case.name}"):
            continue
        cfg = case.ckpt.config
        want_arch = cfg["model_type"]
        dtypes = {dt for n, dt, a in case.ckpt.tensors if dt in ("F32", "F16", "BF16")}
        C.check(m["architecture"] == want_arch and m["layer"] == case.layer,
                f"/info {case.name}: architecture {m['architecture']} layer {m['layer']}")
        C.check(m["dtype"] == dtypes.pop(), f"/info {case.name}: dtype {m['dtype']}")
        src = "model.safetensors.index.json" if case.shards else "model.safetensors"
        C.check(m["source"].endswith(src), f"/info {case.name}: source {m['source']}")
        C.check(m["d_model"] == case.d, f"/info {case.name}: d_model {m['d_model']}")
        for k in ("heads", "kv_heads", "head_dim", "scheme", "params", "norm", "weights"):
            C.check(k in m, f"/info {case.name} has {k}")


def check_info_specific(models):
    C.check(models["llama"]["kv_heads"] == 2 and models["llama"]["scheme"] == "rope"
            and models["llama"]["params"].get("layout") == "half", "/info llama: GQA, rope half")
    C.check(models["qwen2"]["head_dim"] == 12, "/info qwen2: head_dim from config (12)")
    C.check(models["bloom"]["params"].get("form") == "bloom" and models["bloom"]["heads"] == 6,
            "/info bloom: alibi form bloom, 6 heads")
    C.check(models["t5"]["params"].get("score_scale") == 1 and models["t5"]["head_dim"] == 6,
            "/info t5: score_scale 1, head_dim d_kv")
    C.check(models["gpt2"]["scheme"] == "learned" and models["gpt2_l1"]["scheme"] == "none",
            "/info gpt2: learned at layer 0, none at layer 1")
    C.check(models["bert"]["embed_norm"]["type"] == "layernorm" and models["bert"]["norm"] is None,
            "/info bert: embedding LayerNorm, no attention norm")
    C.check("token_embedding" not in models["llama_l1"]["weights"],
            "/info llama layer 1: no token table loaded")


def posenc_format(srv, p):
    st, r = srv.request("/apply", {"embeddings": [[0.5] * 16, [0.25] * 16]})
    inline = {"d_model": 16, "heads": 4, "kv_heads": 2, "scheme": "rope",
              "params": {"base": 500.0}, "norm": {"type": "rmsnorm", "eps": 1e-5},
              "weights": {n: a.tolist() for n, dt, a in p.tensors
                          if n in ("wq", "wk", "wv", "norm_weight")}}
    st2, r2 = srv.request("/apply", {"model": inline, "embeddings": [[0.5] * 16, [0.25] * 16]})
    C.check(st == 200 and st2 == 200 and all(r[k] == r2[k] for k in "qkv"),
            f"posenc-format directory == the same inline model ({st}, {st2})")
    ids = [3, 29]
    st, r = srv.request("/apply", {"token_ids": ids, "return": ["encoded"]})
    C.check(st == 200, f"posenc-format token_ids: {st} {r}")


# ------------------------------ GPT-NeoX, Phi, Phi-3, StarCoder2, Gemma
def new_arch_cases():
    """The architectures that need only loader work, with real names."""
    cases = {
        "gpt_neox": Case("gpt_neox", ck.gpt_neox(), hf_ref.gpt_neox),
        "gpt_neox_f16": Case("gpt_neox_f16", ck.gpt_neox(seed=81, dtype="F16", prefix="",
                                                      rotary_pct=0.5,
                                                      rotary_emb_base=500.0),
                             hf_ref.gpt_neox, prefix="", shards=2),
        "phi": Case("phi", ck.phi(), hf_ref.phi),
        "phi_bf16": Case("phi_bf16", ck.phi(seed=91, dtype="BF16", d=48, kv_heads=2,
                                            partial_rotary_factor=None,
                                            rope_scaling={"type": "linear", "factor": 2.0}),
                         hf_ref.phi, shards=3),
        "phi3": Case("phi3", ck.phi3(), hf_ref.phi3),
        "phi3_bf16": Case("phi3_bf16", ck.phi3(seed=101, dtype="BF16", prefix="", kv_heads=2,
                                               partial=0.75), hf_ref.phi3, prefix="",
                          shards=2),
        "starcoder2": Case("starcoder2", ck.starcoder2(), hf_ref.starcoder2),
        "starcoder2_f16": Case("starcoder2_f16", ck.starcoder2(seed=111, dtype="F16",
                                                               bias=False, kv_heads=1),
                               hf_ref.starcoder2, shards=2),
        "gemma": Case("gemma", ck.gemma(), hf_ref.gemma),
        "gemma_bf16": Case("gemma_bf16", ck.gemma(seed=121, dtype="BF16", kv_heads=2),
                           hf_ref.gemma, shards=2),
        # head_dim absent: GemmaConfig's default 256 (not hidden/heads = 8)
        "gemma_f16": Case("gemma_f16", ck.gemma(seed=122, dtype="F16", head_dim=256),
                          hf_ref.gemma),
    }
    del cases["gemma_f16"].ckpt.config["head_dim"]
    for c in cases.values():
        c.ckpt.config = {kk: v for kk, v in c.ckpt.config.items() if v is not None}
    for base in ("gpt_neox_f16", "phi", "phi3_bf16", "starcoder2", "gemma_bf16"):
        c = cases[base]
        cases[base + "_l1"] = Case(base + "_l1", c.ckpt, c.ref, layer=1, prefix=c.prefix)
    return cases


def new_arch_checks(root):
    cases = new_arch_cases()
    args = []
    for c in cases.values():
        d = os.path.join(root, "new_" + c.name)
        c.ckpt.write(d, shards=c.shards)
        args += ["--model", f"{c.name}={d}" + (f":{c.layer}" if c.layer else "")]
    with Server(args) as srv:
        for c in cases.values():
            run_case(srv, c)
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info["models"]}
        check_info_cases(models, cases)
        p = models["gpt_neox"]["params"]
        C.check(p.get("partial_rotary_factor") == 0.25 and p.get("base") == 10000,
                f"/info gpt_neox: rotary_pct 0.25, rotary_emb_base 10000: {p}")
        C.check(models["phi"]["params"].get("partial_rotary_factor") == 0.4,
                "/info phi: partial_rotary_factor 0.4")
        C.check(models["phi_bf16"]["params"].get("partial_rotary_factor") == 0.5,
                "/info phi: partial_rotary_factor defaults to 0.5")
        C.check(models["phi3"]["params"]["scaling"]["type"] == "longrope",
                "/info phi3: longrope")
        C.check(models["gemma_f16"]["head_dim"] == 256 and models["gemma"]["head_dim"] == 16,
                "/info gemma: head_dim from the config, default 256")
        C.check(models["starcoder2"]["kv_heads"] == 2 and models["starcoder2"]["norm"]["type"]
                == "layernorm", "/info starcoder2: GQA, LayerNorm")
        status = srv.stop()
        C.check(status == 0, f"new architectures: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")


# ------------------------------------------------------- falcon and mpt
def falcon_mpt_cases():
    """falcon-7b (multi_query), falcon-40b (new_decoder_architecture, kv
    groups), the per-head layout with sequential attention, and mpt-7b with
    head counts that are not powers of two."""
    cases = {
        "falcon7b": Case("falcon7b", ck.falcon(), hf_ref.falcon),
        "falcon40b_bf16": Case("falcon40b_bf16", ck.falcon(seed=161, dtype="BF16", d=64,
                                                            heads=8, kv_heads=2, new_arch=True,
                                                            bias=True), hf_ref.falcon,
                               shards=2),
        "falcon_perhead_f16": Case("falcon_perhead_f16",
                                   ck.falcon(seed=162, dtype="F16", prefix="", multi_query=False,
                                             parallel_attn=False, bias=True, rope_theta=500.0,
                                             rope_scaling={"type": "linear", "factor": 2.0}),
                                   hf_ref.falcon, prefix=""),
        # new architecture with one norm: input_layernorm feeds the attention
        "falcon_ln1": Case("falcon_ln1", ck.falcon(seed=163, heads=6, kv_heads=3, new_arch=True,
                                                   num_ln_in_parallel_attn=1), hf_ref.falcon),
        "mpt": Case("mpt", ck.mpt(), hf_ref.mpt),
        "mpt_bf16": Case("mpt_bf16", ck.mpt(seed=171, dtype="BF16", prefix="", heads=12,
                                            attn={"softmax_scale": 0.3}), hf_ref.mpt,
                         prefix="", shards=2),
        # no attn_config at all: MptAttentionConfig's defaults
        "mpt_f16": Case("mpt_f16", ck.mpt(seed=172, dtype="F16", d=24, heads=3,
                                          attn_config=None), hf_ref.mpt),
    }
    for c in cases.values():
        c.ckpt.config = {kk: v for kk, v in c.ckpt.config.items() if v is not None}
    for base in ("falcon7b", "falcon40b_bf16", "falcon_perhead_f16", "mpt_bf16"):
        c = cases[base]
        cases[base + "_l1"] = Case(base + "_l1", c.ckpt, c.ref, layer=1, prefix=c.prefix)
    return cases


def softmax_causal(s):
    T = s.shape[-1]
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mpt_form_encode(srv):
    """/encode alibi form "mpt" with explicit, unordered positions:
    slope*(p_j - p_last) (the last token's position, not the largest), with
    build_mpt_alibi_tensor's slopes, for head counts with and without a
    power of two; and the form in a request overrides a model's."""
    pos = np.array([0, 3, 1, 10, 4])
    for heads in (4, 6, 12):
        st, r = srv.request("/encode", {"scheme": "alibi", "shape": [5, 2],
                                        "params": {"heads": heads, "form": "mpt"},
                                        "positions": pos.tolist()})
        want = hf_ref.mpt_slopes(heads)[:, None, None] * \
            (pos[None, None, :] - pos[-1]).astype(np.float64) * np.ones((heads, 5, 1))
        if C.check(st == 200, f"/encode alibi form mpt, {heads} heads: status {st} {r}"):
            C.close(f"/encode alibi form mpt, {heads} heads: bias", arr(r, "bias"), want)
    st, r = srv.request("/encode", {"scheme": "alibi", "shape": [2, 2],
                                    "params": {"heads": 2, "form": "gpt"}})
    C.check(st == 400 and r["error"].get("field") == "params.form" and
            "mpt" in r["error"]["message"],
            f"/encode alibi form gpt -> 400 naming params.form and the forms, got {st} {r}")


def falcon_mpt_checks(root):
    cases = falcon_mpt_cases()
    args = []
    for c in cases.values():
        d = os.path.join(root, "fm_" + c.name)
        c.ckpt.write(d, shards=c.shards)
        args += ["--model", f"{c.name}={d}" + (f":{c.layer}" if c.layer else "")]
    with Server(args) as srv:
        for c in cases.values():
            run_case(srv, c)
        # MPT: alibi form "mpt" is HF's raw bias, slope*(j - (T-1)): the raw
        # scores and bias are HF's, not only their causal softmax
        for name in ("mpt", "mpt_bf16", "mpt_f16"):
            c = cases[name]
            x = RNG.standard_normal((9, c.d)).astype(np.float32)
            st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                           "return": ["scores", "bias"]})
            want = c.reference(x.astype(np.float64), np.arange(9))
            if C.check(st == 200, f"{name}: scores status {st}"):
                C.close(f"{name}: raw scores = HF's", arr(r, "scores"), want["hf_scores"])
                C.close(f"{name}: raw bias = HF's", arr(r, "bias"), want["hf_bias"])
                C.close(f"{name}: causal softmax = the bloom form's",
                        softmax_causal(arr(r, "scores")), softmax_causal(want["bloom_scores"]))
        mpt_form_encode(srv)
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info["models"]}
        check_info_cases(models, cases)
        C.check(models["falcon7b"]["kv_heads"] == 1 and models["falcon7b"]["scheme"] == "rope",
                "/info falcon7b: multi-query (one kv head), rope")
        C.check(models["falcon40b_bf16"]["kv_heads"] == 2 and "bq" in
                models["falcon40b_bf16"]["weights"], "/info falcon40b: 2 kv groups, biases")
        C.check(models["falcon_perhead_f16"]["kv_heads"] == 6 and
                models["falcon_perhead_f16"]["params"]["base"] == 500,
                "/info falcon per-head: 6 kv heads, rope_theta 500")
        m = models["mpt_bf16"]
        C.check(m["scheme"] == "alibi" and m["params"].get("form") == "mpt" and
                m["params"].get("score_scale") == 0.3 and m["norm"]["type"] == "layernorm" and
                "norm_bias" not in m["weights"],
                f"/info mpt: alibi, softmax_scale as score_scale, weight-only LayerNorm: {m}")
        C.check("score_scale" not in models["mpt"]["params"],
                "/info mpt: softmax_scale null leaves the default 1/sqrt(head_dim)")
        status = srv.stop()
        C.check(status == 0, f"falcon/mpt: server exits 0 (got {status})")
        err = srv.stderr()
        C.check(sanitizer_clean(err), f"server stderr clean: {err[-800:]}")
        C.check("alibi form" not in err,
                f"no MPT model warns about its bias form (served exactly): {err[-1200:]}")


def falcon_mpt_malformed(root):
    """A malformed or unmodelled value of each key the two loaders read."""
    out = []

    def case(label, ckpt, want, attn=None, **over):
        d = os.path.join(root, "bad_" + label.replace(" ", "_").replace(":", "").replace(".", "_"))
        cfg = dict(ckpt.config, **over)
        if attn is not None:
            cfg["attn_config"] = dict(cfg["attn_config"], **attn) if isinstance(attn, dict) \
                else attn
        ckpt.write(d, config={kk: v for kk, v in cfg.items() if v is not None})
        out.append((label, d, ["config.json"] + want))

    fal, fal40, mpt = ck.falcon(layers=1), ck.falcon(layers=1, new_arch=True, kv_heads=2), \
        ck.mpt(layers=1)
    case("falcon: alibi not a boolean", fal, ["alibi", "true or false"], alibi="no")
    case("falcon: multi_query not a boolean", fal, ["multi_query"], multi_query=1)
    case("falcon: bias not a boolean", fal, ["bias", "true or false"], bias="none")
    case("falcon: layer_norm_epsilon 0", fal, ["layer_norm_epsilon", "> 0"], layer_norm_epsilon=0)
    case("falcon: num_kv_heads not dividing", fal40, ["num_kv_heads", "4"], num_kv_heads=4)
    case("falcon: num_kv_heads without grouping", fal, ["num_kv_heads = 3", "multi_query"],
         multi_query=False, num_kv_heads=3)
    case("falcon: new architecture, sequential attention", fal40,
         ["new_decoder_architecture = true", "parallel_attn = false", "ln_attn"],
         parallel_attn=False)
    case("falcon: two norms, old architecture", fal,
         ["new_decoder_architecture = false", "num_ln_in_parallel_attn = 2", "ln_attn"],
         num_ln_in_parallel_attn=2)
    case("falcon: num_ln_in_parallel_attn 3", fal40, ["num_ln_in_parallel_attn", "3"],
         num_ln_in_parallel_attn=3)
    case("falcon: heads not dividing hidden_size", fal, ["hidden_size", "5"],
         num_attention_heads=5)
    case("falcon: rope_theta negative", fal, ["rope_theta"], rope_theta=-1.0)
    case("mpt: clip_qkv negative", mpt, ["attn_config.clip_qkv", "-1", "> 0"],
         attn={"clip_qkv": -1})
    case("mpt: clip_qkv a string", mpt, ["attn_config.clip_qkv", "a number"],
         attn={"clip_qkv": "8"})
    case("mpt: qk_ln true", mpt, ["attn_config.qk_ln = true", "not supported"],
         attn={"qk_ln": True})
    case("mpt: qk_ln a string", mpt, ["attn_config.qk_ln", "true or false"],
         attn={"qk_ln": "no"})
    case("mpt: attn_type a number", mpt, ["attn_config.attn_type", "a string"],
         attn={"attn_type": 1})
    case("mpt: alibi false", mpt, ["attn_config.alibi = false", "not supported"],
         attn={"alibi": False})
    case("mpt: alibi_bias_max 16", mpt, ["attn_config.alibi_bias_max = 16", "8"],
         attn={"alibi_bias_max": 16})
    case("mpt: softmax_scale negative", mpt, ["attn_config.softmax_scale", "-1"],
         attn={"softmax_scale": -1.0})
    case("mpt: softmax_scale a string", mpt, ["attn_config.softmax_scale", "a number"],
         attn={"softmax_scale": "0.1"})
    case("mpt: attn_type multiquery", mpt, ["attn_config.attn_type", "multiquery_attention"],
         attn={"attn_type": "multiquery_attention"})
    case("mpt: attn_config a list", mpt, ["attn_config must be an object"], attn=[1])
    case("mpt: no_bias false", mpt, ["no_bias = false", "not supported"], no_bias=False)
    case("mpt: norm_type rmsnorm", mpt, ["norm_type = 'rmsnorm'", "LayerNorm"],
         norm_type="rmsnorm")
    case("mpt: d_model not divisible", mpt, ["d_model", "5"], n_heads=5)
    case("mpt: n_heads missing", mpt, ["n_heads"], n_heads=None)
    return out


# --------- q/k norms and score transforms: Qwen3, OLMo 2, Gemma 2, Gemma 3
def qwen3_gemma_cases():
    """Qwen3, OLMo 2, Gemma 2 and Gemma 3 with their real names and keys.
    Config values of None stay in config.json as null, as the published
    configs have them (attn_logit_softcapping null means no cap)."""
    cases = {
        "qwen3": Case("qwen3", ck.qwen3(), hf_ref.qwen3),
        # head_dim absent: Qwen3Config's default 128 (not hidden/heads = 8)
        "qwen3_f16": Case("qwen3_f16", ck.qwen3(seed=161, dtype="F16", head_dim=128),
                          hf_ref.qwen3),
        "qwen3_bf16": Case("qwen3_bf16", ck.qwen3(seed=162, dtype="BF16", prefix="", bias=True,
                                                  kv_heads=1, rope_theta=10000.0),
                           hf_ref.qwen3, prefix="", shards=2),
        # layer_types (Qwen3Config's, sliding on layer 1): checked, the
        # projections unchanged
        "qwen3_types": Case("qwen3_types", ck.qwen3(seed=163, layer_types=["full_attention",
                                                                          "sliding_attention"]),
                            hf_ref.qwen3),
        "olmo2": Case("olmo2", ck.olmo2(), hf_ref.olmo2),
        "olmo2_bf16": Case("olmo2_bf16", ck.olmo2(seed=171, dtype="BF16", kv_heads=2,
                                                  rope_theta=10000.0), hf_ref.olmo2, shards=3),
        "gemma2": Case("gemma2", ck.gemma2(), hf_ref.gemma2),
        # a cap the scores reach, and a scalar that is not head_dim
        "gemma2_bf16": Case("gemma2_bf16", ck.gemma2(seed=181, dtype="BF16",
                                                     attn_logit_softcapping=1.5,
                                                     query_pre_attn_scalar=24),
                            hf_ref.gemma2, shards=2),
        "gemma2_nocap": Case("gemma2_nocap", ck.gemma2(seed=182, dtype="F16",
                                                       attn_logit_softcapping=None),
                             hf_ref.gemma2),
        # sliding_window_pattern 6: layers 0-4 sliding (local base), 5 global
        # (rope_theta with gemma-3-4b's linear factor 8)
        "gemma3": Case("gemma3", ck.gemma3(rope_scaling={"rope_type": "linear", "factor": 8.0}),
                       hf_ref.gemma3),
        # layer_types (newer configs): layer 0 global, layer 1 sliding
        "gemma3_bf16": Case("gemma3_bf16", ck.gemma3(seed=191, dtype="BF16", layers=2,
                                                     kv_heads=2, rope_local_base_freq=50.0,
                                                     query_pre_attn_scalar=24,
                                                     attn_logit_softcapping=2.0,
                                                     layer_types=["full_attention",
                                                                  "sliding_attention"]),
                            hf_ref.gemma3, shards=2),
        # pattern 2: layer 1 is global; rope_theta absent: Gemma3TextConfig's 1e6
        "gemma3_f16": Case("gemma3_f16", ck.gemma3(seed=192, dtype="F16", layers=2, prefix="",
                                                   sliding_window_pattern=2),
                           hf_ref.gemma3, prefix=""),
    }
    del cases["qwen3_f16"].ckpt.config["head_dim"]
    del cases["gemma3_f16"].ckpt.config["rope_theta"]
    for base, layer in (("qwen3", 1), ("olmo2_bf16", 1), ("gemma2_bf16", 1), ("gemma3", 5),
                        ("gemma3_bf16", 1), ("gemma3_f16", 1)):
        c = cases[base]
        cases[f"{base}_l{layer}"] = Case(f"{base}_l{layer}", c.ckpt, c.ref, layer=layer,
                                         prefix=c.prefix, shards=c.shards)
    return cases


def qwen3_gemma_info(models):
    qk = models["qwen3"].get("qk_norm")
    C.check(qk == {"type": "rmsnorm", "over": "head", "weights": "shared", "eps": 1e-6}
            and models["qwen3"]["norm"]["type"] == "rmsnorm",
            f"/info qwen3: q/k norm per head, eps 1e-6, RMSNorm before attention: {qk}")
    C.check(models["qwen3_f16"]["head_dim"] == 128 and models["qwen3"]["head_dim"] == 16,
            "/info qwen3: head_dim from the config, default 128")
    C.check(models["qwen3"]["weights"].get("q_norm_weight") == [16],
            f"/info qwen3: q_norm_weight [16]: {models['qwen3']['weights']}")
    o = models["olmo2"]
    C.check(o["norm"] is None and o.get("qk_norm", {}).get("over") == "width"
            and o["weights"].get("q_norm_weight") == [32],
            f"/info olmo2: no norm before attention, q/k norm over the width: {o}")
    C.check("qk_norm" not in models["gemma2"] and "score_softcap" not in models["gemma2_nocap"],
            "/info gemma2: no q/k norm; no soft cap when attn_logit_softcapping is null")
    g2 = models["gemma2"]
    C.check(g2.get("score_softcap") == 50 and g2["params"].get("score_scale") == 256 ** -0.5
            and models["gemma2_bf16"].get("score_softcap") == 1.5,
            f"/info gemma2: soft cap 50, score_scale 256**-0.5: {g2}")
    g3, g5 = models["gemma3"], models["gemma3_l5"]
    C.check(g3["params"].get("base") == 10000 and "scaling" not in g3["params"],
            f"/info gemma3 layer 0 (sliding): rope_local_base_freq, no scaling: {g3['params']}")
    C.check(g5["params"].get("base") == 1e6 and g5["params"].get("scaling", {}).get("type")
            == "linear", f"/info gemma3 layer 5 (global): rope_theta, linear: {g5['params']}")
    C.check(models["gemma3_bf16"]["params"]["base"] == 1e6
            and models["gemma3_bf16_l1"]["params"]["base"] == 50,
            "/info gemma3 layer_types: layer 0 full (1e6), layer 1 sliding (50)")
    C.check(models["gemma3_f16"]["params"]["base"] == 10000
            and models["gemma3_f16_l1"]["params"]["base"] == 1e6,
            "/info gemma3 without rope_theta: sliding 10000, global Gemma3TextConfig's 1e6")
    C.check(g3.get("qk_norm", {}).get("over") == "head" and "score_softcap" not in g3
            and models["gemma3_bf16"].get("score_softcap") == 2.0
            and g3["params"].get("score_scale") == 256 ** -0.5,
            f"/info gemma3: q/k norm per head, score_scale, soft cap only when set: {g3}")


def qwen3_gemma_checks(root):
    cases = qwen3_gemma_cases()
    args = []
    for c in cases.values():
        d = os.path.join(root, "qg_" + (c.name if not c.layer else c.name.rsplit("_l", 1)[0]))
        if not os.path.exists(d):
            c.ckpt.write(d, shards=c.shards)
        args += ["--model", f"{c.name}={d}" + (f":{c.layer}" if c.layer else "")]
    with Server(args) as srv:
        for c in cases.values():
            run_case(srv, c)
        # far positions on a global and a sliding layer
        for name in ("gemma3_l5", "gemma3"):
            c = cases[name]
            x = RNG.standard_normal((4, c.d)).astype(np.float32)
            pos = np.array([3, 100, 1000, 4097])
            st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                           "positions": pos.tolist(), "return": ["q", "k"]})
            if C.check(st == 200, f"{name} far positions: status {st} {r}"):
                compare(c, "far positions", r, c.reference(x.astype(np.float64), pos), "qk")
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info["models"]}
        check_info_cases(models, cases)
        qwen3_gemma_info(models)
        status = srv.stop()
        C.check(status == 0, f"q/k-norm architectures: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")


def qwen3_gemma_malformed(root):
    """A malformed value of each key the Qwen3, OLMo 2 and Gemma 2/3 loaders read, and their
    new tensors: exit 2 naming it."""
    out = []

    def case(label, ckpt, want, drop=(), **over):
        d = os.path.join(root, "bad3_" + label.replace(" ", "_").replace(":", ""))
        cfg = {kk: v for kk, v in dict(ckpt.config, **over).items() if kk not in drop}
        ckpt.write(d, config=cfg)
        out.append((label, d, ["config.json"] + want))

    q3, o2 = ck.qwen3(layers=1), ck.olmo2(layers=1)
    g2, g3 = ck.gemma2(layers=1), ck.gemma3(layers=2)
    case("qwen3: head_dim 0", q3, ["head_dim", "0"], head_dim=0)
    case("qwen3: attention_bias a string", q3, ["attention_bias"], attention_bias="no")
    case("qwen3: rms_norm_eps negative", q3, ["rms_norm_eps", "-1"], rms_norm_eps=-1.0)
    case("olmo2: rms_norm_eps 0", o2, ["rms_norm_eps", "> 0"], rms_norm_eps=0)
    case("olmo2: heads not dividing hidden_size", o2, ["hidden_size", "5"],
         num_attention_heads=5, num_key_value_heads=5)
    case("gemma2: attn_logit_softcapping a string", g2, ["attn_logit_softcapping"],
         attn_logit_softcapping="fifty")
    case("gemma2: attn_logit_softcapping -1", g2, ["attn_logit_softcapping", "-1"],
         attn_logit_softcapping=-1.0)
    case("gemma2: query_pre_attn_scalar 0", g2, ["query_pre_attn_scalar", "> 0"],
         query_pre_attn_scalar=0)
    case("gemma3: query_pre_attn_scalar null", g3, ["query_pre_attn_scalar", "null"],
         query_pre_attn_scalar=None)
    case("gemma3: layer_types entry unknown", g3, ["layer_types[0]", "global_attention"],
         layer_types=["global_attention", "full_attention"])
    # any layer's type transformers does not know stops the load, not only
    # the served layer's, for every architecture HF reads it for
    case("gemma3: layer_types of another layer unknown", g3,
         ["layer_types[1]", "global_attention", "not a layer type transformers knows"],
         layer_types=["full_attention", "global_attention"])
    case("qwen3: layer_types entry unknown", q3, ["layer_types[0]", "global_attention"],
         layer_types=["global_attention"])
    # a served layer of a type posenc does not model is refused by name
    case("gemma2: layer 0 linear_attention", g2,
         ["layer 0 is linear_attention", "no positional encoding or Q/K/V"],
         layer_types=["linear_attention"])
    case("qwen2: layer_types entry unknown", ck.llama(seed=7, layers=1, model_type="qwen2",
                                                      bias=True),
         ["layer_types[0]", "global_attention"], layer_types=["global_attention"])
    case("qwen3: layer_types a number", q3, ["layer_types", "list"], layer_types=3)
    case("gemma3: layer_types not a list", g3, ["layer_types", "list"],
         layer_types="sliding_attention")
    case("gemma3: layer_types of the wrong length", g3, ["layer_types", "3 entries",
                                                         "num_hidden_layers"],
         layer_types=["full_attention"] * 3)
    case("gemma3: sliding_window_pattern 0", g3, ["sliding_window_pattern", "0"],
         sliding_window_pattern=0)
    case("gemma3: rope_local_base_freq 0", g3, ["rope_local_base_freq", "> 0"],
         rope_local_base_freq=0)
    # Qwen3Config keeps one block: blocks by layer type are refused, naming them
    case("qwen3: rope_parameters per layer type", q3,
         ["rope_parameters.full_attention", "per layer type", "qwen3"],
         rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})
    case("gemma3: rope_scaling of an unknown type", g3, ["rope_scaling", "ntk9"],
         rope_scaling={"rope_type": "ntk9", "factor": 2.0})
    # the new tensors: a missing q_norm, a k_norm per head where OLMo 2 needs the width
    for label, ckpt, name, edit, want in (
            ("qwen3: no q_norm tensor", q3, "model.layers.0.self_attn.q_norm.weight", None,
             "no tensor"),
            ("gemma3: no k_norm tensor", g3, "model.layers.0.self_attn.k_norm.weight", None,
             "no tensor"),
            ("olmo2: k_norm per head", o2, "model.layers.0.self_attn.k_norm.weight",
             lambda a: a[:8], "shape")):
        bad = ck.Checkpoint(ckpt.config, [(n, dt, edit(a) if n == name else a)
                                          for n, dt, a in ckpt.tensors
                                          if n != name or edit])
        d = os.path.join(root, "bad3_" + label.replace(" ", "_").replace(":", ""))
        bad.write(d)
        out.append((label, d, [os.path.join(d, "model.safetensors"), name, want]))
    return out


# ------------------------------ Cohere, Cohere 2, StableLM, MiniCPM, EXAONE 4
def cohere_family_cases():
    """Each architecture with its named checkpoint's keys and tensor names:
    F32 and half-precision files, sharded or not, layer 0 and a later
    layer; rope layers and NoPE layers; the options each reads."""
    cases = {
        "cohere": Case("cohere", ck.cohere(), hf_ref.cohere),
        # Command R+'s use_qk_norm (weights per head), attention_bias, GQA
        "cohere_qk_bf16": Case("cohere_qk_bf16", ck.cohere(seed=42, dtype="BF16", prefix="",
                                                          qk_norm=True, bias=True, kv_heads=1),
                               hf_ref.cohere, prefix="", shards=2),
        # rope_theta absent: CohereConfig.default_theta 500000; dynamic NTK
        "cohere_dyn": Case("cohere_dyn", ck.cohere(seed=43, dtype="F16", layers=1,
                                                   max_position_embeddings=16,
                                                   rope_scaling={"rope_type": "dynamic",
                                                                 "factor": 2.0}),
                           hf_ref.cohere),
        # pattern 4: layers 0-2 sliding (rope), 3 full (NoPE)
        "cohere2": Case("cohere2", ck.cohere2(), hf_ref.cohere2),
        # layer_types: layer 0 full (NoPE), layer 1 sliding; a config head_dim unread
        "cohere2_bf16": Case("cohere2_bf16", ck.cohere2(seed=52, dtype="BF16", layers=2,
                                                        kv_heads=2, head_dim=99,
                                                        layer_types=["full_attention",
                                                                     "sliding_attention"]),
                             hf_ref.cohere2, shards=3),
        # sliding_window null: no layer rotates
        "cohere2_nowin": Case("cohere2_nowin", ck.cohere2(seed=53, layers=2, sliding_window=None),
                              hf_ref.cohere2),
        "stablelm": Case("stablelm", ck.stablelm(), hf_ref.stablelm),
        # stablelm-2-12b: qk_layernorm per head, GQA, no qkv bias
        "stablelm_qk_bf16": Case("stablelm_qk_bf16",
                                 ck.stablelm(seed=62, dtype="BF16", qk_norm=True, bias=False,
                                             kv_heads=2, partial_rotary_factor=0.5),
                                 hf_ref.stablelm, shards=2),
        "minicpm": Case("minicpm", ck.minicpm(), hf_ref.minicpm),
        # bf16: the scale_emb product rounded to bfloat16; longrope
        "minicpm_bf16": Case("minicpm_bf16", ck.minicpm(seed=72, dtype="BF16", longrope=True,
                                                        scale_emb=2.7),
                             hf_ref.minicpm, shards=2),
        # EXAONE-4.0-32B: layer_types LLLG, llama3 rope on local layers, NoPE layer 3
        "exaone4": Case("exaone4", ck.exaone4(), hf_ref.exaone4),
        # EXAONE-4.0-1.2B: sliding_window null, every layer full and rotating
        "exaone4_bf16": Case("exaone4_bf16", ck.exaone4(seed=82, dtype="BF16", layers=2,
                                                        head_dim=8, sliding_window=None,
                                                        sliding_window_pattern=None,
                                                        layer_types=["full_attention"] * 2,
                                                        rope_scaling=None),
                             hf_ref.exaone4, shards=2),
        # no layer_types: an integer sliding_window_pattern 2 (layer 1 NoPE)
        "exaone4_pat": Case("exaone4_pat", ck.exaone4(seed=83, layers=2, sliding_window_pattern=2,
                                                      layer_types=None),
                            hf_ref.exaone4),
    }
    del cases["cohere_dyn"].ckpt.config["rope_theta"]
    del cases["exaone4_pat"].ckpt.config["layer_types"]
    for base, layer in (("cohere", 1), ("cohere_qk_bf16", 1), ("cohere2", 3), ("cohere2_bf16", 1),
                        ("stablelm", 1), ("stablelm_qk_bf16", 1), ("minicpm", 1),
                        ("minicpm_bf16", 1), ("exaone4", 3), ("exaone4_bf16", 1),
                        ("exaone4_pat", 1)):
        c = cases[base]
        cases[f"{base}_l{layer}"] = Case(f"{base}_l{layer}", c.ckpt, c.ref, layer=layer,
                                         prefix=c.prefix, shards=c.shards)
    return cases


def cohere_family_info(models):
    c, cq = models["cohere"], models["cohere_qk_bf16"]
    C.check(c["params"].get("layout") == "interleaved" and c["params"].get("base") == 8e6
            and c["norm"]["type"] == "layernorm" and "qk_norm" not in c,
            f"/info cohere: interleaved rope, rope_theta, LayerNorm, no q/k norm: {c}")
    C.check(cq.get("qk_norm") == {"type": "layernorm", "over": "head", "weights": "per_head",
                                  "eps": 1e-5} and cq["weights"].get("q_norm_weight") == [4, 8]
            and cq["weights"].get("k_norm_weight") == [1, 8],
            f"/info cohere use_qk_norm: a LayerNorm per head with its own weights: {cq}")
    dyn = models["cohere_dyn"]["params"]
    C.check(dyn.get("base") == 500000 and dyn.get("scaling", {}).get("type") == "dynamic",
            f"/info cohere without rope_theta: CohereConfig's 500000, dynamic: {dyn}")
    for name, scheme in (("cohere2", "rope"), ("cohere2_l3", "none"), ("cohere2_bf16", "none"),
                         ("cohere2_bf16_l1", "rope"), ("cohere2_nowin", "none"),
                         ("exaone4", "rope"), ("exaone4_l3", "none"), ("exaone4_bf16", "rope"),
                         ("exaone4_bf16_l1", "rope"), ("exaone4_pat", "rope"),
                         ("exaone4_pat_l1", "none")):
        C.check(models[name]["scheme"] == scheme, f"/info {name}: scheme {scheme}: "
                f"{models[name]['scheme']} {models[name]['params']}")
    C.check(models["cohere2"]["head_dim"] == 8 and models["cohere2_bf16"]["head_dim"] == 8
            and models["cohere2"]["params"].get("layout") == "interleaved",
            "/info cohere2: head_dim hidden/heads (a config head_dim unread), interleaved")
    s, sq = models["stablelm"], models["stablelm_qk_bf16"]
    C.check(s["norm"]["type"] == "layernorm" and "norm_bias" in s["weights"]
            and "bq" in s["weights"] and "qk_norm" not in s,
            f"/info stablelm: LayerNorm with bias, qkv biases: {s}")
    C.check(sq.get("qk_norm") == {"type": "layernorm", "over": "head", "weights": "per_head",
                                  "eps": 1e-5} and sq["weights"].get("k_norm_weight") == [2, 8]
            and "bq" not in sq["weights"],
            f"/info stablelm qk_layernorm: per head, gathered [kv_heads, head_dim]: {sq}")
    e = models["exaone4"]
    C.check(e["norm"] is None and e.get("qk_norm") == {"type": "rmsnorm", "over": "head",
                                                       "weights": "shared", "eps": 1e-5}
            and e["params"].get("scaling", {}).get("type") == "llama3",
            f"/info exaone4: no norm before attention, RMS q/k norm per head, llama3: {e}")
    m = models["minicpm_bf16"]["params"]
    C.check(m.get("scaling", {}).get("type") == "longrope", f"/info minicpm longrope: {m}")


def cohere_family_batch(srv, case):
    """A left-padded batch with attention_mask and causal: positions
    cumsum(mask) - 1 (pads 1), masked keys float32's lowest, causal by
    slot; token_ids at layer 0, the hidden state later."""
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    pos = np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 1)
    body = {"model": case.name, "attention_mask": mask.tolist(), "causal": True,
            "return": ["q", "k", "v", "scores"]}
    if case.layer == 0:
        table = token_table(case)
        ids = np.array([[0, 0, 3, 9, 4], [7, 3, 9, 4, 2]])
        body["token_ids"] = ids.tolist()
        rows, from_ids = [table[i] for i in ids], True
    else:
        x = RNG.standard_normal((2, 5, case.d)).astype(np.float32)
        body["embeddings"] = x.tolist()
        rows, from_ids = [x[b].astype(np.float64) for b in range(2)], False
    st, r = srv.request("/apply", body)
    if not C.check(st == 200, f"{case.name} padded batch: status {st} {r}"):
        return
    slots = np.arange(5)
    for b in range(2):
        want = case.reference(rows[b], pos[b], from_ids=from_ids)
        for k in "qkv":
            C.close(f"{case.name} padded batch row {b}: {k}", arr(r, k)[b], want[k])
        keep = mask[b].astype(bool)[None, :] & (slots[None, :] <= slots[:, None])
        mask_models._masked_close(C, f"{case.name} padded batch + causal row {b}: scores",
                                  r["scores"][b], want["scores"], keep[None])


def cohere_family_batch_max(srv, cases):
    """Dynamic NTK and longrope's long/short choice follow the largest
    position of the whole batch (Hugging Face's max over position_ids),
    not each row's."""
    for name, pos in (("cohere_dyn", [[0, 1, 2, 3], [20, 21, 22, 23]]),
                      ("minicpm_bf16", [[0, 1, 2, 3], [14, 15, 16, 17]])):
        c = cases[name]
        x = RNG.standard_normal((2, 4, c.d)).astype(np.float32)
        st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                       "positions": pos, "return": ["q", "k"]})
        if not C.check(st == 200, f"{name} batch over the switch: status {st} {r}"):
            continue
        seq = int(np.max(pos)) + 1
        for b in range(2):
            want = c.ref(c.ckpt.config, c.ckpt.weights(), x[b].astype(np.float64),
                         np.array(pos[b]), 0, seq_len=seq)
            for k in "qk":
                C.close(f"{name} row {b} sized by the batch's largest position: {k}",
                        arr(r, k)[b], want[k])


def cohere_family_checks(root):
    cases = cohere_family_cases()
    args = []
    for c in cases.values():
        d = os.path.join(root, "cf_" + (c.name if not c.layer else c.name.rsplit("_l", 1)[0]))
        if not os.path.exists(d):
            c.ckpt.write(d, shards=c.shards)
        args += ["--model", f"{c.name}={d}" + (f":{c.layer}" if c.layer else "")]
    with Server(args) as srv:
        for c in cases.values():
            run_case(srv, c)
            cohere_family_batch(srv, c)
        cohere_family_batch_max(srv, cases)
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info["models"]}
        check_info_cases(models, cases)
        cohere_family_info(models)
        status = srv.stop()
        C.check(status == 0, f"Cohere family: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")


def cohere_family_malformed(root):
    """A malformed value of each key these architectures add, and their
    q/k norm tensors: exit 2 naming it."""
    out = []

    def case(label, ckpt, want, drop=(), **over):
        d = os.path.join(root, "bad18_" + label.replace(" ", "_").replace(":", ""))
        cfg = {kk: v for kk, v in dict(ckpt.config, **over).items() if kk not in drop}
        ckpt.write(d, config=cfg)
        out.append((label, d, ["config.json"] + want))

    co, cq, c2 = ck.cohere(layers=1), ck.cohere(layers=1, qk_norm=True), ck.cohere2(layers=2)
    sl, sq = ck.stablelm(layers=1), ck.stablelm(layers=1, qk_norm=True)
    mc, ex = ck.minicpm(layers=1), ck.exaone4(layers=2, layer_types=None)
    case("cohere: use_qk_norm a string", co, ["use_qk_norm"], use_qk_norm="yes")
    case("cohere: layer_norm_eps 0", co, ["layer_norm_eps", "> 0"], layer_norm_eps=0)
    case("cohere: rope_scaling of an unknown type", co, ["rope_scaling", "ntk9"],
         rope_scaling={"rope_type": "ntk9", "factor": 2.0})
    case("cohere2: sliding_window_pattern 0", c2, ["sliding_window_pattern", "0"],
         sliding_window_pattern=0)
    case("cohere2: layer_types entry unknown", c2, ["layer_types[1]", "global_attention"],
         layer_types=["full_attention", "global_attention"])
    case("cohere2: sliding_window a string", c2, ["sliding_window"], sliding_window="4k")
    # the rope of a NoPE layer is still checked, as Hugging Face builds it
    case("cohere2: NoPE layer with a bad rope_scaling", c2, ["rope_scaling", "factor"],
         layer_types=["full_attention", "full_attention"],
         rope_scaling={"rope_type": "linear"})
    case("stablelm: use_qkv_bias a number", sl, ["use_qkv_bias"], use_qkv_bias=1)
    case("stablelm: num_key_value_heads absent (default 32)", sl,
         ["num_attention_heads 4", "num_key_value_heads 32"], drop=("num_key_value_heads",))
    case("stablelm: qk_layernorm a string", sl, ["qk_layernorm"], qk_layernorm="true")
    case("minicpm: scale_emb a string", mc, ["scale_emb"], scale_emb="12")
    case("minicpm: scale_emb 0", mc, ["scale_emb", "> 0"], scale_emb=0)
    case("minicpm: sparse_config", mc, ["sparse_config", "not supported"],
         sparse_config={"kernel_size": 32, "topk": 64})
    case("exaone4: sliding_window null without layer_types", ex,
         ["sliding_window is null", "layer_types"], sliding_window=None)
    case("exaone4: sliding_window_pattern LLLG without layer_types", ex,
         ["sliding_window_pattern"], sliding_window_pattern="LLLG")
    case("exaone4: layer 0 linear_attention", ex, ["layer 0 is linear_attention"],
         layer_types=["linear_attention", "full_attention"])
    case("exaone4: rms_norm_eps negative", ex, ["rms_norm_eps", "-1"], rms_norm_eps=-1.0)
    for label, ckpt, name, edit, want in (
            ("cohere: q_norm of [head_dim]", cq, "model.layers.0.self_attn.q_norm.weight",
             lambda a: a[0], "shape"),
            ("stablelm: no k_layernorm of head 3", sq,
             "model.layers.0.self_attn.k_layernorm.norms.3.weight", None, "no tensor"),
            ("exaone4: no q_norm tensor", ck.exaone4(layers=2),
             "model.layers.0.self_attn.q_norm.weight", None,
             "no tensor")):
        bad = ck.Checkpoint(ckpt.config, [(n, dt, edit(a) if n == name else a)
                                          for n, dt, a in ckpt.tensors
                                          if n != name or edit])
        d = os.path.join(root, "bad18_" + label.replace(" ", "_").replace(":", ""))
        bad.write(d)
        out.append((label, d, [os.path.join(d, "model.safetensors"), name, want]))
    return out


# ---------------------------------------------------------------- Llama 4
def llama4_cases():
    """Llama 4's text model with Scout's text_config keys: the default
    NoPE pattern (layer 3 of 4), explicit no_rope_layers, the temperature
    with a floor_scale the test positions reach, qk norm and tuning off."""
    cases = {
        "llama4": Case("llama4", ck.llama4_text(), hf_ref.llama4),
        # layer 1 NoPE with a temperature visible at positions 1..6
        "llama4_bf16": Case("llama4_bf16", ck.llama4_text(seed=211, dtype="BF16", prefix="model.",
                                                          layers=2, bias=True,
                                                          no_rope_layers=[1, 0], floor_scale=2,
                                                          attn_scale=0.5,
                                                          attn_temperature_tuning=True),
                            hf_ref.llama4, prefix="model.", shards=2),
        # no rope_theta / rope_scaling (5e5, default rope), no qk norm, no tuning
        "llama4_f16": Case("llama4_f16", ck.llama4_text(seed=212, dtype="F16", prefix="", layers=2,
                                                        kv_heads=1, no_rope_layers=[0, 1],
                                                        use_qk_norm=False, floor_scale=1,
                                                        attn_temperature_tuning=False),
                           hf_ref.llama4, prefix=""),
    }
    for n in ("rope_theta", "rope_scaling"):
        del cases["llama4_f16"].ckpt.config[n]
    for base, layer in (("llama4", 3), ("llama4", 1), ("llama4_bf16", 1), ("llama4_f16", 1)):
        c = cases[base]
        cases[f"{base}_l{layer}"] = Case(f"{base}_l{layer}", c.ckpt, c.ref, layer=layer,
                                         prefix=c.prefix, shards=c.shards)
    return cases


def llama4_info(models):
    m0, m3, b1 = models["llama4"], models["llama4_l3"], models["llama4_bf16_l1"]
    C.check(m0["scheme"] == "rope" and m0["params"].get("layout") == "interleaved"
            and m0["params"].get("base") == 500000
            and m0["params"].get("scaling", {}).get("type") == "llama3"
            and m0.get("post_rope_qk_norm") == {"type": "l2norm", "over": "head", "eps": 1e-5}
            and "attn_temperature" not in m0 and "qk_norm" not in m0,
            f"/info llama4 layer 0: interleaved llama3 rope, L2 norm after it: {m0}")
    C.check(m3["scheme"] == "none" and "post_rope_qk_norm" not in m3
            and m3.get("attn_temperature") == {"floor_scale": 8192, "attn_scale": 0.1},
            f"/info llama4 layer 3 (default NoPE pattern): temperature, no norm: {m3}")
    C.check(models["llama4_l1"]["scheme"] == "rope"
            and b1["scheme"] == "none" and b1.get("attn_temperature") == {"floor_scale": 2,
                                                                           "attn_scale": 0.5},
            "/info llama4: layer 1 rope by default, NoPE by no_rope_layers [1, 0]")
    f0, f1 = models["llama4_f16"], models["llama4_f16_l1"]
    C.check(f0["scheme"] == "none" and "attn_temperature" not in f0
            and f1["scheme"] == "rope" and f1["params"].get("base") == 500000
            and "scaling" not in f1["params"] and "post_rope_qk_norm" not in f1,
            f"/info llama4 tuning and qk norm off, Llama4TextConfig's rope_theta: {f0} {f1}")


def llama4_checks(root):
    cases = llama4_cases()
    args = []
    for c in cases.values():
        d = os.path.join(root, "l4_" + (c.name if not c.layer else c.name.rsplit("_l", 1)[0]))
        if not os.path.exists(d):
            c.ckpt.write(d, shards=c.shards)
        args += ["--model", f"{c.name}={d}" + (f":{c.layer}" if c.layer else "")]
    with Server(args) as srv:
        for c in cases.values():
            run_case(srv, c)
        # Scout's floor_scale 8192: the temperature past 8191; and far rope positions
        for name in ("llama4_l3", "llama4", "llama4_bf16_l1"):
            c = cases[name]
            x = RNG.standard_normal((5, c.d)).astype(np.float32)
            pos = np.array([3, 8190, 8191, 20000, 100000])
            st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                           "positions": pos.tolist(),
                                           "return": ["q", "k", "scores"]})
            if C.check(st == 200, f"{name} far positions: status {st} {r}"):
                compare(c, "far positions", r, c.reference(x.astype(np.float64), pos),
                        ["q", "k", "scores"])
        # offset: HF's temperature positions are arange(T) + past length
        c = cases["llama4_bf16_l1"]
        x = RNG.standard_normal((4, c.d)).astype(np.float32)
        st, r = srv.request("/apply", {"model": c.name, "embeddings": x.tolist(), "offset": 9,
                                       "return": ["q"]})
        want = hf_ref.llama4(c.ckpt.config, c.ckpt.weights(), x.astype(np.float64),
                             np.arange(9, 13), 1, prefix=c.prefix, cache_start=9)
        if C.check(st == 200, f"llama4 NoPE offset: status {st} {r}"):
            compare(c, "offset 9", r, want, "q")
        # a left-padded row: the temperature follows the slot (cache_position
        # 0..T-1), not the position ids cumsum(mask) - 1 (contract 1.2)
        x = RNG.standard_normal((2, 6, c.d)).astype(np.float32)
        mask = np.array([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
        st, r = srv.request("/apply", {"model": c.name, "embeddings": x.tolist(),
                                       "attention_mask": mask.tolist(), "return": ["q"]})
        if C.check(st == 200, f"llama4 NoPE left padding: status {st} {r}"):
            for b in range(2):
                pos = np.where(mask[b] == 1, np.cumsum(mask[b]) - 1, 1)
                want = hf_ref.llama4(c.ckpt.config, c.ckpt.weights(), x[b].astype(np.float64),
                                     pos, 1, prefix=c.prefix)
                C.close(f"llama4 NoPE left-padded row {b}: temperature by slot", r["q"][b],
                        want["q"])
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info["models"]}
        check_info_cases(models, cases)
        llama4_info(models)
        status = srv.stop()
        C.check(status == 0, f"llama4: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")


def llama4_malformed(root):
    """A malformed value of each key the llama4_text loader adds: exit 2
    naming it."""
    out = []

    def case(label, want, **over):
        ckpt = ck.llama4_text(layers=2)
        d = os.path.join(root, "bad4_" + label.replace(" ", "_").replace(":", ""))
        ckpt.write(d, config=dict(ckpt.config, **over))
        out.append((label, d, ["config.json"] + want))

    case("llama4: no_rope_layers entry 2", ["no_rope_layers[1]", "2"], no_rope_layers=[1, 2])
    case("llama4: no_rope_layers a string", ["no_rope_layers", "list"], no_rope_layers="1,0")
    case("llama4: no_rope_layers too short", ["no_rope_layers", "1 entries", "num_hidden_layers"],
         no_rope_layers=[1])
    case("llama4: no_rope_layer_interval 0", ["no_rope_layer_interval", "0"],
         no_rope_layer_interval=0)
    case("llama4: attn_temperature_tuning a string", ["attn_temperature_tuning"],
         attn_temperature_tuning="yes")
    case("llama4: floor_scale 0", ["floor_scale", "> 0"], floor_scale=0)
    case("llama4: attn_scale a string", ["attn_scale"], attn_scale="0.1")
    case("llama4: use_qk_norm a number", ["use_qk_norm"], use_qk_norm=1)
    case("llama4: head_dim odd", ["head_dim", "15", "even"], head_dim=15)
    case("llama4: rope_scaling llama3 without low_freq_factor", ["rope_scaling.low_freq_factor"],
         rope_scaling={"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192})
    return out


# ------------------------------------------------------ DeepSeek-V2/V3 MLA
def deepseek_cases():
    """DeepSeek-V3 (low-rank q, interleave permutation, yarn with mscale in
    the score scale), V3 without rope_interleave, DeepSeek-V2-Lite (q_proj,
    complex rotation). A short original context makes yarn's ramp visible."""
    short_yarn = {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                  "mscale_all_dim": 0.707, "original_max_position_embeddings": 16,
                  "type": "yarn"}
    cases = {
        "ds3": Case("ds3", ck.deepseek(), hf_ref.deepseek),
        "ds3_yarn": Case("ds3_yarn", ck.deepseek(seed=311, rope_scaling=short_yarn),
                         hf_ref.deepseek),
        "ds3_bf16": Case("ds3_bf16", ck.deepseek(seed=312, dtype="BF16", prefix="",
                                                 rope_interleave=False, rope_scaling=None),
                         hf_ref.deepseek, prefix="", shards=2),
        "ds2": Case("ds2", ck.deepseek(seed=313, dtype="F16", model_type="deepseek_v2",
                                       q_lora_rank=None, rope_scaling=short_yarn),
                    hf_ref.deepseek),
    }
    for base in ("ds3", "ds2", "ds3_bf16"):
        c = cases[base]
        cases[f"{base}_l1"] = Case(f"{base}_l1", c.ckpt, c.ref, layer=1, prefix=c.prefix,
                                   shards=c.shards)
    return cases


def deepseek_info(models, cases):
    m = models["ds3"]
    C.check(m.get("mla") == {"q_lora_rank": 12, "kv_lora_rank": 10, "qk_nope_head_dim": 6,
                             "qk_rope_head_dim": 4, "v_head_dim": 5, "eps": 1e-6}
            and m["head_dim"] == 10 and m["kv_heads"] == 4
            and m["params"].get("layout") == "half"
            and m["params"].get("scaling", {}).get("type") == "yarn"
            and "q_a_proj" in m["weights"] and "kv_b_proj" in m["weights"],
            f"/info ds3: MLA sizes, qk head 10, yarn, its weights: {m}")
    C.check(models["ds2"]["mla"]["q_lora_rank"] == 0
            and models["ds2"]["params"].get("layout") == "interleaved"
            and "q_a_proj" not in models["ds2"]["weights"],
            f"/info ds2: q_proj (q_lora_rank null), interleaved rope: {models['ds2']}")
    # V2 scales its scores by mscale(factor, mscale_all_dim)**2 as V3 does
    # (contract 1.2, architecture settlements): yarn factor 40, 0.707
    ms = 0.1 * 0.707 * np.log(40) + 1
    C.check(abs(models["ds2"]["params"].get("score_scale", 0) - 10 ** -0.5 * ms * ms) <= 1e-15,
            f"/info ds2: score_scale 10**-0.5 * mscale**2 = {10 ** -0.5 * ms * ms}: "
            f"{models['ds2']['params']}")
    for name in ("ds3", "ds3_yarn", "ds2", "ds3_bf16"):
        want = cases[name].reference(np.zeros((1, 32)), np.arange(1))["score_scale"]
        got = models[name]["params"].get("score_scale")
        C.check(got is not None and abs(got - want) <= 1e-15,
                f"/info {name}: score_scale {got}, HF's {want}")


def deepseek_checks(root):
    cases = deepseek_cases()
    args = []
    for c in cases.values():
        d = os.path.join(root, "ds_" + (c.name if not c.layer else c.name.rsplit("_l", 1)[0]))
        if not os.path.exists(d):
            c.ckpt.write(d, shards=c.shards)
        args += ["--model", f"{c.name}={d}" + (f":{c.layer}" if c.layer else "")]
    with Server(args) as srv:
        for c in cases.values():
            run_case(srv, c)
        # far positions through yarn's ramp; the answer's shape names both head sizes
        for name in ("ds3_yarn", "ds2_l1"):
            c = cases[name]
            x = RNG.standard_normal((4, c.d)).astype(np.float32)
            pos = np.array([3, 100, 1000, 60000])
            st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                           "positions": pos.tolist(),
                                           "return": ["q", "k", "v", "scores"]})
            if C.check(st == 200, f"{name} far positions: status {st} {r}"):
                compare(c, "far positions", r, c.reference(x.astype(np.float64), pos),
                        ["q", "k", "v", "scores"])
                sh = r["shape"]
                C.check(sh.get("qk_head_dim") == 10 and sh.get("v_head_dim") == 5
                        and sh["head_dim"] == 10 and len(r["v"][0]) == 20
                        and len(r["k"][0]) == 40, f"{name}: shape says both head sizes: {sh}")
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info["models"]}
        check_info_cases(models, cases)
        deepseek_info(models, cases)
        status = srv.stop()
        C.check(status == 0, f"deepseek: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")


def deepseek_malformed(root):
    """A malformed value of each key the deepseek loader reads, and its
    tensors: exit 2 naming it."""
    out = []
    v3, v2 = ck.deepseek(layers=1), ck.deepseek(layers=1, model_type="deepseek_v2",
                                                q_lora_rank=None)

    def case(label, ckpt, want, **over):
        d = os.path.join(root, "badds_" + label.replace(" ", "_").replace(":", ""))
        ckpt.write(d, config=dict(ckpt.config, **over))
        out.append((label, d, ["config.json"] + want))

    case("deepseek_v3: q_lora_rank 0", v3, ["q_lora_rank", "0"], q_lora_rank=0)
    case("deepseek_v3: kv_lora_rank a string", v3, ["kv_lora_rank"], kv_lora_rank="512")
    case("deepseek_v3: qk_rope_head_dim odd", v3, ["qk_rope_head_dim", "3", "even"],
         qk_rope_head_dim=3)
    case("deepseek_v3: qk_nope_head_dim negative", v3, ["qk_nope_head_dim", "-1"],
         qk_nope_head_dim=-1)
    case("deepseek_v3: v_head_dim 0", v3, ["v_head_dim", "0"], v_head_dim=0)
    case("deepseek_v3: num_key_value_heads differs", v3, ["num_key_value_heads", "2"],
         num_key_value_heads=2)
    case("deepseek_v3: attention_bias true", v3, ["attention_bias", "not modelled"],
         attention_bias=True)
    case("deepseek_v3: rope_interleave a string", v3, ["rope_interleave"], rope_interleave="yes")
    case("deepseek_v3: mscale_all_dim a string", v3, ["rope_scaling.mscale_all_dim"],
         rope_scaling=dict(v3.config["rope_scaling"], mscale_all_dim="1"))
    case("deepseek_v2: rope_scaling of an unknown type", v2, ["rope_scaling", "ntk9"],
         rope_scaling={"type": "ntk9", "factor": 2.0})
    for label, ckpt, name, edit, want in (
            ("deepseek_v3: no q_a_layernorm", v3, "model.layers.0.self_attn.q_a_layernorm.weight",
             None, "no tensor"),
            ("deepseek_v2: no q_proj", v2, "model.layers.0.self_attn.q_proj.weight", None,
             "no tensor"),
            ("deepseek_v3: kv_b_proj of the wrong shape", v3,
             "model.layers.0.self_attn.kv_b_proj.weight", lambda t: t[:-1], "shape")):
        bad = ck.Checkpoint(ckpt.config, [(n, dt, edit(t) if n == name else t)
                                          for n, dt, t in ckpt.tensors if n != name or edit])
        d = os.path.join(root, "badds_" + label.replace(" ", "_").replace(":", ""))
        bad.write(d)
        out.append((label, d, [os.path.join(d, "model.safetensors"), name, want]))
    return out


# ------------------------------------------------------------- rope scaling
def rope_cases():
    """(name, config overrides, requests as position arrays)."""
    short, long_ = np.arange(6), np.arange(6) + 100
    return [
        ("rope_linear", {"rope_scaling": {"type": "linear", "factor": 4.0}}, [short, long_]),
        ("rope_dynamic", {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
         [short, long_]),
        ("rope_yarn", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 16}}, [short, long_]),
        ("rope_yarn_full", {"max_position_embeddings": 256, "original_max_position_embeddings": 32,
                            "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "beta_fast": 16.0,
                                             "beta_slow": 2.0, "mscale": 1.0,
                                             "mscale_all_dim": 0.5, "truncate": False}},
         [short, long_]),
        ("rope_yarn_nofactor", {"rope_scaling": {"rope_type": "yarn",
                                                 "original_max_position_embeddings": 16}},
         [long_]),
        ("rope_llama3", {"rope_theta": 500000.0,
                         "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                          "original_max_position_embeddings": 32}},
         [short, long_]),
        # low_freq_factor == high_freq_factor: no smoothed band, served with a
        # warning (contract 1.2); wavelengths 2pi*5e5^(i/4) of head_dim 8
        # fall on both sides of 32 / 1
        ("rope_llama3_flat", {"rope_theta": 500000.0,
                              "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                               "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                                               "original_max_position_embeddings": 32}},
         [short, long_, np.arange(6) * 997 + 3]),
        ("rope_longrope", {"original_max_position_embeddings": 16,
                           "rope_scaling": {"type": "longrope",
                                            "short_factor": [1.0, 1.2, 1.5, 2.0],
                                            "long_factor": [1.0, 2.0, 4.0, 8.0]}},
         [short, long_]),
        ("rope_params", {"rope_theta": None,
                         "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                             "rope_theta": 5000.0}}, [short]),
        # Llama ignores partial_rotary_factor for the default rope: the whole
        # head rotates; posenc warns.
        ("rope_partial", {"partial_rotary_factor": 0.5}, [short, long_]),
        # keys HF does not read for the type: served, one warning each
        ("rope_extra_keys", {"rope_scaling": {"type": "linear", "factor": 2.0,
                                              "low_freq_factor": 1.0, "zeta": 3}}, [short]),
    ]


def rope_checks(srv, cases):
    # the flat llama3 fixture has both kinds of frequency and nothing between
    inv, _ = hf_ref.rope_init(cases["rope_llama3_flat"].ckpt.config, 8)
    plain = 1.0 / 500000.0 ** (np.arange(0, 8, 2) / 8)
    C.check(np.all(np.isfinite(inv)) and np.all((inv == plain) | (inv == plain / 8))
            and np.any(inv == plain) and np.any(inv == plain / 8),
            f"rope_llama3_flat: frequencies kept or divided by 8, none between: {inv}")
    for name, case in cases.items():
        x = RNG.standard_normal((6, case.d)).astype(np.float32)
        for pos in case.requests:
            st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                           "positions": pos.tolist()})
            what = f"{name} positions {pos[0]}..{pos[-1]}"
            if not C.check(st == 200, f"{what}: status {st} {r}"):
                continue
            want = case.reference(x.astype(np.float64), pos)
            for k in "qkv":
                C.close(f"{what}: {k}", arr(r, k), want[k])
            if "attention_factor" in r:
                C.check(abs(r["attention_factor"] - want["attention_factor"]) < 1e-6,
                        f"{what}: attention_factor {r['attention_factor']} vs "
                        f"{want['attention_factor']}")
            elif want["attention_factor"] != 1.0:
                C.check(False, f"{what}: no attention_factor reported")


def warning_checks(stderr):
    """Start-up warnings: one line per ignored key, naming model and key."""
    lines = stderr.splitlines()

    def one_line(*words):
        hits = [ln for ln in lines if "warning" in ln and all(w in ln for w in words)]
        return C.check(len(hits) == 1, f"one warning line with {words}: {hits or stderr[-600:]}")
    one_line("rope_extra_keys", "rope_scaling.zeta")
    one_line("rope_extra_keys", "rope_scaling.low_freq_factor")
    one_line("rope_partial", "partial_rotary_factor", "ignored")
    one_line("rope_llama3_flat", "rope_scaling.low_freq_factor", "rope_scaling.high_freq_factor",
             "no wavelengths are smoothed")
    C.check(not any("warning" in ln and "'rope_llama3'" in ln for ln in lines),
            "no warning for llama3 factors with a band between them")
    C.check(not any("warning" in ln and "'rope_linear'" in ln for ln in lines),
            "no warning for a rope_scaling with only known keys")


# ------------------------------------------------------------------ malformed
def header_of(path):
    with open(path, "rb") as fh:
        blob = fh.read()
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def rewrite(path, header, data, metadata=False):
    with open(path, "wb") as fh:
        fh.write(st_write.assemble(header, data, metadata))


def malformed_cases(root):
    """(label, directory, args suffix, strings the error must contain)."""
    out = []
    base = ck.llama(seed=7, layers=1, prefix="model.")
    q = "model.layers.0.self_attn.q_proj.weight"
    k = "model.layers.0.self_attn.k_proj.weight"

    def fresh(label, cfg=None):
        d = os.path.join(root, label)
        base.write(d, config=cfg)
        return d, os.path.join(d, "model.safetensors")

    d, f = fresh("truncated")
    with open(f, "r+b") as fh:
        fh.truncate(os.path.getsize(f) - 10)
    h, _ = header_of(f)
    last = max(h.items(), key=lambda kv: kv[1]["data_offsets"][1] if kv[0] != "__metadata__" else -1)[0]
    out.append(("truncated file", d, [f, last, "out of range"]))

    d, f = fresh("tiny")
    with open(f, "wb") as fh:
        fh.write(b"\x01\x02\x03")
    out.append(("file shorter than 8 bytes", d, [f, "truncated"]))

    d, f = fresh("header_past_end")
    with open(f, "r+b") as fh:
        fh.write(struct.pack("<Q", os.path.getsize(f) + 100))
    out.append(("header length past the end", d, [f, "header length"]))

    d, f = fresh("header_not_json")
    h, data = header_of(f)
    with open(f, "wb") as fh:
        text = b"{not json" + b" " * 7
        fh.write(struct.pack("<Q", len(text)) + text + data)
    out.append(("header not JSON", d, [f, "not valid JSON"]))

    d, f = fresh("overlap")
    h, data = header_of(f)
    h[k]["data_offsets"] = [h[q]["data_offsets"][0] + 4,
                            h[q]["data_offsets"][0] + 4 + (h[k]["data_offsets"][1] - h[k]["data_offsets"][0])]
    rewrite(f, h, data)
    out.append(("overlapping offsets", d, [f, k, q, "overlap"]))

    d, f = fresh("out_of_range")
    h, data = header_of(f)
    size = h[q]["data_offsets"][1] - h[q]["data_offsets"][0]
    h[q]["data_offsets"] = [len(data) + 8, len(data) + 8 + size]
    rewrite(f, h, data)
    out.append(("offsets past the data", d, [f, q, "out of range"]))

    d, f = fresh("size_mismatch")
    h, data = header_of(f)
    h[q]["data_offsets"][1] -= 4
    rewrite(f, h, data)
    out.append(("offsets that do not fit dtype and shape", d, [f, q, "needs"]))

    d, f = fresh("unknown_dtype")
    h, data = header_of(f)
    h[k]["dtype"] = "Q7"
    rewrite(f, h, data)
    out.append(("unknown dtype", d, [f, k, "unknown dtype"]))

    d, f = fresh("int_dtype")
    h, data = header_of(f)
    h[k]["dtype"] = "I32"
    rewrite(f, h, data)
    out.append(("integer dtype for a needed tensor", d, [f, k, "I32"]))

    d, f = fresh("missing_tensor")
    h, data = header_of(f)
    del h[k]
    rewrite(f, h, data)
    out.append(("missing tensor", d, [f, k, "no tensor"]))

    d = os.path.join(root, "wrong_shape")
    bad = ck.llama(seed=7, layers=1)
    bad.tensors = [(n, dt, a[:, :-1] if n == k else a) for n, dt, a in bad.tensors]
    bad.write(d)
    out.append(("wrong shape", d, [os.path.join(d, "model.safetensors"), k, "shape"]))

    d = os.path.join(root, "non_finite")
    bad = ck.llama(seed=7, layers=1)
    for n, dt, a in bad.tensors:
        if n == q:
            a[1, 2] = np.inf
    bad.write(d)
    out.append(("non-finite weight", d, [os.path.join(d, "model.safetensors"), q, "finite"]))

    d = os.path.join(root, "shard_missing")
    ck.llama(seed=7, layers=1).write(d, shards=2)
    os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))
    out.append(("sharded: a shard is missing", d, ["model-00002-of-00002.safetensors"]))

    d = os.path.join(root, "shard_escape")
    ck.llama(seed=7, layers=1).write(d, shards=2)
    idx = os.path.join(d, "model.safetensors.index.json")
    with open(idx) as fh:
        j = json.load(fh)
    j["weight_map"][q] = "../model.safetensors"
    with open(idx, "w") as fh:
        json.dump(j, fh)
    out.append(("sharded: a shard outside the directory", d, [idx, q]))

    cfg_bad = [
        ("config: not JSON", "{\"model_type\": \"llama\",", ["config.json"]),
        ("config: missing key", dict(base.config, hidden_size=None), ["config.json", "hidden_size"]),
        ("config: unknown model_type", dict(base.config, model_type="gptq9"),
         ["config.json", "gptq9"]),
        ("config: unknown rope type", dict(base.config, rope_scaling={"rope_type": "ntk9", "factor": 2.0}),
         ["config.json", "ntk9"]),
        ("config: llama3 without low_freq_factor",
         dict(base.config, rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                         "high_freq_factor": 4.0}),
         ["config.json", "low_freq_factor"]),
        # equal factors are served (rope_llama3_flat); a high below the low is not
        ("config: llama3 high_freq_factor below low_freq_factor",
         dict(base.config, rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                         "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                                         "original_max_position_embeddings": 32}),
         ["config.json", "high_freq_factor", "low_freq_factor"]),
        ("config: heads not dividing", dict(base.config, num_key_value_heads=3),
         ["config.json", "num_key_value_heads"]),
        ("config: wrong type", dict(base.config, num_attention_heads="four"),
         ["config.json", "num_attention_heads"]),
        # HF's Llama fails for a scaled rope on part of the head
        ("config: llama partial_rotary_factor with a scaled rope",
         dict(base.config, partial_rotary_factor=0.5,
              rope_scaling={"type": "linear", "factor": 2.0}),
         ["config.json", "partial_rotary_factor", "0.5", "linear"]),
        # get_mscale(4, -20) / get_mscale(4, 1) < 0
        ("config: yarn attention factor from mscale <= 0",
         dict(base.config, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                         "original_max_position_embeddings": 16,
                                         "mscale": -20.0, "mscale_all_dim": 1.0}),
         ["config.json", "mscale", "> 0"]),
    ]
    for label, cfg, want in cfg_bad:
        d = os.path.join(root, label.replace(" ", "_").replace(":", ""))
        if isinstance(cfg, str):
            base.write(d)
            with open(os.path.join(d, "config.json"), "w") as fh:
                fh.write(cfg)
        else:
            base.write(d, config={kk: v for kk, v in cfg.items() if v is not None})
        out.append((label, d, want))
    return out


def new_arch_malformed(root):
    """A malformed value of each key the new loaders read: exit 2 naming it."""
    out = []

    def case(label, ckpt, want, **over):
        d = os.path.join(root, "bad_" + label.replace(" ", "_").replace(":", ""))
        cfg = {kk: v for kk, v in dict(ckpt.config, **over).items() if v is not None}
        ckpt.write(d, config=cfg)
        out.append((label, d, ["config.json"] + want))

    neox, phi, phi3 = ck.gpt_neox(layers=1), ck.phi(layers=1), ck.phi3(layers=1)
    sc2, gem = ck.starcoder2(layers=1), ck.gemma(layers=1)
    case("gpt_neox: rotary_pct 0", neox, ["rotary_pct", "(0, 1]"], rotary_pct=0)
    case("gpt_neox: rotary_pct 1.5", neox, ["rotary_pct", "(0, 1]"], rotary_pct=1.5)
    case("gpt_neox: rotary_pct a string", neox, ["rotary_pct"], rotary_pct="quarter")
    case("gpt_neox: rotary_emb_base 0", neox, ["rotary_emb_base", "0"], rotary_emb_base=0)
    case("gpt_neox: attention_bias not a boolean", neox, ["attention_bias"], attention_bias=1)
    case("gpt_neox: heads not dividing hidden_size", neox, ["hidden_size", "5"],
         num_attention_heads=5)
    # qk_layernorm true is served (arch_phi.py) and reads its weights: none here
    d = os.path.join(root, "bad_phi_qk_layernorm_no_weights")
    phi.write(d, config={kk: v for kk, v in dict(phi.config, qk_layernorm=True).items()
                         if v is not None})
    out.append(("phi: qk_layernorm true without q_layernorm", d,
                ["model.safetensors", "no tensor", "model.layers.0.self_attn.q_layernorm.weight"]))
    case("phi: odd rotary width", phi, ["rotary width", "5", "partial_rotary_factor"],
         partial_rotary_factor=0.5)
    case("phi: layer_norm_eps negative", phi, ["layer_norm_eps", "-1"], layer_norm_eps=-1.0)
    case("phi3: short_factor of the wrong length", phi3, ["short_factor", "3 entries", "4"],
         rope_scaling=dict(phi3.config["rope_scaling"], short_factor=[1.0, 1.0, 1.0]))
    case("phi3: rope type su", phi3, ["rope type 'su'", "not supported"],
         rope_scaling=dict(phi3.config["rope_scaling"], type="su"))
    case("phi3: long_factor missing", phi3, ["long_factor"],
         rope_scaling={"type": "longrope", "short_factor": [1.0] * 4})
    case("phi3: partial_rotary_factor 2", phi3, ["partial_rotary_factor", "(0, 1]"],
         partial_rotary_factor=2.0)
    case("starcoder2: use_bias not a boolean", sc2, ["use_bias", "true or false"], use_bias="yes")
    case("starcoder2: norm_epsilon 0", sc2, ["norm_epsilon", "> 0"], norm_epsilon=0)
    case("starcoder2: kv heads not dividing", sc2, ["num_key_value_heads", "4"],
         num_key_value_heads=4)
    case("gemma: head_dim 0", gem, ["head_dim", "0", "out of range"], head_dim=0)
    case("gemma: rms_norm_eps a string", gem, ["rms_norm_eps"], rms_norm_eps="tiny")
    # an embedding that overflows float16 once multiplied by sqrt(hidden_size)
    big = ck.gemma(layers=1, dtype="F16")
    big.tensors = [(n, dt, np.full_like(a, 30000.0) if n == "model.embed_tokens.weight" else a)
                   for n, dt, a in big.tensors]
    d = os.path.join(root, "bad_gemma_overflow")
    big.write(d)
    out.append(("gemma: normalized embedding overflows F16", d,
                ["config.json", "embed_tokens.weight", "overflows F16"]))
    return out


def fifo_cases(root):
    """A FIFO where a file should be must not block start-up."""
    out = []
    for label, name, shards in (("config.json", "config.json", 0),
                                ("model.safetensors", "model.safetensors", 0),
                                ("index", "model.safetensors.index.json", 2),
                                ("shard", "model-00001-of-00002.safetensors", 2)):
        d = os.path.join(root, "fifo_" + label.replace(".", "_"))
        ck.llama(seed=7, layers=1).write(d, shards=shards)
        os.remove(os.path.join(d, name))
        os.mkfifo(os.path.join(d, name))
        out.append((f"FIFO as {label}", d, [name, "not a regular file", "FIFO"]))
    return out


def long_path_case(root):
    """A message longer than the API's 512-byte error text arrives whole."""
    d = root
    while len(d) < 700:
        d = os.path.join(d, "a-rather-long-directory-name-for-a-model-checkpoint")
    base = ck.llama(seed=7, layers=1)
    base.tensors = [t for t in base.tensors if t[0] != "model.layers.0.self_attn.v_proj.weight"]
    base.write(d)
    return ("message past 512 bytes", d,
            [os.path.join(d, "model.safetensors") + ": no tensor "
             "model.layers.0.self_attn.v_proj.weight"])


def malformed_checks(root):
    if not os.path.exists(os.path.join(root, "good")):  # run without the core group
        ck.posenc_format().write(os.path.join(root, "posenc"))
        ck.llama(seed=7, layers=1).write(os.path.join(root, "good"))
    for label, d, want in (malformed_cases(root) + new_arch_malformed(root) +
                           falcon_mpt_malformed(root) + qwen3_gemma_malformed(root) +
                           llama4_malformed(root) + deepseek_malformed(root) +
                           cohere_family_malformed(root) +
                           fifo_cases(root) + [long_path_case(root)]):
        st, err, listened = run_failing(["--model", f"bad={d}"])
        ok = st == 2 and not listened and all(w in err for w in want) and "bad" in err
        C.check(ok, f"malformed ({label}): exit {st}, want 2 and {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"malformed ({label}): sanitizer/valgrind clean: {err[:600]}")
    extra = [
        ("layer past the end", [f"--model", f"bad={root}/good:5"], ["config.json", "layer 5"]),
        (":LAYER on a posenc-format model", ["--model", f"bad={root}/posenc:1"],
         ["config.json", "LAYER"]),
        ("missing directory", ["--model", f"bad={root}/nowhere"], ["nowhere", "config.json"]),
        ("duplicate name", ["--model", f"bad={root}/good", "--model", f"bad={root}/good"],
         ["bad", "twice"]),
        ("bad NAME=DIR", ["--model", "=nodir"], ["NAME=DIR"]),
    ]
    for label, args, want in extra:
        st, err, listened = run_failing(args)
        ok = st == 2 and not listened and all(w in err for w in want)
        C.check(ok, f"startup error ({label}): exit {st}, want 2 and {want} in: {err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"startup error ({label}): sanitizer clean: {err[:600]}")


# ---------------------------------------------------------------------- main
def core_checks(root):
    """Llama, Qwen2, GPT-2, BERT, BLOOM and T5 in every dtype, single and
    sharded, layer 0 and a later one; every rope scaling type; /info; the
    posenc format; POSENC_MODEL and the built-in default beside it."""
    arch = {
        "llama": Case("llama", ck.llama(), hf_ref.llama),
        "qwen2": Case("qwen2", ck.llama(seed=11, dtype="F16", prefix="", model_type="qwen2",
                                         head_dim=12, bias=True), hf_ref.llama, prefix="",
                      shards=3),
        # Qwen2Attention has q/k/v biases whatever attention_bias says
        "qwen2_biaskey": Case("qwen2_biaskey",
                              ck.llama(seed=13, prefix="model.", model_type="qwen2",
                                       bias=True, attention_bias=False),
                              hf_ref.llama),
        "llama_bf16": Case("llama_bf16", ck.llama(seed=12, dtype="BF16", prefix="", bias=True,
                                                  kv_heads=1), hf_ref.llama, prefix=""),
        "gpt2": Case("gpt2", ck.gpt2(), hf_ref.gpt2, prefix=""),
        "gpt2_f16": Case("gpt2_f16", ck.gpt2(seed=21, dtype="F16", prefix="transformer."),
                         hf_ref.gpt2, prefix="transformer."),
        "bert": Case("bert", ck.bert(), hf_ref.bert, prefix="bert."),
        "bert_bf16": Case("bert_bf16", ck.bert(seed=31, dtype="BF16", prefix=""), hf_ref.bert,
                          prefix="", shards=2),
        "bloom": Case("bloom", ck.bloom(prefix=""), hf_ref.bloom, prefix=""),
        "bloom_bf16": Case("bloom_bf16", ck.bloom(seed=41, dtype="BF16", n_embed=None,
                                                  hidden_size=48, n_head=None,
                                                  num_attention_heads=6),
                           hf_ref.bloom, prefix="transformer."),
        "t5": Case("t5", ck.t5(), hf_ref.t5),
        "t5_f16": Case("t5_f16", ck.t5(seed=51, dtype="F16", own_embed=True), hf_ref.t5),
    }
    for c in arch.values():  # strip None-valued config overrides
        c.ckpt.config = {kk: v for kk, v in c.ckpt.config.items() if v is not None}
    later = {}
    for base_name, other in (("llama", None), ("gpt2", None), ("bert", None), ("bloom", None),
                             ("t5", None), ("gpt2_f16", {"scale_attn_by_inverse_layer_idx": True})):
        c = arch[base_name]
        name = base_name + "_l1"
        ckpt = c.ckpt
        if other:
            ckpt = ck.Checkpoint(dict(c.ckpt.config, **other), c.ckpt.tensors)
        later[name] = Case(name, ckpt, c.ref, layer=1, prefix=c.prefix)
    dirs = {}
    for c in list(arch.values()) + list(later.values()):
        d = os.path.join(root, c.name)
        c.ckpt.write(d, shards=c.shards)
        dirs[c.name] = d
    pf = ck.posenc_format()
    pf.write(os.path.join(root, "posenc"))
    ck.llama(seed=7, layers=1).write(os.path.join(root, "good"))

    rope = {}
    for name, over, reqs in rope_cases():
        cfg_ckpt = ck.llama(seed=60 + len(rope), layers=1, head_dim=None, **over)
        cfg_ckpt.config = {kk: v for kk, v in cfg_ckpt.config.items() if v is not None}
        case = Case(name, cfg_ckpt, hf_ref.llama)
        case.requests = reqs
        cfg_ckpt.write(os.path.join(root, name))
        rope[name] = case

    args = []
    for c in list(arch.values()) + list(later.values()):
        args += ["--model", f"{c.name}={dirs[c.name]}" + (f":{c.layer}" if c.layer else "")]
    for name in rope:
        args += ["--model", f"{name}={os.path.join(root, name)}"]
    args += ["--model", f"default={os.path.join(root, 'posenc')}"]
    with Server(args) as srv:
        for c in list(arch.values()) + list(later.values()):
            run_case(srv, c)
        extra_requests(srv, arch)
        check_info(srv, {**arch, **later})
        posenc_format(srv, pf)
        answered, sent = self_diagnose.inline_models(srv, np.random.default_rng(5))
        C.check(answered == sent, f"inline models: {answered} of {sent} /apply answered 200")
        rope_checks(srv, rope)
        status = srv.stop()
        C.check(status == 0, f"server exits 0 after SIGTERM (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
        warning_checks(srv.stderr())

    env = dict(os.environ, POSENC_MODEL=f"a={dirs['gpt2']},b={dirs['bert']}:1")
    with Server([], env=env) as srv:
        st, info = srv.request("/info")
        names = {m["name"]: m for m in info.get("models", [])}
        C.check(st == 200 and set(names) == {"default", "a", "b"} and names["b"]["layer"] == 1
                and names["default"]["architecture"] == "posenc",
                f"POSENC_MODEL loads a comma-separated list next to the built-in default: {names.keys()}")
        # the built-in default model (sinusoidal) and a rope override of it, self-diagnosed
        x = np.random.default_rng(9).standard_normal((6, 512)).round(3).tolist()  # d_model 512
        for extra in ({}, {"scheme": "rope", "params": {"layout": "half"}, "offset": 3}):
            st, r = srv.request("/apply", dict({"embeddings": x}, **extra))
            C.check(st == 200, f"built-in default /apply {extra}: {st}")


# The groups, in the order they run: NAME, what it checks, its function.
# `test_models.py --list` names them, `test_models.py NAME...` runs those.
GROUPS = [
    ("core", "Llama, Qwen2, GPT-2, BERT, BLOOM, T5; rope scalings; /info; POSENC_MODEL",
     core_checks),
    ("neox_phi_gemma", "GPT-NeoX, Phi, Phi-3, StarCoder2, Gemma", new_arch_checks),
    ("falcon_mpt", "Falcon (rope, multi-query, grouped) and MPT (ALiBi)", falcon_mpt_checks),
    ("qwen3_gemma", "Qwen3, OLMo 2, Gemma 2, Gemma 3: q/k norms, two rope bases, soft cap",
     qwen3_gemma_checks),
    ("llama4", "Llama 4 text: NoPE layers, interleaved rotation, temperature", llama4_checks),
    ("deepseek", "DeepSeek-V2/V3 multi-head latent attention", deepseek_checks),
    ("cohere_family", "Cohere, Cohere 2, StableLM, MiniCPM, EXAONE 4", cohere_family_checks),
    ("padding_masks", "attention_mask and causal on RoBERTa, OPT, BLOOM, MPT, rope models",
     lambda root: mask_models.mask_checks(root, C)),
    ("granite_smollm3", "Granite and SmolLM3, Llama variations of the spec table",
     lambda root: llama_variants.variant_checks(root, C)),
    ("internlm2_glm_gpt_oss", "InternLM2, GLM-4, gpt-oss",
     lambda root: arch_2026.arch_checks(root, C)),
    ("mpt_clip_qkv", "MPT's clip_qkv", lambda root: arch_options.option_checks(root, C)),
    ("phi_qk_layernorm", "Phi's qk_layernorm", lambda root: arch_phi.phi_checks(root, C)),
    ("falcon_alibi", "Falcon's ALiBi (falcon-rw-1b)",
     lambda root: arch_falcon_alibi.falcon_alibi_checks(root, C)),
    ("wrappers", "wrapper configs (text_config) of multimodal checkpoints",
     lambda root: arch_wrappers.wrapper_checks(root, C)),
    ("families", "families served as table entries: Qwen3-MoE, GLM-4.5, ERNIE 4.5, Seed-OSS, "
     "Apertus, Arcee, AFMoE, EXAONE-MoE", lambda root: arch_families.family_checks(root, C)),
    ("hybrid", "attention layers of hybrid stacks: Granite 4.0-H, Nemotron-H, LFM2, Falcon-H1",
     lambda root: arch_hybrid.hybrid_checks(root, C)),
    ("rope_blocks", "transformers 5 rope blocks by layer type: Gemma 3, OLMo 3, ModernBERT",
     lambda root: arch_rope_blocks.rope_block_checks(root, C)),
    ("rope_proportional", "the proportional rope of Gemma 4's full layers",
     lambda root: rope_proportional.proportional_checks(root, C)),
    ("rope_block_keys", "model keys inside rope blocks: Ministral 3's query scale, HunYuan's "
     "NTK-alpha", lambda root: arch_block_keys.block_key_checks(root, C)),
    ("gated", "gated attention: Qwen3-Next, Qwen3.5 text (query half, (1+w) norms, gate)",
     lambda root: arch_gated.gated_checks(root, C)),
    ("gemma4", "Gemma 4 text: x*w norms, v_norm, per-layer head_dim, proportional rope, "
     "k_eq_v, kv-shared layers", lambda root: arch_gemma4.gemma4_checks(root, C)),
    ("minimax", "MiniMax-M2: whole-projection q/k norms, rotary_dim",
     lambda root: arch_minimax.minimax_checks(root, C)),
    ("dsa", "DeepSeek-V3.2 and GLM-5: V3's multi-head latent attention",
     lambda root: arch_dsa.dsa_checks(root, C)),
    ("inline_roundtrip", "/info's description of every loaded model, with its weights, as an "
     "inline model answers bit for bit", lambda root: inline_roundtrip.roundtrip_checks(root, C)),
    ("mrope", "multimodal rope (params.mrope), triples, mm_layout under both rules",
     lambda root: mrope_refs.mrope_checks(root, C)),
    ("mrope_loaded", "loaded models' M-RoPE from mrope_section: /info, vision and text triples",
     lambda root: mrope_loaded.mrope_loaded_checks(root, C)),
    ("rope2d", "vision encoders' 2-D rope: qwen_vit, pixtral, llama4_vision, gemma4_vision",
     lambda root: rope2d_refs.rope2d_checks(root, C)),
    ("malformed", "malformed checkpoints and flags stop the server, naming what is wrong",
     malformed_checks),
]


def run_in_shards(jobs, names):
    """Runs the selected groups in `jobs` processes of this script at once
    (group i in shard i mod jobs), prints their logs in shard order and
    adds up their counts. Used under valgrind, where each shard's server is
    one slow single-threaded process: two shards use both cores."""
    procs = [
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), f"--shard={k}/{jobs}", *names],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k in range(jobs)
    ]
    passed = failed = 0
    for k, proc in enumerate(procs):
        out, _ = proc.communicate()
        print(out, end="")
        summary = re.findall(r"^models: (\d+) passed, (\d+) failed$", out, re.M)
        if not summary or proc.returncode not in (0, 1):
            print(f"FAIL models shard {k}/{jobs}: exit status {proc.returncode} with no summary")
            failed += 1
        else:
            passed += int(summary[-1][0])
            failed += int(summary[-1][1])
    print(f"models: {passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if argv[:1] == ["--list"]:
        for name, _, _ in GROUPS:
            print(name)
        return 0
    options = [a for a in argv if a.startswith("--")]
    argv = [a for a in argv if not a.startswith("--")]
    jobs, shard = 1, (0, 1)
    for opt in options:
        if re.fullmatch(r"--jobs=[1-9]", opt):
            jobs = int(opt.split("=")[1])
        elif re.fullmatch(r"--shard=\d+/[1-9]", opt):
            k, n = (int(x) for x in opt.split("=")[1].split("/"))
            shard = (k, n)
        else:
            print(f"test_models.py: unknown option {opt} (--list, --jobs=N)", file=sys.stderr)
            return 2
    unknown = [a for a in argv if a not in {g[0] for g in GROUPS}]
    if unknown:
        print(f"test_models.py: no group {', '.join(unknown)} (--list names them)", file=sys.stderr)
        return 2
    if jobs > 1:
        return run_in_shards(jobs, argv)
    root = tempfile.mkdtemp(prefix="posenc-models-")
    try:
        for index, (name, _, run) in enumerate(GROUPS):
            if index % shard[1] != shard[0]:
                continue
            if not argv or name in argv:
                before = C.passed + C.failed
                run(root)
                print(f"group {name}: {C.passed + C.failed - before} checks")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"models: {C.passed} passed, {C.failed} failed")
    return 1 if C.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

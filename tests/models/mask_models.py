"""Padding-aware positions on loaded checkpoints (contract v1.1): RoBERTa and
XLM-RoBERTa (positions from token_ids, modeling_roberta.py
create_position_ids_from_input_ids / create_position_ids_from_inputs_embeds),
OPT (modeling_opt.py OPTLearnedPositionalEmbedding: cumsum(mask) * mask - 1,
row + 2; pre- and post-norm layers), BLOOM (build_alibi_tensor's key positions from the mask), MPT (its bias
ignores the mask), and a rope model (generate()'s cumsum(mask) - 1) over
HTTP against the numpy ports of hf_ref.py. Masked keys must read float32's
lowest in bias and scores."""
import os

import numpy as np

import checkpoints as ck
import hf_ref
from harness import Server, run_failing, sanitizer_clean

F32_LOWEST = -3.4028234663852886e38
PAD = 1


def _masked_close(C, what, got, want, keep):
    """got == float32's lowest where keep is False (over the key axis), and
    close to want elsewhere."""
    got = np.asarray(got, np.float64)
    keep = np.broadcast_to(keep, got.shape)
    # -3.4028235e38 as written is float32's lowest once rounded to float32
    lowest = np.float32(got[~keep]).astype(np.float64) == F32_LOWEST if (~keep).any() else [True]
    C.check(np.all(lowest), f"{what}: masked keys read -3.4028235e38")
    C.close(what, np.where(keep, got, 0.0), np.where(keep, want, 0.0))


def _cases():
    return {
        "roberta": (ck.roberta(), "roberta.", 0, 0),
        "xlmr_bf16": (ck.roberta(seed=202, dtype="BF16", prefix="", model_type="xlm-roberta"),
                      "", 0, 2),
        "roberta_f16": (ck.roberta(seed=203, dtype="F16", pad_token_id=3), "roberta.", 0, 0),
        "roberta_l1": (ck.roberta(seed=204), "roberta.", 1, 0),
    }


def _roberta_ids(C, srv, name, ckpt, prefix):
    """A batch with no, left and right padding, with and without a mask:
    positions from the ids either way."""
    cfg, w = ckpt.config, ckpt.weights()
    pad = cfg.get("pad_token_id", 1)
    table = w[prefix + "embeddings.word_embeddings.weight"]
    real = [5, 9, 4, 7, 11]
    ids = np.array([real + [8, 6], [pad, pad] + real, real + [pad, pad]])
    mask = (ids != pad).astype(int)
    pos = hf_ref.roberta_positions_from_ids(ids, pad)
    for body_mask in (None, mask):
        body = {"model": name, "token_ids": ids.tolist(), "return": ["q", "k", "v", "scores"]}
        label = f"{name} token_ids with padding"
        if body_mask is not None:
            body["attention_mask"] = body_mask.tolist()
            label += " + attention_mask"
        st, r = srv.request("/apply", body)
        if not C.check(st == 200, f"{label}: status {st} {r}"):
            continue
        for b in range(3):
            want = hf_ref.roberta(cfg, w, table[ids[b]], pos[b], 0, prefix=prefix)
            for k in "qkv":
                C.close(f"{label}: row {b} {k}", np.array(r[k][b]), want[k])
            keep = np.ones(7, bool) if body_mask is None else body_mask[b].astype(bool)
            _masked_close(C, f"{label}: row {b} scores", r["scores"][b], want["scores"],
                          keep[None, None, :])
    # the left-padded row's real tokens: the unpadded row's q
    st, r = srv.request("/apply", {"model": name, "token_ids": ids.tolist(),
                                   "attention_mask": mask.tolist()})
    if C.check(st == 200, f"{name} left padding: status {st}"):
        q = np.array(r["q"])
        C.close(f"{name}: left-padded real tokens get the unpadded q", q[1, 2:], q[0, :5])


def _roberta_embeddings(C, srv, name, ckpt, prefix, layer):
    cfg, w = ckpt.config, ckpt.weights()
    pad = cfg.get("pad_token_id", 1)
    x = np.random.default_rng(7).standard_normal((6, cfg["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "return": ["q", "k", "v", "scores"]})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = hf_ref.roberta(cfg, w, x.astype(np.float64),
                              hf_ref.roberta_positions_from_embeds(6, pad), layer, prefix=prefix)
        for k in ("q", "k", "v", "scores"):
            C.close(f"{name} embeddings (layer {layer}): {k}", np.array(r[k]), want[k])


def _opt_cases():
    return {
        "opt": (ck.opt(), "model.decoder.", 0, 0),
        # opt-350m's post-norm layers (no norm before attention), sharded
        "opt_post_f16": (ck.opt(seed=212, dtype="F16", do_layer_norm_before=False),
                         "model.decoder.", 0, 2),
        "opt_bf16": (ck.opt(seed=213, dtype="BF16", prefix="decoder."), "decoder.", 0, 0),
        "opt_l1": (ck.opt(seed=214), "model.decoder.", 1, 0),
    }


def _opt(C, srv, name, ckpt, prefix, layer):
    cfg, w = ckpt.config, ckpt.weights()
    T = 6
    if layer == 0:
        table = w[prefix + "embed_tokens.weight"]
        ids = np.array([[4, 9, 3, 7, 5, 8], [1, 1, 4, 9, 3, 7], [4, 9, 3, 7, 1, 1]])
        mask = (ids != 1).astype(int)
        for body_mask in (mask, None):
            pos = hf_ref.opt_positions(mask if body_mask is not None else np.ones_like(ids))
            body = {"model": name, "token_ids": ids.tolist(),
                    "return": ["q", "k", "v", "scores"]}
            label = f"{name} token_ids"
            if body_mask is not None:
                body["attention_mask"] = body_mask.tolist()
                label += " + attention_mask (left and right padding)"
            st, r = srv.request("/apply", body)
            if not C.check(st == 200, f"{label}: status {st} {r}"):
                continue
            for b in range(3):
                want = hf_ref.opt(cfg, w, table[ids[b]], pos[b], 0, prefix=prefix)
                for k in "qkv":  # padded slots too: they read row 1, as HF's
                    C.close(f"{label}: row {b} {k}", np.array(r[k][b]), want[k])
                keep = np.ones(T, bool) if body_mask is None else mask[b].astype(bool)
                _masked_close(C, f"{label}: row {b} scores", r["scores"][b], want["scores"],
                              keep[None, None, :])
            if body_mask is not None:
                q = np.array(r["q"])
                C.close(f"{name}: left-padded real tokens get the unpadded q", q[1, 2:], q[0, :4])
        st, r = srv.request("/apply", {"model": name, "token_ids": [4, 9], "offset": 5})
        if C.check(st == 200, f"{name} offset 5: status {st} {r}"):
            want = hf_ref.opt(cfg, w, table[[4, 9]], np.array([5, 6]), 0, prefix=prefix)
            C.close(f"{name} offset 5 (rows 7, 8): q", np.array(r["q"]), want["q"])
        n_pos = cfg["max_position_embeddings"]
        st, r = srv.request("/apply", {"model": name, "token_ids": [4], "offset": n_pos - 1})
        C.check(st == 200, f"{name}: position max_position_embeddings - 1 is the last row: {st}")
        st, r = srv.request("/apply", {"model": name, "token_ids": [4], "offset": n_pos})
        C.check(st == 422, f"{name}: position max_position_embeddings is past the table: {st}")
    x = np.random.default_rng(10).standard_normal((T, cfg["hidden_size"])).astype(np.float32)
    st, r = srv.request("/apply", {"model": name, "embeddings": x.tolist(),
                                   "return": ["q", "k", "v", "scores"]})
    if C.check(st == 200, f"{name} embeddings: status {st} {r}"):
        want = hf_ref.opt(cfg, w, x.astype(np.float64), np.arange(T), layer, prefix=prefix)
        for k in ("q", "k", "v", "scores"):
            C.close(f"{name} embeddings (layer {layer}): {k}", np.array(r[k]), want[k])


def _bloom_mpt(C, srv):
    """BLOOM: key positions (cumsum(mask) - 1) * mask; MPT: the slot index,
    whatever the mask (its bias does not read it)."""
    b = ck.bloom(prefix="")
    cfg, w = b.config, b.weights()
    x = np.random.default_rng(8).standard_normal((2, 5, cfg["n_embed"])).astype(np.float32)
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 0]])
    st, r = srv.request("/apply", {"model": "mask_bloom", "embeddings": x.tolist(),
                                   "attention_mask": mask.tolist(), "return": ["bias", "scores"]})
    if C.check(st == 200, f"bloom attention_mask: status {st} {r}"):
        for row in range(2):
            want = hf_ref.bloom(cfg, w, x[row].astype(np.float64), None, 0, prefix="",
                                mask=mask[row])
            keep = mask[row].astype(bool)[None, None, :]
            for k in ("bias", "scores"):
                _masked_close(C, f"bloom attention_mask row {row}: {k}", r[k][row], want[k], keep)
    m = ck.mpt(layers=1)
    cfg, w = m.config, m.weights()
    x = np.random.default_rng(9).standard_normal((5, cfg["d_model"])).astype(np.float32)
    mask = [0, 1, 1, 1, 1]  # left padding: slope*slot (the bloom form posenc writes) moves
    st, r = srv.request("/apply", {"model": "mask_mpt", "embeddings": x.tolist(),
                                   "attention_mask": mask, "return": ["bias"]})
    st0, r0 = srv.request("/apply", {"model": "mask_mpt", "embeddings": x.tolist(),
                                     "return": ["bias"]})
    if C.check(st == 200 and st0 == 200, f"mpt attention_mask: status {st} {st0}"):
        keep = np.array(mask, bool)[None, None, :]
        _masked_close(C, "mpt attention_mask: bias is the slot's", r["bias"], r0["bias"], keep)


def _rope(C, srv):
    """A Llama checkpoint: generate()'s positions, cumsum(mask) - 1."""
    lm = ck.llama(seed=205, layers=1)
    cfg, w = lm.config, lm.weights()
    table = w["model.embed_tokens.weight"]
    ids = np.array([[0, 0, 3, 9, 4], [3, 9, 4, 0, 0]])
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0]])
    pos = np.array([[1, 1, 0, 1, 2], [0, 1, 2, 1, 1]])  # by hand
    st, r = srv.request("/apply", {"model": "mask_llama", "token_ids": ids.tolist(),
                                   "attention_mask": mask.tolist(), "causal": True,
                                   "return": ["q", "k", "scores"]})
    if C.check(st == 200, f"llama attention_mask + causal: status {st} {r}"):
        for row in range(2):
            want = hf_ref.llama(cfg, w, table[ids[row]], pos[row], 0)
            for k in "qk":
                C.close(f"llama attention_mask row {row}: {k}", np.array(r[k][row]), want[k])
            # HF's causal mask compares slots (key j <= query i), not
            # positions: pad queries see the keys before them (contract 1.2)
            slots = np.arange(len(pos[row]))
            keep = mask[row].astype(bool)[None, :] & (slots[None, :] <= slots[:, None])
            _masked_close(C, f"llama attention_mask + causal row {row}: scores",
                          r["scores"][row], want["scores"], keep[None])


def mask_checks(root, C):
    args = []
    cases = _cases()
    for name, (ckpt, prefix, layer, shards) in cases.items():
        d = os.path.join(root, "mask_" + name)
        ckpt.write(d, shards=shards)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    opt_cases = _opt_cases()
    for name, (ckpt, prefix, layer, shards) in opt_cases.items():
        d = os.path.join(root, "mask_" + name)
        ckpt.write(d, shards=shards)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    for name, ckpt in (("mask_bloom", ck.bloom(prefix="")), ("mask_mpt", ck.mpt(layers=1)),
                       ("mask_llama", ck.llama(seed=205, layers=1))):
        d = os.path.join(root, name)
        ckpt.write(d)
        args += ["--model", f"{name}={d}"]
    with Server(args) as srv:
        for name, (ckpt, prefix, layer, shards) in cases.items():
            if layer == 0:
                _roberta_ids(C, srv, name, ckpt, prefix)
            _roberta_embeddings(C, srv, name, ckpt, prefix, layer)
        for name, (ckpt, prefix, layer, shards) in opt_cases.items():
            _opt(C, srv, name, ckpt, prefix, layer)
        _bloom_mpt(C, srv)
        _rope(C, srv)
        st, info = srv.request("/info")
        models = {m["name"]: m for m in info.get("models", [])} if st == 200 else {}
        for name, want in (("roberta", {"rule": "token_ids", "pad_token_id": 1}),
                           ("mask_bloom", {"rule": "bloom"}), ("mask_mpt", {"rule": "slot"}),
                           ("mask_llama", {"rule": "cumsum(mask)-1"})):
            got = models.get(name, {}).get("positions")
            C.check(got == want, f"/info {name}: positions {got}, want {want}")
        for name in opt_cases:
            got = models.get(name, {}).get("positions")
            C.check(got == {"rule": "opt", "table_offset": 2},
                    f"/info {name}: positions {got}, want OPT's rule and table offset 2")
        st, r = srv.request("/apply", {"model": "roberta", "token_ids": [5, 6],
                                       "attention_mask": [1, 2]})
        C.check(st == 422 and r["error"]["code"] == "invalid_shape",
                f"roberta attention_mask [1, 2] -> 422 invalid_shape, got {st} {r}")
        status = srv.stop()
        C.check(status == 0, f"mask checkpoints: server exits 0 (got {status})")
        C.check(sanitizer_clean(srv.stderr()), f"server stderr clean: {srv.stderr()[-800:]}")
    _malformed(root, C)


def _malformed(root, C):
    """pad_token_id: the one key the RoBERTa loader adds to BERT's; OPT's
    keys."""
    rb, op = ck.roberta(layers=1), ck.opt(layers=1)
    for label, base, over, want in (
            ("opt word_embed_proj_dim 16", op, {"word_embed_proj_dim": 16},
             ["word_embed_proj_dim", "16", "project_in"]),
            ("opt do_layer_norm_before a string", op, {"do_layer_norm_before": "yes"},
             ["do_layer_norm_before"]),
            ("opt enable_bias a number", op, {"enable_bias": 1}, ["enable_bias"]),
            ("opt layer_norm_elementwise_affine false", op,
             {"layer_norm_elementwise_affine": False}, ["layer_norm_elementwise_affine"]),
            ("opt heads not dividing", op, {"num_attention_heads": 5}, ["hidden_size", "5"]),
            ("pad_token_id a string", rb, {"pad_token_id": "one"}, ["pad_token_id"]),
            ("pad_token_id negative", rb, {"pad_token_id": -1}, ["pad_token_id", "-1"]),
            ("pad_token_id past the table", rb, {"pad_token_id": 41},
             ["pad_token_id", "41", "position_embeddings"]),
            ("position_embedding_type relative_key", rb,
             {"position_embedding_type": "relative_key"}, ["position_embedding_type"])):
        d = os.path.join(root, "badmask_" + label.replace(" ", "_"))
        base.write(d, config=dict(base.config, **over))
        st, err, listened = run_failing(["--model", f"bad={d}"])
        ok = st == 2 and not listened and all(w in err for w in ["config.json"] + want)
        C.check(ok, f"malformed ({label}): exit {st}, want 2 and {want} in: "
                    f"{err.strip()[:400]}")
        C.check(sanitizer_clean(err), f"malformed ({label}): sanitizer clean")

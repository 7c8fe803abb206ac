"""Loaded models with multimodal RoPE: a config whose rope block has
mrope_section (legacy rope_scaling with type "mrope", a transformers 5 flat
rope_parameters with mrope_interleaved, a wrapper's text_config on a
partial rotary) gets params.mrope from the architecture (/info), and /apply
takes triples: vision triples turn q and k as Hugging Face's rotary
embedding does (the numpy restatement in mrope_refs over the unrotated
projections of the text model's reference), text triples give the bits of
1-D positions, and mm_layout equals its echoed positions. ERNIE-4.5-VL's
text model (ernie4_5_vl_moe_text, in a wrapper and flat) lists its
section as [h, w, t]: served as style ernie with the section [t, h, w];
its rope types other than default and unequal h, w are refused."""
import numpy as np

import arch_common as ac
import arch_families
import arch_gated
import arch_wrappers
import mrope_refs
from harness import Server, sanitizer_clean

RNG = np.random.default_rng(2690)
TRIPLES = [[0, 0, 0], [1, 1, 1], [2, 2, 2], [2, 3, 5], [2, 7, 1], [9, 4, 6]]
LAYOUT = [{"text": 2}, {"image": [1, 4, 4]}, {"text": 2}]  # 2 + 4 + 2 tokens at merge 2


def _cases():
    """name: (checkpoint, reference, prefix, text config, mrope, rope):
    rope = (base, head_dim, rotary, layout)."""
    q25 = arch_wrappers.qwen2_vl_text(2691, "F32", "model.", model_type="qwen2_5_vl",
                                      rope_scaling={"type": "mrope",
                                                    "mrope_section": [2, 1, 1]})
    q3 = ac.wrap(arch_wrappers.qwen3_vl_text(2692, "F32", "model.language_model.",
                                             rope_scaling=None,
                                             rope_parameters={"rope_type": "default",
                                                              "rope_theta": 5000000,
                                                              "mrope_interleaved": True,
                                                              "mrope_section": [4, 2, 2]}),
                 "qwen3_vl")
    q35 = ac.wrap(arch_gated.gated_ckpt(seed=2693, layers=1, layer_types=["full_attention"],
                                        head_dim=32, heads=2,
                                        rope_parameters={"rope_type": "default",
                                                         "rope_theta": 1e7,
                                                         "partial_rotary_factor": 0.25,
                                                         "mrope_section": [2, 1, 1],
                                                         "mrope_interleaved": True}),
                  "qwen3_5")
    gv = ac.wrap(arch_wrappers.glm4v_text(2694, "F32", "model.language_model."), "glm4v")
    # ERNIE-4.5-VL: the section in the config is [h, w, t]
    ernie_block = {"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [3, 3, 2]}
    fam = arch_families.fam_ckpt
    ev = ac.wrap(fam("ernie4_5_vl_moe_text", 2695, prefix="model.language_model.", hd=16, kv=None,
                     use_bias=True, bias=True, rope_theta=None, rope_parameters=ernie_block),
                 "ernie4_5_vl_moe")
    # as released flat: the text keys at the top level of the wrapper
    evf = ac.wrap(fam("ernie4_5_vl_moe_text", 2696, "BF16", prefix="model.", hd=None, _hd=8,
                      layers=1, rope_theta=None,
                      rope_parameters=dict(ernie_block, mrope_section=[1, 1, 2])),
                  "ernie4_5_vl_moe", text_key=False)
    tc = lambda c: c.config.get("text_config", c.config)  # noqa: E731

    def gated_ref(cfg, w, x, pos, layer, prefix, **_):
        return arch_gated.gated(cfg, w, x, pos, layer, prefix)

    def ernie_ref(cfg, w, x, pos, layer, prefix, **_):
        """Ernie4_5_VLMoeTextAttention: ERNIE 4.5's (biases when use_bias,
        adjacent pairs, theta 5e5, 4 kv heads by default), unrotated here."""
        return ac.attention(cfg, w, x, pos, layer, prefix, ac.heads_of(cfg, 4), 1e-5,
                            cfg.get("use_bias", False), rope=(5e5,), layout="pairs")
    return {
        "qwen2_5_vl": (q25, arch_wrappers.qwen2_vl_ref, "model.", tc(q25),
                       {"section": [2, 1, 1], "style": "chunked"}, (1e6, 8, 8, "half")),
        "qwen3_vl": (q3, arch_wrappers.qwen3_vl_ref, "model.language_model.", tc(q3),
                     {"section": [4, 2, 2], "style": "interleaved"}, (5e6, 16, 16, "half")),
        "qwen3_5": (q35, gated_ref, "model.language_model.", tc(q35),
                    {"section": [2, 1, 1], "style": "interleaved"}, (1e7, 32, 8, "half")),
        "glm4v": (gv, arch_wrappers.glm4v_ref, "model.language_model.", tc(gv),
                  {"section": [2, 1, 1], "style": "chunked"}, (1e4, 16, 8, "pairs")),
        "ernie4_5_vl": (ev, ernie_ref, "model.language_model.", tc(ev),
                        {"section": [2, 3, 3], "style": "ernie"}, (5e5, 16, 16, "pairs")),
        "ernie4_5_vl_flat_bf16": (evf, ernie_ref, "model.", dict(evf.config),
                                  {"section": [2, 1, 1], "style": "ernie"}, (5e5, 8, 8, "pairs")),
    }


def _apply(srv, name, x, pos, extra=None):
    body = {"model": name, "embeddings": x.tolist(), "return": ["q", "k"]}
    body.update({"positions": pos} if extra is None else extra)
    return srv.request("/apply", body)


def _vision(C, srv, name, case):
    """q, k of vision triples against the restatement."""
    ckpt, ref, prefix, cfg, mrope, (base, hd, rot, layout) = case
    w = ckpt.weights()
    x = RNG.standard_normal((len(TRIPLES), cfg["hidden_size"])).astype(np.float32)
    st, r = _apply(srv, name, x, TRIPLES)
    if not C.check(st == 200, f"{name} /apply vision triples: status {st} {r}"):
        return
    flat = ref(cfg, w, x.astype(np.float64), np.zeros(len(TRIPLES), int), 0, prefix)
    for k in ("q", "k"):
        want = mrope_refs.rope_ref(flat[k], TRIPLES, base, hd, rot, layout, mrope["style"],
                                   mrope["section"])
        C.close(f"{name} /apply: {k} of vision triples ({mrope['style']} {mrope['section']})",
                np.asarray(r[k]), want, rel=1e-5)


def _text_bits(C, srv, name, case):
    """Text triples and mm_layout against 1-D positions and the echo."""
    cfg = case[3]
    x = RNG.standard_normal((8, cfg["hidden_size"])).astype(np.float32)
    pos = [0, 1, 2, 5, 9, 40, 300, 2000]
    _, one = _apply(srv, name, x, pos)
    st, three = _apply(srv, name, x, [[p, p, p] for p in pos])
    C.check(st == 200 and three.get("q") == one.get("q") and three.get("k") == one.get("k"),
            f"{name} /apply: text triples = 1-D positions, bit for bit ({st})")
    st, lay = _apply(srv, name, x, None, {"mm_layout": LAYOUT, "mm_rule": "qwen"})
    if not C.check(st == 200 and "positions" in lay, f"{name} /apply mm_layout: {st} {lay}"):
        return
    _, exp = _apply(srv, name, x, lay["positions"])
    C.check(exp.get("q") == lay["q"] and exp.get("k") == lay["k"],
            f"{name} /apply mm_layout = its echoed positions, bit for bit")
    C.check(lay["positions"][2] == [2, 2, 2] and lay["positions"][3] == [2, 2, 3],
            f"{name} mm_layout: the image's first tokens at [2, 2, 2], [2, 2, 3]: "
            f"{lay['positions'][:4]}")


def _info(C, models, cases):
    for name, case in cases.items():
        got = models.get(name, {}).get("params", {}).get("mrope")
        C.check(got == case[4], f"/info {name}: params.mrope {case[4]}, got {got}")


def _ernie_refused(C, root):
    """Ernie4_5_VLMoeTextRotaryEmbedding raises for a rope type other than
    default; its h and w chunks are stacked, so they must be equal."""
    t = arch_families.fam_ckpt("ernie4_5_vl_moe_text", 2697, prefix="model.language_model.",
                               hd=16, kv=None, layers=1, rope_theta=None,
                               rope_parameters={"rope_type": "default", "rope_theta": 5e5,
                                                "mrope_section": [3, 3, 2]})
    text = t.config
    yarn = dict(text, rope_parameters={"rope_type": "yarn", "rope_theta": 5e5, "factor": 2.0,
                                       "original_max_position_embeddings": 64,
                                       "mrope_section": [3, 3, 2]})
    uneven = dict(text, rope_parameters={"rope_type": "default", "rope_theta": 5e5,
                                         "mrope_section": [4, 2, 2]})
    w = ac.wrap(t, "ernie4_5_vl_moe")
    bad = [("ernie4_5_vl yarn", w, ["rope type 'yarn'", "default rope type"],
            dict(w.config, text_config=yarn), 0),
           ("ernie4_5_vl h != w", w, ["mrope_section [2, 4, 2] (as [t, h, w])", "h = w"],
            dict(w.config, text_config=uneven), 0)]
    ac.refused(C, root, "mrl", bad)


def mrope_loaded_checks(root, C):
    cases = _cases()
    args = []
    for name, case in cases.items():
        d = f"{root}/mrl_{name}"
        case[0].write(d)
        args += ["--model", f"{name}={d}"]
    with Server(args) as srv:
        for name, case in cases.items():
            _vision(C, srv, name, case)
            _text_bits(C, srv, name, case)
        st, info = srv.request("/info")
        if C.check(st == 200, f"mrope loaded /info: {st}"):
            _info(C, {m["name"]: m for m in info["models"]}, cases)
        C.check(srv.stop() == 0, "mrope loaded: server exits 0")
        C.check(sanitizer_clean(srv.stderr()), f"mrope loaded stderr: {srv.stderr()[-600:]}")
    _ernie_refused(C, root)

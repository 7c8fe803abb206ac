"""Positions in more than one dimension (contract 1.3) over HTTP against
numpy restatements: params.mrope on /encode and /apply (the chunked,
interleaved and ernie slot rules of Hugging Face's
apply_multimodal_rotary_pos_emb, apply_interleaved_mrope and ERNIE's
pre-permuted frequencies, both pair layouts, partial rotary); a text-only
request gives the bits of 1-D RoPE; mm_layout under both rules
(Qwen's get_rope_index and transformers >= 5.3) with the values Hugging
Face's executed get_rope_index gives for the worked case; base64
positions; and each refusal names its field."""
import base64

import numpy as np

from harness import Server, sanitizer_clean


def slot_axes(style, section, half):
    """The component (0 t, 1 h, 2 w) of each frequency slot, restated the
    way each Hugging Face function builds it."""
    s_t, s_h, s_w = section
    if style == "chunked":  # cos.split(section)[i] takes row i % 3
        return np.repeat([0, 1, 2], section)[:half]
    axes = np.zeros(half, int)
    if style == "interleaved":  # freqs_t[..., offset:3*section[dim]:3] = freqs[dim]
        axes[1:3 * s_h:3] = 1
        axes[2:3 * s_w:3] = 2
        return axes
    axes[:2 * s_h] = np.tile([1, 2], s_h)  # ernie: h/w alternate, t last
    return axes


def rope_ref(x, pos3, base, head_dim, rotary, layout, style, section):
    """x [rows][d] rotated per head; pos3 [rows][3]."""
    x = np.asarray(x, np.float64)
    half = rotary // 2
    inv = 1.0 / base ** (np.arange(half) * 2.0 / rotary)
    axes = slot_axes(style, section, half) if style else np.zeros(half, int)
    theta = np.asarray(pos3, np.float64)[:, axes] * inv
    c, s = np.cos(theta), np.sin(theta)
    out = x.copy()
    for h0 in range(0, x.shape[1], head_dim):
        if layout == "half":
            a, b = h0 + np.arange(half), h0 + half + np.arange(half)
        else:
            a, b = h0 + 2 * np.arange(half), h0 + 2 * np.arange(half) + 1
        out[:, a] = x[:, a] * c - x[:, b] * s
        out[:, b] = x[:, b] * c + x[:, a] * s
    return out


def layout_positions(segments, merge, rule, tps=2.0):
    """[tokens][3] of a layout: every segment starts at 1 + the largest
    position so far ("qwen"), or text advances by its length and a vision
    block by max(h, w) // merge ("hf")."""
    out, start, top = [], 0, -1
    for seg in segments:
        if rule == "qwen":
            start = top + 1
        if "text" in seg:
            out += [[start + k] * 3 for k in range(seg["text"])]
            top = max(top, start + seg["text"] - 1)
            start += seg["text"]
            continue
        t, h, w = seg.get("image") or seg["video"]
        step = int(tps * int(seg["seconds_per_grid"])) if "seconds_per_grid" in seg else 1
        block = [[start + f * step, start + r, start + c]
                 for f in range(t) for r in range(h // merge) for c in range(w // merge)]
        out += block
        top = max(top, max(max(p) for p in block))
        start += max(h, w) // merge
    return out


def spread(pos, mask):
    """A layout's positions over a row's kept slots; pads get [0, 0, 0]."""
    it = iter(pos)
    return [next(it) if m else [0, 0, 0] for m in mask]


# The worked case of the research notes (G3): [text 3][image 1x4x6][text 2]
# [video 3x4x4][text 2], merge 2, left pad 2. Hugging Face's get_rope_index
# executed on it (Qwen2-VL and Qwen2.5-VL at 25 tokens a second, 1 s a grid;
# the current one and the one before transformers 5.3) gives these last two
# text positions.
WORKED = [{"text": 3}, {"image": [1, 4, 6]}, {"text": 2}, {"video": [3, 4, 4]}, {"text": 2}]
HF_LAST_TEXT = {("qwen2", "hf"): [10, 11], ("qwen2", "qwen"): [11, 12],
                ("qwen2.5", "hf"): [10, 11], ("qwen2.5", "qwen"): [59, 60]}


def expect_refusal(C, what, answer, status, field):
    """answer (status, body) is the error `status` naming `field`."""
    st, r = answer
    C.check(st == status and r.get("error", {}).get("field") == field,
            f"{what}: {status} naming {field}, got {st} {r}")


def _encode_checks(srv, C, rng):
    """/encode: every style and layout, partial rotary, against numpy."""
    d = 32
    x = rng.standard_normal((2, 6, d)).astype(np.float32)
    pos3 = rng.integers(0, 200, (2, 6, 3))
    pos3[0, 1] = [7, 7, 7]
    for style in ("chunked", "interleaved", "ernie"):
        for layout in ("half", "interleaved"):
            for rotary, section in ((16, [4, 2, 2]), (12, [2, 2, 2])):
                params = {"head_dim": 16, "rotary_dim": rotary, "layout": layout, "base": 1000,
                          "mrope": {"section": section, "style": style}}
                st, r = srv.request("/encode", {"scheme": "rope", "params": params,
                                                "embeddings": x.tolist(),
                                                "positions": pos3.tolist()})
                label = f"mrope {style} {layout} rotary {rotary}"
                if not C.check(st == 200, f"{label}: status {st} {r}"):
                    continue
                want = rope_ref(x.reshape(-1, d), pos3.reshape(-1, 3), 1000.0, 16, rotary, layout,
                                style, section)
                C.close(label, np.array(r["encoded"]).reshape(-1, d), want)


def _text_bits(srv, C, rng):
    """Text tokens (t = h = w) give exactly the bits of 1-D RoPE, on /encode
    and on /apply with an inline model carrying mrope."""
    x = rng.standard_normal((5, 24)).astype(np.float32).tolist()
    pos = [0, 3, 1, 70000, 2]
    for style in ("chunked", "interleaved", "ernie"):
        mrope = {"section": [4, 4, 4], "style": style}
        _, one = srv.request("/encode", {"scheme": "rope", "embeddings": x, "positions": pos})
        st, three = srv.request("/encode", {"scheme": "rope", "params": {"mrope": mrope},
                                            "embeddings": x,
                                            "positions": [[p, p, p] for p in pos]})
        C.check(st == 200 and one["encoded"] == three["encoded"],
                f"/encode mrope {style}: text triples = 1-D rope, bit for bit")
        w = rng.standard_normal((24, 24)).round(3).tolist()
        model = {"d_model": 24, "heads": 2, "head_dim": 12, "scheme": "rope",
                 "params": {"rotary_dim": 8, "mrope": {"section": [2, 1, 1], "style": style}},
                 "weights": {"wq": w, "wk": w, "wv": w}}
        plain = dict(model, params={"rotary_dim": 8})
        _, a = srv.request_raw("/apply", {"model": plain, "embeddings": x, "positions": pos})
        st, b = srv.request_raw("/apply", {"model": model, "embeddings": x, "positions": pos})
        C.check(st == 200 and a["q"] == b["q"] and a["k"] == b["k"],
                f"/apply inline model with mrope {style}: text = 1-D rope, bit for bit ({st})")
        st, c = srv.request_raw("/apply", {"model": model, "embeddings": x,
                                           "positions": [[p, p + 1, p + 2] for p in pos]})
        q = np.array(c.get("q", [[0]]), np.float64)
        z = np.array(x, np.float32).astype(np.float64) @ np.array(w, np.float32).astype(np.float64)
        want = rope_ref(z, [[p, p + 1, p + 2] for p in pos], 10000.0, 12, 8, "half", style,
                        [2, 1, 1])
        C.close(f"/apply inline mrope {style}: q of vision triples", q, want, rel=1e-5)


def _layout_checks(srv, C, rng):
    """mm_layout under both rules: the echoed positions, the research's
    values, and the answer equal to explicit positions bit for bit."""
    mask = [[0, 0] + [1] * 25, [1] * 25 + [0, 0]]
    x = rng.standard_normal((2, 27, 24)).astype(np.float32).tolist()
    mrope = {"section": [4, 4, 4], "style": "chunked"}
    for model, spg, tps in (("qwen2", None, None), ("qwen2.5", 1, 25)):
        segs = [dict(s) for s in WORKED]
        if spg is not None:
            segs[3]["seconds_per_grid"] = spg
        params = {"mrope": mrope}
        if tps:
            params["tokens_per_second"] = tps
        for rule in ("qwen", "hf"):
            body = {"scheme": "rope", "params": params, "embeddings": x, "mm_layout": segs,
                    "mm_rule": rule, "merge": 2, "attention_mask": mask}
            st, r = srv.request("/encode", body)
            label = f"mm_layout {model} {rule}"
            if not C.check(st == 200, f"{label}: status {st} {r}"):
                continue
            ref = layout_positions(segs, 2, rule, tps or 2)
            want = [spread(ref, m) for m in mask]
            C.check(r["positions"] == want, f"{label}: positions = the numpy restatement")
            C.check([p[0] for p in r["positions"][0][-2:]] == HF_LAST_TEXT[(model, rule)],
                    f"{label}: last text at {HF_LAST_TEXT[(model, rule)]} as Hugging Face's "
                    f"get_rope_index gives")
            explicit = {k: v for k, v in body.items() if k not in ("mm_layout", "mm_rule", "merge",
                                                                   "attention_mask")}
            explicit["positions"] = r["positions"]
            _, e = srv.request("/encode", explicit)
            C.check(e.get("encoded") == r["encoded"],
                    f"{label}: equals the same request with its positions, bit for bit")


def _base64_checks(srv, C, rng):
    x = rng.standard_normal((4, 16)).astype(np.float32).tolist()
    pos3 = [[1, 2, 3], [4, 4, 4], [9, 0, 5], [6, 6, 7]]
    params = {"mrope": {"section": [4, 2, 2], "style": "interleaved"}}
    b64 = base64.b64encode(np.array(pos3, "<f4").tobytes()).decode()
    _, j = srv.request("/encode", {"scheme": "rope", "params": params, "embeddings": x,
                                   "positions": pos3})
    st, b = srv.request("/encode", {"scheme": "rope", "params": params, "embeddings": x,
                                    "positions": b64, "positions_shape": [4, 3]})
    C.check(st == 200 and b["encoded"] == j["encoded"],
            f"base64 positions [4, 3] = JSON triples ({st})")


def _error_checks(srv, C):
    x = [[0.5] * 16] * 4
    mr = {"mrope": {"section": [4, 2, 2]}}
    cases = [
        ({"params": {"mrope": {"section": [4, 2, 1]}}, "positions": [0, 1, 2, 3]}, 422,
         "params.mrope.section"),
        ({"params": {"mrope": {"section": [2, 4, 2], "style": "ernie"}}}, 422,
         "params.mrope.section"),
        ({"params": {"mrope": {"section": [4, 2]}}}, 422, "params.mrope.section"),
        ({"params": {"mrope": {"section": [4, 2, 2], "style": "zigzag"}}}, 400,
         "params.mrope.style"),
        ({"positions": [0, [1, 2, 3], 2, 3]}, 422, "positions"),
        ({"params": mr, "positions": [0, [1, 2], 2, 3]}, 400, "positions[1]"),
        ({"params": mr, "positions": [0, 1, 2]}, 422, "positions"),
        ({"params": mr, "positions": [0, -1, 2, 3]}, 422, "positions[1]"),
        ({"params": mr, "mm_layout": [{"text": 4}], "mm_rule": "qwen", "positions": [0, 1, 2, 3]},
         400, "positions"),
        ({"params": mr, "mm_layout": [{"text": 4}], "mm_rule": "qwen", "offset": 3}, 400,
         "offset"),
        ({"params": mr, "mm_layout": [{"text": 4}]}, 400, "mm_rule"),
        ({"params": mr, "mm_layout": [{"text": 2}, {"image": [1, 2, 3]}], "mm_rule": "qwen"}, 422,
         "mm_layout[1].image"),
        ({"params": mr, "mm_layout": [{"audio": 4}], "mm_rule": "qwen"}, 400, "mm_layout[0]"),
        ({"params": mr, "mm_layout": [{"text": 3}], "mm_rule": "hf"}, 422, "mm_layout"),
        ({"mm_layout": [{"text": 4}], "mm_rule": "hf"}, 422, "mm_layout"),
        ({"params": mr, "merge": 2}, 400, "merge"),
        ({"params": mr, "positions": [0, 1, 2, 3], "positions_shape": [4]}, 400,
         "positions_shape"),
    ]
    for extra, status, field in cases:
        body = dict({"scheme": "rope", "embeddings": x}, **extra)
        expect_refusal(C, f"refused {extra}", srv.request("/encode", body), status, field)
    expect_refusal(C, "/diagnose reads no rope claim (mrope or not) on a table",
                   srv.request("/diagnose", {"scheme": "rope", "params": mr, "table": x}), 400,
                   "scheme")
    expect_refusal(C, "/diagnose refuses vision triples without mrope",
                   srv.request("/diagnose", {"scheme": "rope", "positions": [[1, 2, 3]] * 4,
                                             "table": x}), 422, "positions")


def mrope_checks(root, C):
    """Runs every check above against a fresh server."""
    del root
    rng = np.random.default_rng(2026)
    with Server([]) as srv:
        _encode_checks(srv, C, rng)
        _text_bits(srv, C, rng)
        _layout_checks(srv, C, rng)
        _base64_checks(srv, C, rng)
        _error_checks(srv, C)
        C.check(srv.stop() == 0, "mrope server exits 0")
        C.check(sanitizer_clean(srv.stderr()), f"mrope server stderr clean: {srv.stderr()[-800:]}")

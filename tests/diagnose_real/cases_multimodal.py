"""Positions in more than one dimension, restated from public code in our
own words (see cases.py for the conventions):

- Qwen2-VL / Qwen2.5-VL's `get_rope_index` as Qwen wrote it (transformers
  <= 5.2: each text run starts one past the largest position so far) and as
  transformers >= 5.3 computes it (`get_vision_position_ids`, the start
  advancing by max(h, w) / merge after a vision block);
- `apply_multimodal_rotary_pos_emb` (Qwen2/2.5-VL: cos/sin split into
  section*2 chunks, chunk i taking component i % 3), Qwen3-VL's
  `apply_interleaved_mrope` (t everywhere, h at slots 1, 4, ... below
  3*s_h, w at 2, 5, ... below 3*s_w), their rotary embeddings' float32
  `inv_freq @ position_ids`;
- vLLM's MRotaryEmbedding (a [max_pos][rot/2] cos|sin cache indexed by each
  component, then the section picked per slot);
- llama.cpp's `rope_multi` (ggml's M-RoPE and IMROPE sectors over four
  position components, the fourth 0 for text, theta = p * base^(-2i/n)
  in float32, NeoX pairs);
- the vision 2-D ropes: Qwen2.5-VL's `VisionRotaryEmbedding` over block-major
  patch ids, Pixtral's row/column frequency ladders.

Each [executed] restatement was checked against Hugging Face's own
functions (transformers at c49429ed1f, and the file before c281a2de89 for
the <= 5.2 rule) run with torch in float64 in scratch space: the position
ids equal exactly, the rotated q/k to float32 rounding.

The ports' mistakes: the section reversed, Qwen3-VL's interleaved slots read
as chunked, image tokens given text positions, the other mm_rule after a
Qwen2.5-VL video, a Pixtral port with Qwen's ViT split.
"""
import numpy as np

from cases import F32, Case, inv_freq_f32, rotate_half_layout, x_of


# ------------------------------------------------------------ position ids
def rope_index(layout, merge, tokens_per_second, rule):
    """[T][3] positions of a segment list, as Qwen's get_rope_index walks it:
    ("text", n), ("image", t, h, w), ("video", t, h, w, seconds_per_grid).
    rule "qwen": every segment starts one past the largest id so far;
    rule "hf": a running start, +n after text, +max(h, w)/merge after
    vision. A video's frames are tokens_per_second * int(spg) apart."""
    rows, start, top = [], 0, -1
    for seg in layout:
        if rule == "qwen":
            start = top + 1
        if seg[0] == "text":
            ids = start + np.arange(seg[1])
            rows.append(np.stack([ids, ids, ids], 1))
            top = max(top, int(ids[-1]))
            start += seg[1]
            continue
        t, h, w = seg[1], seg[2] // merge, seg[3] // merge
        step = tokens_per_second * int(seg[4]) if seg[0] == "video" else 0
        tt, hh, ww = np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")
        block = np.stack([start + tt.ravel() * step, start + hh.ravel(), start + ww.ravel()], 1)
        rows.append(block)
        top = max(top, int(block.max()))
        start += max(h, w)
    return np.concatenate(rows).astype(np.int64)


def left_padded(pos3, pad):
    """Masked slots first, at [0, 0, 0] (position_ids start as zeros)."""
    return np.concatenate([np.zeros((pad, 3), np.int64), pos3])


# -------------------------------------------------------- the slot choice
def slot_component(style, section, half):
    """Which component (0 t, 1 h, 2 w) turns each of the half slots."""
    j = np.arange(half)
    if style == "chunked":
        return np.repeat([0, 1, 2], section)
    comp = np.zeros(half, np.int64)
    comp[(j % 3 == 1) & (j < 3 * section[1])] = 1
    comp[(j % 3 == 2) & (j < 3 * section[2])] = 2
    return comp


def hf_mrope_angles(pos3, rot, base, style, section):
    """[T][rot/2] float32 angles: each component's inv_freq @ position_ids
    (float32 products), the slot's component picked."""
    inv = inv_freq_f32(rot, base)
    per = pos3.astype(F32)[:, :, None] * inv[None, None, :]  # [T][3][half], float32
    comp = slot_component(style, section, rot // 2)
    return per[:, comp, np.arange(rot // 2)].astype(F32)


def hf_mrope_rotate(x, hd, rot, base, style, section, pos3):
    """q_embed = q*cos + rotate_half(q)*sin per head of hd (rotate-half on
    rot channels), with the multimodal angles."""
    ang = hf_mrope_angles(pos3, rot, base, style, section)
    cos, sin = np.cos(ang).astype(F32), np.sin(ang).astype(F32)
    return rotate_half_layout(x.reshape(x.shape[0], -1, hd), cos, sin, rot).reshape(x.shape)


def vllm_mrope_cache(pos3, rot, base, section, interleaved=False):
    """vLLM MRotaryEmbedding: cos/sin of a float32 [max_pos][rot/2] table
    indexed by each component, the section picked per slot: [T][rot/2]."""
    inv = inv_freq_f32(rot, base)
    table = (np.arange(int(pos3.max()) + 1, dtype=F32)[:, None] * inv[None, :]).astype(F32)
    cos_t, sin_t = np.cos(table).astype(F32), np.sin(table).astype(F32)
    comp = slot_component("interleaved" if interleaved else "chunked", section, rot // 2)
    cols = np.arange(rot // 2)
    return cos_t[pos3[:, comp], cols], sin_t[pos3[:, comp], cols]


def llamacpp_rope_multi(x, hd, base, sections, pos4, imrope):
    """ggml rope_multi (NeoX pairs i, i + hd/2): sector s of pair i turns by
    pos4's component: IMROPE h where s%3 == 1 and s < 3*s1, w where
    s%3 == 2 and s < 3*s2, t where s%3 == 0 and s < 3*s0, else the fourth;
    MROPE by ranges. theta = p * powf(base^(-2/hd), i), float32."""
    half = hd // 2
    scale = F32(base) ** F32(-2.0 / hd)
    total = sum(sections)
    comp = np.empty(half, np.int64)
    for i in range(half):
        s = i % total
        if imrope:
            comp[i] = (1 if s % 3 == 1 and s < 3 * sections[1] else
                       2 if s % 3 == 2 and s < 3 * sections[2] else
                       0 if s % 3 == 0 and s < 3 * sections[0] else 3)
        else:
            edges = np.cumsum(sections)
            comp[i] = int(np.searchsorted(edges, s, side="right"))
    powers = np.array([F32(scale) ** F32(i) for i in range(half)], F32)
    theta = (pos4[:, comp].astype(F32) * powers[None, :]).astype(F32)
    cos, sin = np.cos(theta).astype(F32), np.sin(theta).astype(F32)
    return rotate_half_layout(x.reshape(x.shape[0], -1, hd), cos, sin, hd).reshape(x.shape)


# ---------------------------------------------------------- vision 2-D rope
def qwen_vit_ids(h, w, merge):
    """Qwen2.5-VL rot_pos_emb: (row, col) of each patch, block-major over
    merge x merge blocks."""
    hp = np.arange(h)[:, None].repeat(w, 1).reshape(h // merge, merge, w // merge, merge)
    wp = np.arange(w)[None, :].repeat(h, 0).reshape(h // merge, merge, w // merge, merge)
    hp, wp = hp.transpose(0, 2, 1, 3).ravel(), wp.transpose(0, 2, 1, 3).ravel()
    return np.stack([hp, wp], 1)


def qwen_vit_rotate(x, hd, ids, base=10000.0):
    """VisionRotaryEmbedding(hd/2): inv_freq over hd/2, angles [row*f, col*f]
    (hd/2 of them), duplicated, rotate-half over the head; float32."""
    inv = inv_freq_f32(hd // 2, base)
    ang = np.concatenate([(ids[:, :1].astype(F32) * inv).astype(F32),
                          (ids[:, 1:].astype(F32) * inv).astype(F32)], 1)
    cos, sin = np.cos(ang).astype(F32), np.sin(ang).astype(F32)
    return rotate_half_layout(x.reshape(x.shape[0], -1, hd), cos, sin, hd).reshape(x.shape)


def pixtral_rotate(x, hd, ids, base=10000.0):
    """Pixtral's 2-D rope: one ladder base^(-2i/hd); rows take the even
    rungs, columns the odd ones, [rows | cols] duplicated, rotate-half."""
    inv = inv_freq_f32(hd, base)
    ang = np.concatenate([(ids[:, :1].astype(F32) * inv[0::2]).astype(F32),
                          (ids[:, 1:].astype(F32) * inv[1::2]).astype(F32)], 1)
    cos, sin = np.cos(ang).astype(F32), np.sin(ang).astype(F32)
    return rotate_half_layout(x.reshape(x.shape[0], -1, hd), cos, sin, hd).reshape(x.shape)


# ------------------------------------------------------------------ checks
def finding(answer, code):
    return next((f for f in answer.get("findings", []) if f["code"] == code), None)


def expect(code, **want):
    """The finding `code`'s evidence holds `want`, and best is what /encode
    takes for a multimodal claim (params.mrope with triples, or rope2d)."""
    def check(answer):
        f = finding(answer, code)
        if f is None:
            return None
        for key, value in want.items():
            if f["evidence"].get(key) != value:
                return f"evidence.{key} {str(f['evidence'].get(key))[:200]}, want {str(value)[:200]}"
        return None
    return check


def body_of(x, y, params, **claim):
    body = {"scheme": "rope", "params": params, "embeddings": x.astype(F32).tolist(),
            "encoded": y.astype(F32).tolist()}
    body.update(claim)
    return body


# ------------------------------------------------------------------- cases
VIDEO_LAYOUT = [("text", 3), ("image", 1, 4, 6), ("text", 2), ("video", 3, 4, 4, 1.0),
                ("text", 2)]
VIDEO_MM = [{"text": 3}, {"image": [1, 4, 6]}, {"text": 2},
            {"video": [3, 4, 4], "seconds_per_grid": 1}, {"text": 2}]


def qwen25_cases():
    """Qwen2.5-VL: head 128, section [16, 24, 24], theta 1e6, 25 tokens per
    second; the worked layout with two pads on the left."""
    hd, base, sec, tps, pad = 128, 1e6, [16, 24, 24], 25, 2
    qwen = left_padded(rope_index(VIDEO_LAYOUT, 2, tps, "qwen"), pad)
    hf = left_padded(rope_index(VIDEO_LAYOUT, 2, tps, "hf"), pad)
    T = len(qwen)
    x = x_of(T, 2 * hd, 4101)
    mask = [0] * pad + [1] * (T - pad)
    params = {"head_dim": hd, "base": base, "tokens_per_second": tps,
              "mrope": {"style": "chunked", "section": sec}}
    claim = dict(mm_layout=VIDEO_MM, merge=2, attention_mask=mask)
    y_qwen = hf_mrope_rotate(x, hd, hd, base, "chunked", sec, qwen)
    y_hf = hf_mrope_rotate(x, hd, hd, base, "chunked", sec, hf)
    out = [
        Case("qwen25vl_get_rope_index_qwen", "Qwen's get_rope_index (transformers <= 5.2) and "
             "apply_multimodal_rotary_pos_emb on [text 3][image][text 2][video][text 2], left "
             "pad 2 [executed]", body_of(x, y_qwen, params, mm_rule="qwen", **claim), "match"),
        Case("qwen25vl_get_rope_index_hf", "transformers >= 5.3 get_rope_index "
             "(get_vision_position_ids) on the same [executed]",
             body_of(x, y_hf, params, mm_rule="hf", **claim), "match"),
        Case("qwen25vl_hf_53_claimed_qwen", "a port on transformers >= 5.3 checked against "
             "Qwen's rule: the text after the video at 10, 11, not 59, 60 [executed]",
             body_of(x, y_hf, params, mm_rule="qwen", **claim), "explained",
             ["positions_mismatch"],
             check=expect("positions_mismatch", pattern="mm_rule", mm_rule="hf",
                          positions=[hf.tolist()])),
        Case("qwen25vl_qwen_claimed_hf_53", "Qwen's own rule checked against transformers "
             ">= 5.3 [executed]", body_of(x, y_qwen, params, mm_rule="hf", **claim),
             "explained", ["positions_mismatch"],
             check=expect("positions_mismatch", pattern="mm_rule", mm_rule="qwen",
                          positions=[qwen.tolist()])),
    ]
    # a Qwen2-VL get_rope_index reused for Qwen2.5-VL: frames 1 apart, not
    # tokens_per_second * second_per_grid (Qwen2-VL has no temporal spacing)
    unspaced = left_padded(rope_index(VIDEO_LAYOUT, 2, 1, "qwen"), pad)
    y_unspaced = hf_mrope_rotate(x, hd, hd, base, "chunked", sec, unspaced)
    out.append(Case("qwen25vl_frames_unspaced", "Qwen2-VL's rule on a Qwen2.5-VL video: frames "
                    "1 apart instead of 25 (HF <= 5.2 get_rope_index with tokens_per_second 1) "
                    "[executed]",
                    body_of(x, y_unspaced, params, mm_rule="qwen", **claim), "explained",
                    ["positions_mismatch"],
                    check=expect("positions_mismatch", pattern="other",
                                 positions=[unspaced.tolist()])))
    # the section reversed: [24, 24, 16] where the config says [16, 24, 24]
    y_rev = hf_mrope_rotate(x, hd, hd, base, "chunked", sec[::-1], qwen)
    out.append(Case("qwen25vl_section_reversed", "a port that splits cos/sin by the section "
                    "reversed ([24, 24, 16])",
                    body_of(x, y_rev, params, mm_rule="qwen", **claim), "explained",
                    ["mrope_mismatch"],
                    check=expect("mrope_mismatch", style="chunked", section=[24, 24, 16])))
    # image and video tokens given text positions: arange over the kept slots
    text_ids = np.concatenate([np.zeros(pad, np.int64), np.arange(T - pad)])
    y_text = hf_mrope_rotate(x, hd, hd, base, "chunked", sec, np.stack([text_ids] * 3, 1))
    out.append(Case("qwen25vl_vision_as_text", "a port that never calls get_rope_index: every "
                    "token at its index among the kept ones, t = h = w",
                    body_of(x, y_text, params, mm_rule="qwen", **claim), "explained",
                    ["mrope_mismatch"],
                    check=expect("mrope_mismatch", style="text", positions=[text_ids.tolist()])))
    # vLLM's [T][rot/2] cache of the same positions: match
    cos, sin = vllm_mrope_cache(qwen, hd, base, sec)
    out.append(Case("qwen25vl_vllm_cache", "vLLM MRotaryEmbedding: [T][rot/2] cos/sin per "
                    "component, section picked", {"scheme": "rope", "params": params,
                                                  "cos": cos.tolist(), "sin": sin.tolist(),
                                                  "mm_rule": "qwen", **claim}, "match"))
    return out


def qwen3vl_cases():
    """Qwen3-VL: head 128, section [24, 20, 20], theta 5e6, interleaved;
    videos as one-frame blocks with their timestamps as text."""
    hd, base, sec = 128, 5e6, [24, 20, 20]
    layout = [("text", 4), ("image", 1, 8, 6), ("text", 3), ("image", 1, 4, 4), ("text", 3),
              ("image", 1, 4, 4), ("text", 2)]
    mm = [{"text": 4}, {"image": [1, 8, 6]}, {"text": 3}, {"image": [1, 4, 4]}, {"text": 3},
          {"image": [1, 4, 4]}, {"text": 2}]
    pos = rope_index(layout, 2, 2, "hf")
    T = len(pos)
    x = x_of(T, hd, 4102)
    params = {"head_dim": hd, "base": base, "mrope": {"style": "interleaved", "section": sec}}
    y = hf_mrope_rotate(x, hd, hd, base, "interleaved", sec, pos)
    y_chunked = hf_mrope_rotate(x, hd, hd, base, "chunked", sec, pos)
    claim = dict(mm_layout=mm, merge=2, mm_rule="hf")
    out = [
        Case("qwen3vl_interleaved", "Qwen3-VL apply_interleaved_mrope on an image and two "
             "video frames [executed]", body_of(x, y, params, **claim), "match"),
        Case("qwen3vl_read_as_chunked", "a Qwen2-VL port reused for Qwen3-VL: the interleaved "
             "slots split as chunks", body_of(x, y_chunked, params, **claim), "explained",
             ["mrope_mismatch"],
             check=expect("mrope_mismatch", style="chunked", section=sec)),
        Case("qwen3vl_rule_agrees", "the same layout claimed with mm_rule qwen: images and "
             "one-frame blocks agree under both rules", body_of(x, y, params, **dict(
                 claim, mm_rule="qwen")), "match"),
    ]
    # llama.cpp IMROPE: four components, the fourth 0 for every token here
    pos4 = np.concatenate([pos, np.zeros((T, 1), np.int64)], 1)
    y_cpp = llamacpp_rope_multi(x, hd, base, sec + [0], pos4, imrope=True)
    out.append(Case("qwen3vl_llamacpp_imrope", "llama.cpp rope_multi IMROPE with sections "
                    "[24, 20, 20, 0]: slots 61 and 62 (h and w sectors past 3*s) turn by the "
                    "fourth component, 0, where HF turns them by t (an angle of at most "
                    "p * 5e6^(-122/128), 1e-4 rad at position 300)",
                    body_of(x, y_cpp, params, **claim), "match"))
    # the same deep into a conversation (every id + 4000): slots 61 and 62
    # now differ by ~1.7e-3 rad, a difference no known variant makes
    late = pos + 4000
    late4 = np.concatenate([late, np.zeros((T, 1), np.int64)], 1)
    y_late = llamacpp_rope_multi(x, hd, base, sec + [0], late4, imrope=True)
    out.append(Case("qwen3vl_llamacpp_imrope_late", "llama.cpp IMROPE as above at positions "
                    "past 4000 (explicit triples): slots 61, 62 unturned",
                    body_of(x, y_late, params, positions=late.tolist()), "unexplained"))
    return out


def llamacpp_mrope_cases():
    """llama.cpp MROPE (Qwen2-VL's sectors by range) on a Qwen2-VL image."""
    hd, base, sec = 64, 1e6, [8, 12, 12]
    layout = [("text", 5), ("image", 1, 6, 8), ("text", 4)]
    mm = [{"text": 5}, {"image": [1, 6, 8]}, {"text": 4}]
    pos = rope_index(layout, 2, 2, "qwen")
    T = len(pos)
    x = x_of(T, 2 * hd, 4103)
    pos4 = np.concatenate([pos, np.zeros((T, 1), np.int64)], 1)
    y = llamacpp_rope_multi(x, hd, base, sec + [0], pos4, imrope=False)
    params = {"head_dim": hd, "base": base, "mrope": {"style": "chunked", "section": sec}}
    y_swapped = llamacpp_rope_multi(x, hd, base, [12, 12, 8, 0], pos4, imrope=False)
    claim = dict(mm_layout=mm, merge=2, mm_rule="qwen")
    return [
        Case("llamacpp_mrope_image", "llama.cpp rope_multi MROPE, GLM-4.1V-sized section "
             "[8, 12, 12] on an image", body_of(x, y, params, **claim), "match"),
        Case("llamacpp_mrope_section_swapped", "a GGUF converted with the section in another "
             "order ([12, 12, 8])", body_of(x, y_swapped, params, **claim), "explained",
             ["mrope_mismatch"],
             check=expect("mrope_mismatch", style="chunked", section=[12, 12, 8])),
    ]


def rope2d_cases():
    hd = 32
    ids = qwen_vit_ids(8, 8, 2)
    x = x_of(len(ids), 2 * hd, 4104)
    y_vit = qwen_vit_rotate(x, hd, ids)
    grid = {"h": 8, "w": 8, "merge": 2}
    vit = {"variant": "qwen_vit", "head_dim": hd}
    rows = np.stack(np.meshgrid(np.arange(6), np.arange(6), indexing="ij"), -1).reshape(-1, 2)
    xp = x_of(len(rows), hd, 4105)
    y_pix = pixtral_rotate(xp, hd, rows)
    y_pix_as_vit = qwen_vit_rotate(xp, hd, rows)
    pix = {"variant": "pixtral", "head_dim": hd}

    def body(xx, yy, params, **claim):
        return dict(body_of(xx, yy, params, **claim), scheme="rope2d")
    return [
        Case("qwen25vl_vit_rot_pos_emb", "Qwen2.5-VL VisionRotaryEmbedding over rot_pos_emb's "
             "block-major patch ids [executed]", body(x, y_vit, vit, grid=grid), "match"),
        Case("pixtral_rope2d", "Pixtral's 2-D rope (rows on the even rungs, columns on the "
             "odd)", body(xp, y_pix, pix, positions=rows.tolist()), "match"),
        Case("pixtral_port_with_vit_split", "a Pixtral port that reuses Qwen's ViT rotary "
             "(a ladder over D/2 for rows and columns alike)",
             body(xp, y_pix_as_vit, pix, positions=rows.tolist()), "explained",
             ["rope2d_variant"], check=expect("rope2d_variant", variant="qwen_vit")),
    ]


def qkv_cases():
    """An inline Qwen2-VL-shaped attention (q_proj/k_proj/v_proj as x @ W.T,
    then apply_multimodal_rotary_pos_emb on q and k) on an image prompt;
    posenc's inline model takes wq as [d_model][out] (W.T)."""
    T_text, d, H, hd, sec = 4, 32, 2, 16, [4, 2, 2]
    layout = [("text", T_text), ("image", 1, 4, 6), ("text", 3)]
    mm = [{"text": T_text}, {"image": [1, 4, 6]}, {"text": 3}]
    pos = rope_index(layout, 2, 2, "qwen")
    T = len(pos)
    rng = np.random.default_rng(4106)
    x = x_of(T, d, 4107)
    w = {n: (rng.standard_normal((H * hd, d)) / 4).astype(F32) for n in "qkv"}
    model = {"d_model": d, "heads": H, "scheme": "rope",
             "params": {"head_dim": hd, "mrope": {"style": "chunked", "section": sec}},
             "weights": {"w" + n: w[n].T.tolist() for n in "qkv"}}
    proj = {n: (x @ w[n].T).astype(F32) for n in "qkv"}

    def arrays(style, positions):
        return {"q": hf_mrope_rotate(proj["q"], hd, hd, 1e4, style, sec, positions).tolist(),
                "k": hf_mrope_rotate(proj["k"], hd, hd, 1e4, style, sec, positions).tolist(),
                "v": proj["v"].tolist()}

    def body(subject):
        return dict({"model": model, "embeddings": x.tolist(), "mm_layout": mm,
                     "mm_rule": "qwen"}, **subject)
    hf = rope_index(layout, 2, 2, "hf")
    return [
        Case("qwen2vl_attention_qkv", "HF Qwen2-VL attention: q/k/v projections, "
             "apply_multimodal_rotary_pos_emb at get_rope_index's triples",
             body(arrays("chunked", pos)), "match"),
        Case("qwen2vl_attention_interleaved", "the same attention with Qwen3-VL's interleaved "
             "slots", body(arrays("interleaved", pos)), "explained", ["mrope_mismatch"],
             check=expect("mrope_mismatch", style="interleaved", section=sec)),
        Case("qwen2vl_attention_rule_agrees", "transformers >= 5.3 positions: an image only, "
             "where both rules agree", body(arrays("chunked", hf)), "match"),
    ]


def negative_cases():
    """What no known mistake explains, under a Qwen2.5-VL claim: noise, the
    right answer's rows shuffled, the right answer with noise at 1e-5 (a
    match) and at 1e-2 (no structural finding)."""
    hd, base, sec, tps = 128, 1e6, [16, 24, 24], 25
    pos = rope_index(VIDEO_LAYOUT, 2, tps, "qwen")
    T = len(pos)
    rng = np.random.default_rng(4108)
    x = x_of(T, hd, 4109)
    y = hf_mrope_rotate(x, hd, hd, base, "chunked", sec, pos)
    params = {"head_dim": hd, "base": base, "tokens_per_second": tps,
              "mrope": {"style": "chunked", "section": sec}}
    claim = dict(mm_layout=VIDEO_MM, merge=2, mm_rule="qwen")
    noise = rng.standard_normal(y.shape).astype(F32)
    return [
        Case("mm_noise", "random numbers under a Qwen2.5-VL claim",
             body_of(x, noise, params, **claim), "unexplained"),
        Case("mm_rows_shuffled", "the right answer with its tokens shuffled",
             body_of(x, y[rng.permutation(T)], params, **claim), "unexplained"),
        Case("mm_noise_1e-5", "the right answer with noise at 1e-5",
             body_of(x, y + F32(1e-5) * noise, params, **claim), "match"),
        Case("mm_noise_1e-2", "the right answer with noise at 1e-2",
             body_of(x, y + F32(1e-2) * noise, params, **claim), "unexplained"),
    ]


def all_cases():
    return (qwen25_cases() + qwen3vl_cases() + llamacpp_mrope_cases() + rope2d_cases() +
            qkv_cases() + negative_cases())

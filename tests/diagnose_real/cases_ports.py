"""Subjects a new user's port hands over, restated from public code in our
own words (see cases.py for the conventions): batches whose rows sit at
different positions, derived parameters at float32 rounding, learned
tables read after a prompt, LongRoPE's other factor list, [b][h][t][hd]
arrays without params, the llama3 band with its factors exchanged.

A case may carry `check(answer)`: the evidence a right answer must hold; a
string it returns says what the answer stated falsely (judged misleading).
"""
import base64

import numpy as np

from cases import (F32, Case, alibi_slopes, angles_f32, encoded_case, flat, heads,
                   inv_freq_f32, rope_hf, rotate_half_layout, x_of)


def finding(answer, code):
    return next((f for f in answer.get("findings", []) if f["code"] == code), None)


def expect_rows(code, rows, positions=None, pattern=None):
    """The finding `code` names `rows`, one positions list per row, and
    the pattern (a string when shared, else a list)."""
    def check(answer):
        f = finding(answer, code)
        if f is None:
            return None
        ev = f["evidence"]
        if ev.get("rows") != rows:
            return f"evidence.rows {ev.get('rows')}, want {rows}"
        if positions is not None and ev.get("positions") != positions:
            return f"evidence.positions {ev.get('positions')}, want {positions}"
        if pattern is not None and ev.get("pattern") != pattern:
            return f"evidence.pattern {ev.get('pattern')}, want {pattern}"
        return None
    return check


def batch_cases():
    """HF generate with a KV cache: each row of a batch decodes from its own
    cache position (position_ids = cache_position per row, or
    cumsum(mask) - 1 after a left-padded prompt), cos/sin [batch, seq, dim]."""
    T, hd = 16, 16
    inv = inv_freq_f32(hd, 10000.0)
    half = {"layout": "half", "head_dim": hd}

    def cache(pos):
        ang = angles_f32(pos, inv)
        return (np.concatenate([np.cos(ang)] * 2, 1).astype(F32),
                np.concatenate([np.sin(ang)] * 2, 1).astype(F32))

    out = []
    starts = [5, 9]
    rows = [cache(s + np.arange(T)) for s in starts]
    pos = [list(range(s, s + T)) for s in starts]
    rows_check = expect_rows("positions_mismatch", [0, 1], pos, "offset")

    def as_sent(answer):
        """worst.index and error_map index the [2][T][hd] cache as sent."""
        index = answer.get("claimed", {}).get("worst", {}).get("index", [])
        cos_map = np.asarray(answer.get("error_map", {}).get("cos", []))
        if len(index) != 3 or cos_map.shape != (2, T, hd):
            return f"worst.index {index}, error_map.cos shape {cos_map.shape}: want 3 axes"
        return rows_check(answer)
    out.append(Case("decode_rows_own_offsets", "HF generate with a KV cache: row 0 decodes from "
                    "position 5, row 1 from 9 (cache_position per row), claimed 0..T-1",
                    {"scheme": "rope", "params": half, "return_map": True,
                     "cos": np.stack([r[0] for r in rows]).tolist(),
                     "sin": np.stack([r[1] for r in rows]).tolist()},
                    "explained", ["positions_mismatch"], check=as_sent))
    # row 0 right, row 1 counted down (Transformer-XL's klen-1 .. 0)
    rows = [cache(np.arange(T)), cache(np.arange(T)[::-1].copy())]
    out.append(Case("batch_one_row_reversed", "a batch whose second row's position_ids were "
                    "built descending (arange(klen-1, -1, -1)), the first right",
                    {"scheme": "rope", "params": half,
                     "cos": np.stack([r[0] for r in rows]).tolist(),
                     "sin": np.stack([r[1] for r in rows]).tolist()},
                    "explained", ["positions_mismatch"],
                    check=expect_rows("positions_mismatch", [1],
                                      [list(range(T - 1, -1, -1))], "reversed")))
    # row 0 left-padded (pads at 1), row 1 all zero (a generate() bug)
    mask = np.ones(T, np.int64)
    mask[:4] = 0
    p0 = np.cumsum(mask) - 1
    p0[mask == 0] = 1
    rows = [cache(p0), cache(np.zeros(T))]
    out.append(Case("batch_mask_and_zero_rows", "row 0 left-padded (cumsum(mask)-1, pads at 1) "
                    "and row 1 all zero, both claimed 0..T-1",
                    {"scheme": "rope", "params": half,
                     "cos": np.stack([r[0] for r in rows]).tolist(),
                     "sin": np.stack([r[1] for r in rows]).tolist()},
                    "explained", ["positions_mismatch"],
                    check=expect_rows("positions_mismatch", [0, 1],
                                      [p0.tolist(), [0] * T], ["from_mask", "constant"])))
    return out


def float32_slack_cases():
    """Derived parameters that equal the claimed ones after float32 rounding."""
    out = []
    # 24 heads: a port of get_slopes that takes the extra heads at odd indices
    # of the 32-head sequence, computed with torch.pow in float32
    n, c = 24, 16
    start = 2.0 ** (-(2.0 ** -(np.log2(c) - 3)))
    first = (F32(start) ** np.arange(1, c + 1, dtype=F32)).astype(F32)
    start2 = 2.0 ** (-(2.0 ** -(np.log2(2 * c) - 3)))
    second = (F32(start2) ** np.arange(1, 2 * c + 1, dtype=F32)).astype(F32)
    wrong = np.concatenate([first, second[1::2][: n - c]])
    paper = alibi_slopes(n)
    differ = [h for h in range(n) if abs(wrong[h] - paper[h]) > 1e-6 * paper[h]]

    def heads_listed(answer):
        f = finding(answer, "alibi_slopes")
        if f and f["evidence"].get("heads") != differ:
            return f"evidence.heads {f['evidence'].get('heads')}, want {differ}"
        return None
    out.append(Case("alibi_extra_heads_odd_float32", "get_slopes for 24 heads with the extra "
                    "slopes taken at odd indices of the 32-head list, torch float32 pow",
                    {"scheme": "alibi", "params": {"heads": n}, "slopes": wrong.tolist()},
                    "explained", ["alibi_slopes"], check=heads_listed))
    # fairseq get_embedding (exp(-i ln(1e4)/(half-1)), float32) at wide tables
    for d in (256, 512):
        T, half = 40, d // 2
        emb = np.exp(np.arange(half, dtype=F32) * F32(-np.log(10000.0) / (half - 1))).astype(F32)
        ang = (np.arange(T, dtype=F32)[:, None] * emb).astype(F32)
        out.append(Case(f"fairseq_get_embedding_d{d}", f"fairseq get_embedding at d = {d} "
                        "(the half-1 denominator, float32), claimed the paper's split table",
                        {"scheme": "sinusoidal", "params": {"layout": "split"},
                         "table": np.concatenate([np.sin(ang), np.cos(ang)], 1).tolist()},
                        "explained", ["frequency_formula"], ["base_mismatch"]))
    # RoPE at head sizes 256 and 512 (Gemma's 256) with the tensor2tensor
    # exponent i/(half-1) in float32: the base is base^(d/(d-2)) to float32
    for hd in (256, 512):
        T = 24
        inv = np.exp(np.arange(hd // 2, dtype=F32) *
                     F32(-np.log(10000.0) / (hd // 2 - 1))).astype(F32)
        x = x_of(T, hd, 52)
        out.append(encoded_case(f"rope_half_minus_1_hd{hd}", f"a RoPE port at head_dim {hd} "
                                "with tensor2tensor's log-timescale exponent i/(half-1), float32",
                                x, rope_hf(x, hd, hd, 10000.0, np.arange(T), inv=inv),
                                {"layout": "half", "head_dim": hd}, "explained",
                                ["frequency_formula"], ["base_mismatch"]))
    return out


def learned_model(seed, d, rows, T):
    """A random learned table [rows][d], the inline model holding it, and
    embeddings [T][d]."""
    rng = np.random.default_rng(seed)
    table = (rng.standard_normal((rows, d)) * 0.1).astype(F32)
    model = {"d_model": d, "heads": 2, "scheme": "learned", "params": {},
             "weights": {"position_table": table.tolist()}}
    return table, model, rng.standard_normal((T, d)).astype(F32)


def learned_cases():
    """GPT-2 (HF GPT2Model): wpe(position_ids) with position_ids = past_length +
    arange(T) while decoding after a prompt; OPT offsets 2 (learned table
    of an inline model)."""
    T = 6
    wpe, model, x = learned_model(90, 16, 160, T)
    out = []
    for past in (100, 37):
        out.append(Case(f"gpt2_decode_after_{past}", f"GPT-2 decoding after a {past}-token "
                        "prompt: wpe rows past_length + arange(T), claimed from 0",
                        {"scheme": "learned", "model": model, "embeddings": x.tolist(),
                         "encoded": (x + wpe[past:past + T]).tolist()},
                        "explained", ["position_offset"]))
    order = np.array([3, 1, 4, 1, 5, 9])
    out.append(Case("learned_rows_any_order", "a learned table read at position_ids "
                    "[3, 1, 4, 1, 5, 9] (ids from another batch row), claimed 0..5",
                    {"scheme": "learned", "model": model, "embeddings": x.tolist(),
                     "encoded": (x + wpe[order]).tolist()},
                    "explained", ["positions_mismatch"]))
    return out


def longrope_lists(rd, orig, seed, short_span, long_span, factor=4.0):
    """A LongRoPE claim of rd/2 factors per list (short ones near 1, long
    ones rising), and its attention factor sqrt(1 + ln(s)/ln(orig))."""
    rng = np.random.default_rng(seed)
    short = (1.0 + rng.uniform(0, short_span, rd // 2)).round(3)
    long_ = (1.0 + np.linspace(0, long_span, rd // 2)).round(3)
    att = np.sqrt(1 + np.log(factor) / np.log(orig))
    sc = {"type": "longrope", "short_factor": short.tolist(), "long_factor": long_.tolist(),
          "factor": factor, "original_max_position_embeddings": orig}
    return short, long_, att, sc


def longrope_cases():
    """Phi-3 (HF _compute_longrope_parameters): inv_freq / ext_factors,
    long_factor when seq_len > original_max_position_embeddings, else
    short_factor; cos/sin times sqrt(1 + ln(s)/ln(orig))."""
    T, d, hd, orig = 40, 64, 32, 32
    short, long_, att, sc = longrope_lists(hd, orig, 60, 0.5, 30)
    x = x_of(T, d, 61)
    base_inv = inv_freq_f32(hd, 10000.0)
    out = []
    for n, lst, name in ((T, short, "short_above"), (24, long_, "long_below")):
        inv = (base_inv / lst.astype(F32)).astype(F32)
        y = rope_hf(x[:n], hd, hd, 10000.0, np.arange(n), attention=att, inv=inv)
        out.append(encoded_case(f"longrope_{name}", "a Phi-3 port that picks the factor list "
                                f"the other way round ({name.replace('_', ' ')} the original "
                                "context)", x[:n], y, {"layout": "half", "head_dim": hd,
                                                       "scaling": sc},
                                "explained", ["scaling_mismatch"]))
    return out


def head_size_cases():
    """q.view(b, t, h, hd).transpose(1, 2) handed over with axes bhtd and no
    params: the head size is the last axis."""
    T, hd, h, b = 12, 16, 2, 2
    x = np.random.default_rng(71).standard_normal((b, T, h * hd)).astype(F32)
    y = np.stack([rope_hf(x[i], hd, hd, 10000.0, np.arange(T)) for i in range(b)])
    bhtd = lambda a: a.reshape(b, T, h, hd).transpose(0, 2, 1, 3)  # noqa: E731
    out = [Case("torch_bhtd_no_params", "HF apply_rotary_pos_emb on [b, h, t, hd], sent with "
                "axes bhtd and no params", {"scheme": "rope", "axes": "bhtd",
                                            "embeddings": bhtd(x).tolist(),
                                            "encoded": bhtd(y).tolist()}, "match")]
    # a port that splits 4 heads of 8 where the model has 2 of 16: base64
    Tn, d = 24, 32
    xs = x_of(Tn, d, 72)
    ys = rope_hf(xs, 8, 8, 10000.0, np.arange(Tn))

    def b64(a):
        return base64.b64encode(np.ascontiguousarray(a, "<f4").tobytes()).decode()
    out.append(Case("halved_heads_base64", "rotation per head of 8 where the claim has heads of "
                    "16 (num_heads doubled), arrays in base64",
                    {"scheme": "rope", "params": {"layout": "half", "head_dim": 16},
                     "encoding": "base64", "embeddings": b64(xs), "embeddings_shape": [Tn, d],
                     "encoded": b64(ys), "encoded_shape": [Tn, d]},
                    "explained", ["head_dim_mismatch"], ["base_mismatch", "frequency_formula",
                                                         "rotary_dim_mismatch"]))
    yd = rope_hf(xs, 32, 32, 10000.0, np.arange(Tn))
    out.append(encoded_case("doubled_head_size", "rotation per head of 32 where the claim has "
                            "heads of 16 (num_heads halved in the port)", xs, yd,
                            {"layout": "half", "head_dim": 16}, "explained",
                            ["head_dim_mismatch"], ["base_mismatch", "frequency_formula",
                                                    "rotary_dim_mismatch"]))
    out.append(encoded_case("halved_heads_json", "the same in JSON", xs, ys,
                            {"layout": "half", "head_dim": 16}, "explained", ["head_dim_mismatch"],
                            ["base_mismatch", "frequency_formula", "rotary_dim_mismatch"]))
    return out


def llama3_inv(base, hd, factor, low, high, orig):
    """HF _compute_llama3_parameters in float64, the result in float32:
    wavelengths past orig/low divided by factor, those under orig/high
    kept, a linear blend in 1/wavelength between."""
    inv = inv_freq_f32(hd, base).astype(np.float64)
    wl = 2 * np.pi / inv
    smooth = (orig / wl - low) / (high - low) if high != low else 0.0 * wl
    inv_l = np.where(wl > orig / low, inv / factor, inv)
    medium = (wl >= orig / high) & (wl <= orig / low)
    return np.where(medium, (1 - smooth) * inv_l / factor + smooth * inv_l, inv_l).astype(F32)


def llama3_band_cases():
    """HF _compute_llama3_parameters with low_freq_factor and high_freq_factor
    exchanged in the port (low_freq_wavelen = orig/high, ...): every
    wavelength past orig/4 divided by the factor, no smoothed band. Then
    configs whose band parameters differ from the claim's: torchtune's
    Llama3ScaledRoPE once fixed factor 8 where Llama 3.2 has 32; a
    fine-tune's band (low 2, high 8); an original context of 4096 and
    another band at once; the claim's band on another original context."""
    T, d, hd = 48, 64, 32
    x = x_of(T, d, 81)
    inv = inv_freq_f32(hd, 500000.0).astype(np.float64)
    orig, factor, low, high = 64, 8.0, 1.0, 4.0
    wl = 2 * np.pi / inv
    lw, hw = orig / high, orig / low  # exchanged
    smooth = (orig / wl - high) / (low - high)
    inv_l = np.where(wl > lw, inv / factor, inv)
    medium = (wl >= hw) & (wl <= lw)
    inv_l = np.where(medium, (1 - smooth) * inv_l / factor + smooth * inv_l, inv_l).astype(F32)
    sc = {"type": "llama3", "factor": factor, "low_freq_factor": low,
          "high_freq_factor": high, "original_max_position_embeddings": orig}
    y = rope_hf(x, hd, hd, 500000.0, np.arange(T), inv=inv_l)
    out = [encoded_case("llama3_band_factors_exchanged", "a Llama 3.1 port with "
                        "low_freq_factor and high_freq_factor exchanged",
                        x, y, {"layout": "half", "head_dim": hd, "base": 500000.0,
                               "scaling": sc}, "explained", ["scaling_mismatch"])]
    hd = 64
    x = x_of(T, 2 * hd, 82)
    claim = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    subjects = [
        ("llama32_factor_32_claimed_8", "Llama 3.2's rope_scaling (factor 32) where the port "
         "keeps Llama 3.1's 8 (torchtune's Llama3ScaledRoPE before scale_factor)",
         dict(claim, factor=32.0)),
        ("llama3_band_low2_high8", "a llama3 band with low_freq_factor 2 and high_freq_factor "
         "8, claimed with 1 and 4", dict(claim, low_freq_factor=2.0, high_freq_factor=8.0)),
        ("llama3_band_other_orig_and_band", "original context 4096, low 1.5, high 6, factor "
         "16, claimed as Llama 3.1's", dict(claim, factor=16.0, low_freq_factor=1.5,
                                            high_freq_factor=6.0,
                                            original_max_position_embeddings=4096)),
        ("llama3_band_narrow", "a narrow band (low 3, high 4), claimed with 1 and 4",
         dict(claim, low_freq_factor=3.0)),
        ("llama3_band_wide_head_128", "heads of 128 (seven frequencies in the band): low 0.5, "
         "high 5, claimed with 1 and 4", dict(claim, low_freq_factor=0.5, high_freq_factor=5.0)),
        ("llama3_band_narrow_head_128", "heads of 128, a band of low 3 and high 4, factor 4",
         dict(claim, low_freq_factor=3.0, factor=4.0)),
    ]
    for name, source, sub in subjects:
        hd = 128 if "128" in name else 64
        x = x_of(T, 2 * hd, 82)
        inv = llama3_inv(500000.0, hd, sub["factor"], sub["low_freq_factor"],
                         sub["high_freq_factor"], sub["original_max_position_embeddings"])
        y = rope_hf(x, hd, hd, 500000.0, np.arange(T), inv=inv)
        params = {"layout": "half", "head_dim": hd, "base": 500000.0, "scaling": claim}
        out.append(encoded_case(name, source, x, y, params, "explained", ["scaling_mismatch"]))
        out[-1].check = reproduces_llama3(sub, hd)
    return out


def reproduces_llama3(sub, hd):
    """A check: best's llama3 parameters give the subject's frequencies
    (float32 rounding apart), and the finding's message names them."""
    def check(answer):
        sc = (answer.get("best") or {}).get("params", {}).get("scaling") or {}
        if sc.get("type") != "llama3":
            return f"best scaling {sc.get('type')}, want llama3"
        got = llama3_inv(500000.0, hd, sc["factor"], sc["low_freq_factor"],
                         sc["high_freq_factor"], sc["original_max_position_embeddings"])
        want = llama3_inv(500000.0, hd, sub["factor"], sub["low_freq_factor"],
                          sub["high_freq_factor"], sub["original_max_position_embeddings"])
        if np.max(np.abs(got / want - 1)) > 1e-5:
            return f"best scaling {sc} gives other frequencies than {sub}"
        return None
    return check


def low_precision_cases():
    """Half-precision RoPE computed in orders nobody emulates exactly:
    HF's inv_freq buffer cast with model.to(torch.bfloat16) and then used in
    a float32 phase (t.float() @ inv_freq.float()); a port computing
    1 / base ** (arange(0, d, 2, dtype=bfloat16) / d) entirely in bfloat16
    (a bfloat16 power of bfloat16 operands), angles and cos/sin in bfloat16;
    the same in float16. The error grows with position."""
    T, d, hd = 64, 64, 32
    x = x_of(T, d, 101)
    pos = np.arange(T)
    half = {"layout": "half", "head_dim": hd}
    exps = np.arange(0, hd, 2, dtype=F32) / F32(hd)
    out = []
    inv_bf = bf16(inv_freq_f32(hd, 10000.0))  # the buffer after .to(bfloat16)
    out.append(encoded_case("inv_freq_cast_bf16_float32_phase", "HF rotary inv_freq buffer "
                            "cast to bfloat16 by model.to(), then a float32 phase and cos/sin",
                            x, rope_hf(x, hd, hd, 10000.0, pos, inv=inv_bf), half, "explained",
                            ["low_precision"]))
    for name, rnd in (("bfloat16", bf16), ("float16", lambda a: np.asarray(a, F32).astype(
            np.float16).astype(F32))):
        base = rnd(np.full(hd // 2, 10000.0, F32))
        inv = rnd(F32(1.0) / rnd(np.power(base, rnd(exps))))
        ang = rnd(rnd(pos.astype(F32))[:, None] * inv[None, :])
        c, sn = rnd(np.cos(ang)), rnd(np.sin(ang))
        y = flat(rotate_half_layout(heads(x, hd), c, sn, hd))
        out.append(encoded_case(f"rope_all_{name}_power_order", f"a port computing "
                                f"1/base**(arange/d) in {name} (power of {name} operands), the "
                                f"angles and cos/sin in {name}", x, y, half, "explained",
                                ["low_precision"]))
    return out


def bf16(a):
    from cases import bf16 as round_bf16
    a = np.asarray(a, F32)
    return round_bf16(a.reshape(-1)).reshape(a.shape)


def alibi_qkv_cases():
    """BLOOM's attention: q/k/v = x W (no rotation; ALiBi acts on the
    scores), an inline model of 2 heads: a right port is a match, and the
    best it is sent back holds the model's head count."""
    T, d, H = 6, 16, 2
    rng = np.random.default_rng(111)
    w = {n: (rng.standard_normal((d, d)) / 4).astype(F32) for n in "qkv"}
    model = {"d_model": d, "heads": H, "scheme": "alibi", "params": {},
             "weights": {"w" + n: w[n].tolist() for n in "qkv"}}
    x = x_of(T, d, 112)
    body = {"scheme": "alibi", "model": model, "embeddings": x.tolist()}
    body.update({n: (x @ w[n]).astype(F32).tolist() for n in "qkv"})
    return [Case("bloom_qkv_inline_alibi", "BLOOM-style q/k/v (x W, ALiBi on the scores) of an "
                 "inline 2-head model", body, "match")]


# Checkpoints the cases below are claimed against: name -> a function that
# returns tests/models/checkpoints.py's Checkpoint (run.py loads each with
# --model name=dir).
def models():
    import checkpoints
    import cases_norms
    return dict({"qwen3_tiny": checkpoints.qwen3(seed=16)}, **cases_norms.models())


def rms(a, w, eps):
    """HF Qwen3RMSNorm over the last axis, float32."""
    a = a.astype(F32)
    var = np.mean(a * a, -1, keepdims=True, dtype=F32)
    return (w * (a / np.sqrt(var + F32(eps)))).astype(F32)


def qk_norm_cases():
    """HF Qwen3Attention: q = q_norm(q_proj(h).view(..., head_dim)), the same
    for k, then apply_rotary_pos_emb (theta 1e6, rotate_half); h =
    input_layernorm(x). Ports that drop the q/k norms, apply them to the
    rotated q/k, or normalise the whole projection at once."""
    ck = models()["qwen3_tiny"]
    t = {n: a for n, _, a in ck.tensors}
    p = "model.layers.0."
    heads, kv_heads, hd, eps = 4, 2, 16, 1e-6
    T = 10
    x = np.random.default_rng(95).standard_normal((T, 32)).astype(F32)
    h = rms(x, t[p + "input_layernorm.weight"], eps)
    raw = {n: (h @ t[p + f"self_attn.{n}_proj.weight"].T).astype(F32) for n in "qkv"}
    wn = {"q": t[p + "self_attn.q_norm.weight"], "k": t[p + "self_attn.k_norm.weight"]}
    nh = {"q": heads, "k": kv_heads}
    pos = np.arange(T)

    def rot(a):
        return rope_hf(a, hd, hd, 1000000.0, pos)

    def per_head(n, a):
        return flat(rms(heads_of(a, hd), wn[n], eps))

    def whole(n, a):
        return rms(a, np.tile(wn[n], nh[n]), eps)

    variants = {
        "right": lambda n: rot(per_head(n, raw[n])),
        "missing": lambda n: rot(raw[n]),
        "after_rope": lambda n: per_head(n, rot(raw[n])),
        "whole_projection": lambda n: rot(whole(n, raw[n])),
    }
    out = []
    for where, f in variants.items():
        body = {"model": "qwen3_tiny", "embeddings": x.tolist(), "q": f("q").tolist(),
                "k": f("k").tolist(), "v": raw["v"].tolist()}
        if where == "right":
            out.append(Case("qwen3_qk_norm", "HF Qwen3Attention: q_norm/k_norm per head before "
                            "the rotation", body, "match"))
            continue

        def at(answer, where=where):
            f_ = finding(answer, "qk_norm_mismatch")
            if f_ and f_["evidence"].get("where") != where:
                return f"evidence.where {f_['evidence'].get('where')}, want {where}"
            return None
        out.append(Case(f"qwen3_qk_norm_{where}", f"a Qwen3 port with the q/k norm "
                        f"{where.replace('_', ' ')}", body, "explained", ["qk_norm_mismatch"],
                        check=at))
    return out


def qkv_bhtd_cases():
    """PyTorch attention code hands q/k/v over as q.view(b, t, h, hd)
    .transpose(1, 2): [batch][heads][tokens][head_dim]. A port computing
    x @ W with nn.Linear's [out][in] weight (HF LlamaAttention restated),
    sent with axes "bhtd" and return_map: the error maps come back in the
    axes sent, each value |subject - claim|, and worst.index indexes them."""
    B, T, d, H, hd = 2, 6, 16, 2, 8
    rng = np.random.default_rng(121)
    w = {n: (rng.standard_normal((d, d)) / 4).astype(F32) for n in "qkv"}
    model = {"d_model": d, "heads": H, "scheme": "rope", "params": {"head_dim": hd},
             "weights": {"w" + n: w[n].T.tolist() for n in "qkv"}}
    x = np.stack([x_of(T, d, 122 + b) for b in range(B)])
    pos = np.arange(T)

    def proj(n, transposed):
        out = np.stack([(xb @ (w[n] if transposed else w[n].T)).astype(F32) for xb in x])
        if n != "v":
            out = np.stack([rope_hf(o, hd, hd, 10000.0, pos) for o in out])
        return out.reshape(B, T, H, hd).transpose(0, 2, 1, 3)  # [b][h][t][hd]
    got = {n: proj(n, True) for n in "qkv"}
    want = {n: proj(n, False) for n in "qkv"}

    def maps_as_sent(answer):
        for n in "qkv":
            m = np.asarray((answer.get("error_map") or {}).get(n, []), np.float64)
            ref = np.abs(got[n].astype(np.float64) - want[n])
            if m.shape != ref.shape:
                return f"error_map.{n} shape {m.shape}, want {ref.shape} as sent"
            if np.max(np.abs(m - ref)) > 1e-5:
                return f"error_map.{n} differs from |subject - claim| by {np.max(np.abs(m - ref))}"
        worst = answer.get("claimed", {}).get("worst", {})
        arr = got[worst.get("array", "q")]
        index = tuple(worst.get("index", []))
        if len(index) != 4 or abs(float(arr[index]) - worst.get("got", 1e9)) > 1e-6:
            return f"worst {worst} does not index the [b][h][t][hd] array as sent"
        return None
    body = {"scheme": "rope", "model": model, "axes": "bhtd", "return_map": True,
            "embeddings": x.tolist()}
    body.update({n: got[n].tolist() for n in "qkv"})
    return [Case("linear_not_transposed_bhtd_map", "x @ W with nn.Linear's weight, q/k/v as "
                 "[b][h][t][hd] (axes bhtd) with return_map", body, "explained",
                 ["weights_transposed"], check=maps_as_sent)]


def heads_of(a, hd):
    return a.reshape(a.shape[0], -1, hd)


def all_cases():
    return (batch_cases() + float32_slack_cases() + learned_cases() + longrope_cases() +
            head_size_cases() + llama3_band_cases() + qk_norm_cases() + low_precision_cases() +
            alibi_qkv_cases() + qkv_bhtd_cases() + __import__("cases_norms").all_cases())


__all__ = ["all_cases", "flat", "heads", "rotate_half_layout"]

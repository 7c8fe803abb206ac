"""Subjects restated from real implementations, for /diagnose.

Each generator below computes a positional encoding the way one named
public implementation (or one reported bug) computes it, restated in our
own words with numpy from reading that code: none of their code is here.
Where a restatement was checked by running the implementation itself in
scratch space (with Debian's python3-torch: Meta's llama/model.py, fairseq's
get_embedding, Whisper's sinusoids, Transformer-XL's PositionalEmbedding,
jquesnelle/yarn's LlamaYaRNScaledRotaryEmbedding), its source ends in
"[executed]": each agreed with the restatement to float32 rounding
(max |diff| 2e-7 to 2e-6). Each case pairs the
subject with the claim a user porting that code would make, and with what
a right answer is:

  verdict   the verdict that is right
  codes     the findings that must be among the answer's (for explained)
  allowed   further codes that are not wrong (extra, harmless findings)

A finding outside codes | allowed | {"low_precision"} is a wrong cause
("confidently wrong" when the verdict is explained, "misleading" when not).

The arithmetic follows each implementation's precision: float32 where the
original computes in float32 (torch's default), float16/bfloat16 where it
stores in half precision.
"""
import numpy as np

F32 = np.float32
RNG = np.random.default_rng(2024)
STRUCTURAL_FREE = {"low_precision"}


def bf16(a):
    """Round to bfloat16 (round to nearest even), returned as float32."""
    b = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return b.astype(np.uint32).view(np.float32)


def invalid_best(best):
    """What /encode or /apply would refuse in a best: zero heads, YaRN
    betas that are not positive."""
    params = best.get("params") or {}
    if params.get("heads", 1) == 0:
        return True
    sc = params.get("scaling") or {}
    return sc.get("type") == "yarn" and not (sc.get("beta_fast", 32) > 0 and
                                              sc.get("beta_slow", 1) > 0)


class Case:
    def __init__(self, name, source, body, verdict, codes=(), allowed=(), known=None,
                 check=None):
        self.name, self.source, self.body = name, source, body
        self.verdict, self.codes, self.allowed = verdict, set(codes), set(allowed)
        self.known = known  # why today's /diagnose gets it wrong, if it does
        self.check = check  # answer -> None, or what its evidence states falsely

    def judge(self, answer):
        """'right', 'partly right', 'missed', 'misleading' or 'wrong'."""
        found = {f["code"] for f in answer.get("findings", [])}
        wrong = found - self.codes - self.allowed - STRUCTURAL_FREE
        verdict = answer.get("verdict")
        if invalid_best(answer.get("best") or {}):
            return "misleading"  # a best /encode or /apply would refuse
        model = self.body.get("model")
        if isinstance(model, dict) and answer.get("best", {}).get("model") != model:
            return "misleading"  # best must carry the inline model, as sent
        if wrong or (self.check and self.check(answer)):
            return "wrong" if verdict == "explained" else "misleading"
        if verdict == self.verdict and self.codes <= found:
            return "right"
        if self.verdict == "explained" and verdict == "unexplained" and found & self.codes:
            return "partly right"
        return "missed"


# ---------------------------------------------------------------- RoPE pieces
def inv_freq_f32(rot, base):
    """torch: 1 / base ** (arange(0, rot, 2).float() / rot), in float32."""
    e = (np.arange(0, rot, 2, dtype=np.int64).astype(F32) / F32(rot)).astype(F32)
    return (F32(1.0) / np.power(F32(base), e, dtype=F32)).astype(F32)


def angles_f32(positions, inv):
    """torch.outer(t.float(), inv_freq): float32 products."""
    return (np.asarray(positions, F32)[:, None] * inv[None, :]).astype(F32)


def rotate_half_layout(x, cos, sin, rot):
    """HF Llama / GPT-NeoX apply_rotary_pos_emb on the first rot channels
    of each [T][hd] head: x*cos + rotate_half(x)*sin, float32."""
    h = rot // 2
    r, rest = x[..., :rot], x[..., rot:]
    c = np.concatenate([cos, cos], -1)[:, None, :]
    s = np.concatenate([sin, sin], -1)[:, None, :]
    rh = np.concatenate([-r[..., h:], r[..., :h]], -1)
    return np.concatenate([(r * c + rh * s).astype(F32), rest], -1)


def rotate_pairs_layout(x, cos, sin, rot):
    """Adjacent pairs (2i, 2i+1): Meta Llama's complex product, GPT-J's
    rotate_every_two, llama.cpp's NORMAL mode."""
    r, rest = x[..., :rot].copy(), x[..., rot:]
    a, b = r[..., 0::2], r[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(r)
    out[..., 0::2] = (a * c - b * s).astype(F32)
    out[..., 1::2] = (a * s + b * c).astype(F32)
    return np.concatenate([out, rest], -1)


def heads(x, hd):
    return x.reshape(x.shape[0], -1, hd)


def flat(x):
    return x.reshape(x.shape[0], -1)


def encoded_case(name, source, x, y, params, verdict, codes=(), allowed=(), known=None,
                 **claim):
    body = {"scheme": "rope", "params": params, "embeddings": x.astype(F32).tolist(),
            "encoded": y.astype(F32).tolist()}
    body.update(claim)
    return Case(name, source, body, verdict, codes, allowed, known)


def x_of(T, d, seed):
    return np.random.default_rng(seed).standard_normal((T, d)).astype(F32)


def rope_hf(x, hd, rot, base, positions, attention=1.0, inv=None):
    inv = inv_freq_f32(rot, base) if inv is None else inv
    ang = angles_f32(positions, inv)
    cos, sin = (np.cos(ang) * F32(attention)).astype(F32), (np.sin(ang) * F32(attention)).astype(F32)
    return flat(rotate_half_layout(heads(x, hd), cos, sin, rot))


def rope_pairs(x, hd, rot, base, positions, inv=None):
    inv = inv_freq_f32(rot, base) if inv is None else inv
    ang = angles_f32(positions, inv)
    return flat(rotate_pairs_layout(heads(x, hd), np.cos(ang).astype(F32),
                                    np.sin(ang).astype(F32), rot))


def yarn_inv_freq(rot, base, factor, orig, beta_fast=32.0, beta_slow=1.0):
    """YaRN (jquesnelle/yarn LlamaYaRNScaledRotaryEmbedding, and HF's
    _compute_yarn_parameters): the correction range from beta_fast and
    beta_slow, floor/ceil, a linear ramp over it, interpolated frequencies
    below it, extrapolated above; attention factor 0.1 ln(s) + 1."""
    def corr(r):
        return rot * np.log(orig / (r * 2 * np.pi)) / (2 * np.log(base))
    lo, hi = max(np.floor(corr(beta_fast)), 0), min(np.ceil(corr(beta_slow)), rot - 1)
    if lo == hi:
        hi += 0.001
    ramp = np.clip((np.arange(rot // 2) - lo) / (hi - lo), 0, 1)
    extrap = 1.0 - ramp
    pos_freqs = base ** (np.arange(0, rot, 2) / rot)
    inv = (1.0 / (factor * pos_freqs)) * (1 - extrap) + (1.0 / pos_freqs) * extrap
    return inv.astype(F32), 0.1 * np.log(factor) + 1.0


def rope_cases():
    T, d, hd = 48, 64, 32
    pos = np.arange(T)
    x = x_of(T, d, 1)
    out = []
    half = {"layout": "half", "head_dim": hd}
    inter = {"layout": "interleaved", "head_dim": hd}
    out.append(encoded_case(
        "hf_llama_rotate_half", "transformers LlamaRotaryEmbedding + apply_rotary_pos_emb "
        "(float32 inv_freq, cat(freqs, freqs), rotate_half)",
        x, rope_hf(x, hd, hd, 10000.0, pos), half, "match"))
    out.append(encoded_case(
        "meta_llama_complex", "Meta llama/model.py precompute_freqs_cis + apply_rotary_emb "
        "(view_as_complex of adjacent pairs), claimed as HF's half layout [executed]",
        x, rope_pairs(x, hd, hd, 10000.0, pos), half, "explained", ["layout_swapped"]))
    out.append(encoded_case(
        "meta_llama_complex_right_claim", "Meta llama apply_rotary_emb, claimed interleaved",
        x, rope_pairs(x, hd, hd, 10000.0, pos), inter, "match"))
    xg = x_of(T, 128, 2)
    out.append(encoded_case(
        "gptj_rotate_every_two_partial", "transformers GPT-J: rotary_dim 16 of head 64, "
        "rotate_every_two on the first rotary_dim channels (sincos from rotary_dim)",
        xg, rope_pairs(xg, 64, 16, 10000.0, pos),
        {"layout": "interleaved", "head_dim": 64, "rotary_dim": 16}, "match"))
    out.append(encoded_case(
        "gptj_partial_claimed_full", "GPT-J's partial rotary claimed as a full-head rotation",
        xg, rope_pairs(xg, 64, 16, 10000.0, pos), {"layout": "interleaved", "head_dim": 64},
        "explained", ["rotary_dim_mismatch"]))
    out.append(encoded_case(
        "neox_rotary_pct", "transformers GPT-NeoX: rotary_pct 0.25 (16 of 64), half layout",
        xg, rope_hf(xg, 64, 16, 10000.0, pos),
        {"layout": "half", "head_dim": 64, "rotary_dim": 16}, "match"))
    out.append(encoded_case(
        "qwen_theta_1e6_claimed_1e4", "Qwen2 rope_theta 1e6 where the port kept Llama's 1e4",
        x, rope_hf(x, hd, hd, 1e6, pos), half, "explained", ["base_mismatch"]))
    out.append(encoded_case(
        "positions_from_one", "a port that numbers tokens from 1 (reported off-by-one)",
        x, rope_hf(x, hd, hd, 10000.0, pos + 1), half, "explained", ["position_offset"]))
    out.append(encoded_case(
        "sin_sign_flipped", "rotation by -theta (sin negated; ggml's backward pass sign)",
        x, flat(rotate_half_layout(heads(x, hd), np.cos(angles_f32(pos, inv_freq_f32(hd, 1e4))),
                                   -np.sin(angles_f32(pos, inv_freq_f32(hd, 1e4))), hd)),
        half, "explained", ["rotation_reversed"]))
    out.append(encoded_case(
        "whole_vector_rotation", "one rotation over the whole 64-wide vector instead of per "
        "32-wide head (head_dim forgotten)",
        x, rope_hf(x, d, d, 10000.0, pos), half, "explained", ["head_dim_mismatch"],
        allowed=["base_mismatch", "frequency_formula", "rotary_dim_mismatch"]))
    # llama.cpp NORMAL mode: theta_scale = powf(base, -2/n_dims), theta *= theta_scale
    inv = np.empty(hd // 2, F32)
    th = F32(1.0)
    scale = np.power(F32(10000.0), F32(-2.0) / F32(hd), dtype=F32)
    for i in range(hd // 2):
        inv[i] = th
        th = F32(th * scale)
    Tl = 512
    xl = x_of(Tl, d, 3)
    out.append(encoded_case(
        "llamacpp_normal_f32", "ggml rope NORMAL mode: theta by repeated float32 "
        "multiplication by powf(base, -2/n_dims), adjacent pairs",
        xl, rope_pairs(xl, hd, hd, 10000.0, np.arange(Tl), inv=inv), inter, "match"))
    out.append(encoded_case(
        "llamacpp_neox_f32", "ggml rope NEOX mode (pairs i, i + n_dims/2), float32",
        xl, rope_hf(xl, hd, hd, 10000.0, np.arange(Tl), inv=inv), half, "match"))
    # YaRN
    inv_y, att = yarn_inv_freq(hd, 10000.0, 4.0, 64)
    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    out.append(encoded_case(
        "yarn_reference", "jquesnelle/yarn scaled rotary (factor 4, original 64), "
        "mscale 0.1 ln 4 + 1 on cos and sin [executed]",
        x, rope_hf(x, hd, hd, 10000.0, pos, attention=att, inv=inv_y),
        dict(half, scaling=yarn), "match"))
    out.append(encoded_case(
        "yarn_claimed_unscaled", "YaRN computed, plain RoPE claimed",
        x, rope_hf(x, hd, hd, 10000.0, pos, attention=att, inv=inv_y), half, "explained",
        ["scaling_mismatch"], allowed=["attention_factor"]))
    out.append(encoded_case(
        "yarn_without_mscale", "YaRN frequencies without its attention factor (a dropped "
        "mscale, reported in several ports) [executed]",
        x, rope_hf(x, hd, hd, 10000.0, pos, attention=1.0, inv=inv_y),
        dict(half, scaling=yarn), "explained", ["attention_factor"]))
    out.append(encoded_case(
        "linear_scaling_kaiokendev", "linear position interpolation (positions / 4)",
        x, rope_hf(x, hd, hd, 10000.0, pos / 4.0),
        dict(half, scaling={"type": "linear", "factor": 4.0}), "match"))
    out.append(encoded_case(
        "linear_scaling_claimed_plain", "positions / 4 computed, no scaling claimed",
        x, rope_hf(x, hd, hd, 10000.0, pos / 4.0), half, "explained", ["scaling_mismatch"],
        allowed=["positions_mismatch"]))
    # NTK-aware base (bloc97): base * alpha^(d/(d-2))
    ntk = 10000.0 * 8.0 ** (hd / (hd - 2))
    out.append(encoded_case(
        "ntk_aware_alpha8", "bloc97 NTK-aware scaled RoPE: base * alpha^(d/(d-2)), alpha 8",
        x, rope_hf(x, hd, hd, ntk, pos), half, "explained", ["base_mismatch"],
        allowed=["scaling_mismatch"]))
    out.append(encoded_case(
        "lucidrains_interleaved", "lucidrains rotary-embedding-torch default (interleaved "
        "rotate_half, theta 10000), claimed half",
        x, rope_pairs(x, hd, hd, 10000.0, pos), half, "explained", ["layout_swapped"]))
    # Transformer-XL-style descending positions on a RoPE port
    out.append(encoded_case(
        "descending_positions", "positions counted down from the last token "
        "(Transformer-XL's pos_seq = arange(klen-1, -1, -1))",
        x, rope_hf(x, hd, hd, 10000.0, pos[::-1].copy()), half, "explained",
        ["positions_mismatch"]))
    out.append(encoded_case(
        "all_zero_position_ids", "position_ids all zero (a reported generate() bug): "
        "nothing rotates",
        x, rope_hf(x, hd, hd, 10000.0, np.zeros(T)), half, "explained", ["positions_mismatch"]))
    return out


# ------------------------------------------------------- cos/sin caches
def cache_case(name, source, cos, sin, params, verdict, codes=(), allowed=(), known=None):
    body = {"scheme": "rope", "params": params, "cos": cos.astype(F32).tolist(),
            "sin": sin.astype(F32).tolist()}
    return Case(name, source, body, verdict, codes, allowed, known)


def cache_cases():
    T, hd = 64, 32
    ang = angles_f32(np.arange(T), inv_freq_f32(hd, 10000.0))
    cos, sin = np.cos(ang).astype(F32), np.sin(ang).astype(F32)
    half = {"layout": "half", "head_dim": hd}
    out = [
        cache_case("hf_cos_sin_duplicated", "HF LlamaRotaryEmbedding.forward: cos/sin of "
                   "cat(freqs, freqs), [T][head_dim]",
                   np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1), half, "match"),
        cache_case("vllm_cos_sin_cache", "vLLM RotaryEmbedding._compute_cos_sin_cache: "
                   "[max_pos][rot/2] cos and sin", cos, sin, half, "match"),
        cache_case("cos_sin_swapped", "cos and sin caches passed in each other's place",
                   np.concatenate([sin, sin], 1), np.concatenate([cos, cos], 1), half,
                   "explained", ["sin_cos_swapped"]),
        cache_case("neox_fp16_cache", "GPT-NeoX rotary cos_cached/sin_cached kept in the "
                   "model's float16",
                   np.concatenate([cos, cos], 1).astype(np.float16).astype(F32),
                   np.concatenate([sin, sin], 1).astype(np.float16).astype(F32), half,
                   "explained", ["low_precision"]),
        cache_case("bf16_cache", "a cos/sin cache stored in bfloat16",
                   bf16(np.concatenate([cos, cos], 1)), bf16(np.concatenate([sin, sin], 1)),
                   half, "explained", ["low_precision"]),
        cache_case("cache_base_5e5", "Llama 3's theta 500000 cache, claimed 10000",
                   *(f(angles_f32(np.arange(T), inv_freq_f32(hd, 5e5))).astype(F32)
                     for f in (np.cos, np.sin)), half, "explained", ["base_mismatch"]),
    ]
    return out


# ------------------------------------------------------- sinusoidal tables
def table_case(name, source, table, params, verdict, codes=(), allowed=(), known=None):
    body = {"scheme": "sinusoidal", "params": params, "table": table.astype(F32).tolist()}
    return Case(name, source, body, verdict, codes, allowed, known)


def interleave(s, c):
    out = np.empty((s.shape[0], 2 * s.shape[1]), F32)
    out[:, 0::2], out[:, 1::2] = s, c
    return out


def sinusoidal_cases():
    T, d = 64, 32
    p = np.arange(T, dtype=F32)[:, None]
    out = []
    # PyTorch tutorial PositionalEncoding: div_term = exp(arange(0,d,2) * (-ln(1e4)/d))
    div = np.exp(np.arange(0, d, 2, dtype=F32) * F32(-np.log(10000.0) / d)).astype(F32)
    out.append(table_case("pytorch_tutorial", "PyTorch transformer tutorial PositionalEncoding "
                          "(pe[:, 0::2] = sin, pe[:, 1::2] = cos, float32)",
                          interleave(np.sin(p * div), np.cos(p * div)),
                          {"layout": "interleaved"}, "match"))
    # fairseq get_embedding: half_dim-1 denominator, [sin | cos], padding_idx + 1 offset
    half = d // 2
    emb = np.exp(np.arange(half, dtype=F32) * F32(-np.log(10000.0) / (half - 1))).astype(F32)
    ang = (p * emb).astype(F32)
    fair = np.concatenate([np.sin(ang), np.cos(ang)], 1)
    out.append(table_case("fairseq_get_embedding", "fairseq SinusoidalPositionalEmbedding."
                          "get_embedding: exp(-i ln(1e4)/(half-1)), cat(sin, cos), claimed split [executed]",
                          fair, {"layout": "split"}, "explained", ["frequency_formula"],
                          allowed=["base_mismatch"]))
    out.append(table_case("fairseq_claimed_interleaved", "fairseq's table claimed as the "
                          "paper's interleaved one", fair, {"layout": "interleaved"}, "explained",
                          ["frequency_formula", "layout_swapped"], allowed=["base_mismatch"]))
    # fairseq make_positions: positions start at padding_idx + 1 = 2
    angf = (np.arange(2, T + 2, dtype=F32)[:, None] * emb).astype(F32)
    out.append(table_case("fairseq_padding_offset", "fairseq make_positions: rows start at "
                          "padding_idx + 1 (= 2) [executed]",
                          np.concatenate([np.sin(angf), np.cos(angf)], 1), {"layout": "split"},
                          "explained", ["frequency_formula", "position_offset"],
                          allowed=["base_mismatch"]))
    # tensor2tensor get_timing_signal_1d / Whisper sinusoids: log(max/min)/(n-1)
    inc = np.log(10000.0) / (half - 1)
    inv = np.exp(-inc * np.arange(half))
    t2t = np.concatenate([np.sin(np.arange(T)[:, None] * inv), np.cos(np.arange(T)[:, None] * inv)], 1)
    out.append(table_case("tensor2tensor_timing_signal", "tensor2tensor get_timing_signal_1d "
                          "(and Whisper's sinusoids): log_timescale_increment = ln(1e4)/(n-1) [executed]",
                          t2t, {"layout": "split"}, "explained", ["frequency_formula"],
                          allowed=["base_mismatch"]))
    # TF tutorial: angle = pos / 10000^(2*(i//2)/d); sin on even, cos on odd
    i = np.arange(d)
    rates = 1 / np.power(10000, (2 * (i // 2)) / np.float32(d))
    a = np.arange(T)[:, None] * rates[None, :]
    tf = a.copy()
    tf[:, 0::2], tf[:, 1::2] = np.sin(a[:, 0::2]), np.cos(a[:, 1::2])
    out.append(table_case("tensorflow_tutorial", "TensorFlow transformer tutorial "
                          "positional_encoding (get_angles with 2*(i//2))", tf,
                          {"layout": "interleaved"}, "match"))
    # pair index i/d instead of 2i/d (a reported tutorial bug)
    bad = np.arange(T)[:, None] / 10000.0 ** (np.arange(half) / d)
    out.append(table_case("exponent_i_over_d", "exponent i/d instead of 2i/d (reported "
                          "tutorial bug)", interleave(np.sin(bad), np.cos(bad)),
                          {"layout": "interleaved"}, "explained", ["frequency_formula"],
                          allowed=["base_mismatch"]))
    std = np.arange(T)[:, None] / 10000.0 ** (np.arange(half) * 2 / d)
    out.append(table_case("cos_first", "cos at even and sin at odd dimensions",
                          interleave(np.cos(std), np.sin(std)), {"layout": "interleaved"},
                          "explained", ["sin_cos_swapped"]))
    out.append(table_case("transposed_table", "a [d][tokens] table",
                          interleave(np.sin(std), np.cos(std))[:32].T.copy(),
                          {"layout": "interleaved"}, "explained", ["transposed"]))
    # Transformer-XL PositionalEmbedding: cat(sin, cos) of descending pos_seq
    ang_x = np.arange(T - 1, -1, -1)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)
    out.append(table_case("transformer_xl_descending", "Transformer-XL PositionalEmbedding: "
                          "pos_seq = arange(klen-1, -1, -1), cat(sin, cos) [executed]",
                          np.concatenate([np.sin(ang_x), np.cos(ang_x)], 1),
                          {"layout": "split"}, "explained", ["positions_mismatch"]))
    # positions and dimensions swapped inside the formula
    sw = np.empty((T, d))
    for pp in range(T):
        for k in range(d // 2):
            w = k / 10000.0 ** (2 * pp / d)  # the roles of p and i exchanged
            sw[pp, 2 * k], sw[pp, 2 * k + 1] = np.sin(w), np.cos(w)
    out.append(table_case("pos_dim_swapped_in_formula", "position and dimension index "
                          "exchanged inside the angle (a reported bug)", sw,
                          {"layout": "interleaved"}, "unexplained"))
    return out


# ------------------------------------------------------- absolute encoded
def abs_encoded_cases():
    T, d = 32, 32
    x = x_of(T, d, 9)
    std = np.arange(T)[:, None] / 10000.0 ** (np.arange(d // 2) * 2 / d)
    pe = interleave(np.sin(std), np.cos(std))
    base = {"scheme": "sinusoidal", "params": {"layout": "interleaved"},
            "embeddings": x.tolist()}
    return [
        Case("marian_embed_scale", "Marian / fairseq embed_scale sqrt(d) before adding the "
             "table, claimed without it", dict(base, encoded=(x * np.sqrt(d) + pe).tolist()),
             "explained", ["embed_scale"]),
        Case("vaswani_encoded", "the paper's x + PE", dict(base, encoded=(x + pe).tolist()),
             "match"),
        Case("encoded_is_embeddings", "the encoding step skipped (output = input)",
             dict(base, encoded=x.tolist()), "unexplained"),
    ]


# ------------------------------------------------------- ALiBi
def alibi_slopes(n):
    """ALiBi paper get_slopes / BLOOM build_alibi_tensor: closest power of
    two, then every other slope of twice that many."""
    def pow2(m):
        start = 2 ** (-(2 ** -(np.log2(m) - 3)))
        return [start * start ** i for i in range(m)]
    if np.log2(n).is_integer():
        return np.array(pow2(n))
    c = 2 ** int(np.floor(np.log2(n)))
    return np.array(pow2(c) + pow2(2 * c)[0::2][: n - c])


def alibi_cases():
    T = 12
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    out = []
    for n in (8, 12):
        s = alibi_slopes(n)
        out.append(Case(f"alibi_paper_{n}_heads", "ofirpress/attention_with_linear_biases "
                        f"get_slopes, {n} heads, -slope*|i-j|",
                        {"scheme": "alibi", "params": {"heads": n},
                         "bias": (-s[:, None, None] * np.abs(i - j)[None]).tolist()}, "match"))
    s12 = alibi_slopes(12)
    out.append(Case("bloom_form_12", "BLOOM build_alibi_tensor: slope * key position, 12 heads",
                    {"scheme": "alibi", "params": {"heads": 12, "form": "bloom"},
                     "bias": np.broadcast_to(s12[:, None, None] * j[None], (12, T, T)).tolist()},
                    "match"))
    naive = 2.0 ** (-8.0 / 12 * np.arange(1, 13))
    out.append(Case("pow2_formula_12_heads", "the power-of-two slope formula applied to 12 heads "
                    "(a reported porting bug)",
                    {"scheme": "alibi", "params": {"heads": 12},
                     "slopes": naive.tolist()}, "explained", ["alibi_slopes"]))
    # MPT gen_slopes: 2^(-alibi_bias_max * k / n_pow2), non-power-of-two interleave
    n, m = 12, 16
    base = 1.0 / 2.0 ** (np.arange(1, m + 1) * 8.0 / m)
    mpt = np.concatenate([base[1::2], base[::2]])[:n]
    rel = (np.arange(T) - (T - 1)).astype(float)  # MPT's raw bias: key index - (seq_len - 1)
    # Settled: with alibi_bias_max 8, gen_slopes' odd-then-even reordering of
    # the 2^ceil(log2 n) slopes is exactly the paper's slopes, in the same
    # order, for every n from 1 to 64 (checked against alibi_slopes above):
    # the mpt claim holds, a match.
    out.append(Case("mpt_gen_slopes", "MPT build_alibi_bias: gen_slopes interleaves its "
                    "16-head slopes for 12 heads; bias = slope * (j - (T - 1))",
                    {"scheme": "alibi", "params": {"heads": n, "form": "mpt"},
                     "bias": np.broadcast_to(mpt[:, None, None] * rel[None, None, :],
                                             (n, T, T)).tolist()},
                    "match"))
    out.append(Case("mpt_claimed_symmetric", "the same MPT bias claimed in the paper's "
                    "symmetric form -slope*|i-j|",
                    {"scheme": "alibi", "params": {"heads": n},
                     "bias": np.broadcast_to(mpt[:, None, None] * rel[None, None, :],
                                             (n, T, T)).tolist()},
                    "explained", ["alibi_form"]))
    s8 = alibi_slopes(8)
    out.append(Case("alibi_sign_flipped", "+slope*|i-j| (the sign lost)",
                    {"scheme": "alibi", "params": {"heads": 8},
                     "bias": (s8[:, None, None] * np.abs(i - j)[None]).tolist()},
                    "explained", ["alibi_form"]))
    return out


# ------------------------------------------------------- T5
def t5_bucket(rel, bidirectional=True, nb=32, md=128):
    """HF T5Attention._relative_position_bucket, restated (float32 log)."""
    rel = np.asarray(rel)
    b = np.zeros_like(rel)
    if bidirectional:
        nb //= 2
        b = b + (rel > 0) * nb
        n = np.abs(rel)
    else:
        n = -np.minimum(rel, 0)
    exact = nb // 2
    small = n < exact
    with np.errstate(divide="ignore"):
        large = exact + (np.log(np.maximum(n, 1).astype(F32) / exact) / np.log(md / exact)
                         * (nb - exact)).astype(np.int64)
    large = np.minimum(large, nb - 1)
    return b + np.where(small, n, large)


def t5_cases():
    T, H = 10, 4
    table = np.random.default_rng(5).standard_normal((32, H)).round(3)
    model = {"d_model": 8, "heads": H, "scheme": "t5", "params": {},
             "weights": {"wq": np.eye(8).tolist(), "wk": np.eye(8).tolist(),
                         "wv": np.eye(8).tolist(), "t5_bias": table.tolist()}}
    q, k = np.arange(T)[:, None], np.arange(T)[None, :]

    def bias(buckets):
        return np.transpose(table[buckets], (2, 0, 1)).tolist()
    return [
        Case("t5_encoder", "HF T5 compute_bias, encoder (bidirectional, 32 buckets, 128)",
             {"scheme": "t5", "model": model, "bias": bias(t5_bucket(k - q))}, "match"),
        Case("t5_decoder_buckets", "T5 decoder buckets (unidirectional) claimed bidirectional",
             {"scheme": "t5", "model": model, "bias": bias(t5_bucket(k - q, False))},
             "explained", ["t5_buckets"]),
        Case("t5_query_minus_key", "relative position taken as query - key",
             {"scheme": "t5", "model": model, "bias": bias(t5_bucket(q - k))},
             "explained", ["t5_direction"]),
    ]


# ------------------------------------------------------- junk (negative set)
def negative_cases():
    T, d, hd = 32, 32, 16
    x = x_of(T, d, 11)
    std = np.arange(T)[:, None] / 10000.0 ** (np.arange(d // 2) * 2 / d)
    pe = interleave(np.sin(std), np.cos(std))
    rng = np.random.default_rng(12)
    right = rope_hf(x, hd, hd, 10000.0, np.arange(T))
    half = {"layout": "half", "head_dim": hd}
    out = [
        table_case("random_table", "uniform noise", rng.uniform(-1, 1, (T, d)),
                   {"layout": "interleaved"}, "unexplained"),
        table_case("constant_table", "all 0.5", np.full((T, d), 0.5), {"layout": "interleaved"},
                   "unexplained"),
        table_case("shuffled_rows", "the right table with its rows shuffled",
                   pe[rng.permutation(T)], {"layout": "interleaved"}, "explained",
                   ["positions_mismatch"]),  # exactly the table at permuted positions
        table_case("noise_1e-7", "the right table plus noise 1e-7", pe + 1e-7 * rng.standard_normal(pe.shape),
                   {"layout": "interleaved"}, "match"),
        table_case("noise_1e-5", "the right table plus noise 1e-5", pe + 1e-5 * rng.standard_normal(pe.shape),
                   {"layout": "interleaved"}, "match"),
        table_case("noise_1e-3", "the right table plus noise 1e-3", pe + 1e-3 * rng.standard_normal(pe.shape),
                   {"layout": "interleaved"}, "unexplained"),
        encoded_case("rope_random_output", "unrelated output", x, rng.standard_normal((T, d)), half,
                     "unexplained"),
        encoded_case("rope_noise_1e-3", "the right rotation plus noise 1e-3", x,
                     right + 1e-3 * rng.standard_normal(right.shape), half, "unexplained"),
        encoded_case("rope_noise_1e-7", "the right rotation plus noise 1e-7", x,
                     right + 1e-7 * rng.standard_normal(right.shape), half, "match"),
    ]
    return out


def batched_cases():
    """Subjects in the layouts real code hands over: batch axes first."""
    T, hd, h, b = 24, 16, 2, 2
    inv = inv_freq_f32(hd, 10000.0)
    half = {"layout": "half", "head_dim": hd}

    def cache(pos):  # HF: cos/sin of cat(freqs, freqs) for each row's position_ids
        ang = angles_f32(pos, inv)
        return (np.concatenate([np.cos(ang)] * 2, 1).astype(F32),
                np.concatenate([np.sin(ang)] * 2, 1).astype(F32))

    c, s_ = cache(np.arange(T))
    # left padding: row 1 has 5 pad tokens, positions cumsum(mask) - 1, pads at 1
    mask = np.ones((b, T), np.int64)
    mask[1, :5] = 0
    pos = np.cumsum(mask, 1) - 1
    pos[mask == 0] = 1
    rows = [cache(p) for p in pos]
    pc, ps = np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
    # PyTorch attention: q.view(b, t, h, hd).transpose(1, 2), rotated per row
    x = np.random.default_rng(31).standard_normal((b, T, h * hd)).astype(F32)
    y = np.stack([rope_hf(x[i], hd, hd, 10000.0, np.arange(T)) for i in range(b)])
    bhtd = lambda a: a.reshape(b, T, h, hd).transpose(0, 2, 1, 3)  # noqa: E731
    enc = {"scheme": "rope", "params": half, "axes": "bhtd",
           "embeddings": bhtd(x).tolist()}
    y5 = np.stack([rope_hf(x[i], hd, hd, 500000.0, np.arange(T)) for i in range(b)])
    return [
        cache_case("hf_cos_sin_batch", "HF LlamaRotaryEmbedding.forward: cos/sin "
                   "[batch, seq, head_dim] for position_ids [batch, seq]",
                   np.stack([c, c]), np.stack([s_, s_]), half, "match"),
        cache_case("neox_fp16_cache_1_1", "GPT-NeoX cos_cached [1, 1, seq, dim] in float16",
                   c.astype(np.float16).astype(F32)[None, None],
                   s_.astype(np.float16).astype(F32)[None, None], half, "explained",
                   ["low_precision"]),
        Case("hf_cos_sin_left_padded", "HF generate: position_ids cumsum(mask)-1 per row "
             "(pads at 1), claimed with those positions",
             {"scheme": "rope", "params": half, "cos": pc.tolist(), "sin": ps.tolist(),
              "positions": pos.tolist()}, "match"),
        Case("hf_cos_sin_left_padded_unclaimed", "the same cache claimed at 0..T-1 in every "
             "row (the padding forgotten)",
             {"scheme": "rope", "params": half, "cos": pc.tolist(), "sin": ps.tolist()},
             "explained", ["positions_mismatch"], ["position_offset"]),
        Case("torch_bhtd_rotated", "q.view(b, t, h, hd).transpose(1, 2) rotated per row "
             "(HF Llama apply_rotary_pos_emb), axes bhtd",
             dict(enc, encoded=bhtd(y).tolist()), "match"),
        Case("torch_bhtd_theta_5e5", "the same at theta 500000, claimed 10000",
             dict(enc, encoded=bhtd(y5).tolist()), "explained", ["base_mismatch"]),
    ]


def more_rope_cases():
    """Further implementations, restated from reading them."""
    T, d, hd = 48, 64, 32
    pos = np.arange(T)
    x = x_of(T, d, 41)
    half = {"layout": "half", "head_dim": hd}
    out = [
        encoded_case("phi_partial_rotary", "HF Phi: partial_rotary_factor 0.5, rotate_half on "
                     "the first half of each head", x, rope_hf(x, hd, hd // 2, 10000.0, pos),
                     dict(half, rotary_dim=hd // 2), "match"),
        encoded_case("phi_partial_claimed_full", "the same claimed with the whole head rotated",
                     x, rope_hf(x, hd, hd // 2, 10000.0, pos), half, "explained",
                     ["rotary_dim_mismatch"], ["frequency_formula"]),
        encoded_case("chatglm2_half_head_pairs", "ChatGLM2/3 RotaryEmbedding(head_dim // 2): "
                     "adjacent pairs on the first half of each head",
                     x, rope_pairs(x, hd, hd // 2, 10000.0, pos),
                     {"layout": "interleaved", "head_dim": hd, "rotary_dim": hd // 2}, "match"),
        encoded_case("chatglm2_claimed_llama", "the same claimed as Llama's (half layout, whole "
                     "head)", x, rope_pairs(x, hd, hd // 2, 10000.0, pos), half, "explained",
                     ["rotary_dim_mismatch", "layout_swapped"], ["frequency_formula"]),
        encoded_case("gemma_pytorch_chunk_complex", "gemma_pytorch apply_rotary_emb: complex "
                     "numbers from the two halves (torch.chunk), theta 10000",
                     x, rope_hf(x, hd, hd, 10000.0, pos), half, "match"),
    ]
    # nanochat: y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos (the other sense),
    # cos/sin cached in bfloat16
    ang = angles_f32(pos, inv_freq_f32(hd, 10000.0))
    c, sn = bf16(np.cos(ang)), bf16(np.sin(ang))
    out.append(encoded_case(
        "nanochat_reversed_bf16", "nanochat apply_rotary_emb (rotation the other way) with a "
        "bfloat16 cos/sin cache", x, flat(rotate_half_layout(heads(x, hd), c, -sn, hd)), half,
        "explained", ["rotation_reversed"]))
    # Llama 3.1 rope_scaling (factor 8, low 1, high 4, original 8192), theta 500000
    inv = inv_freq_f32(hd, 500000.0).astype(np.float64)
    wl = 2 * np.pi / inv
    smooth = (8192 / wl - 1.0) / (4.0 - 1.0)
    inv_l = np.where(wl > 8192, inv / 8, inv)
    medium = (wl >= 2048) & (wl <= 8192)
    inv_l = np.where(medium, (1 - smooth) * inv_l / 8 + smooth * inv_l, inv_l).astype(F32)
    l3 = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
    y31 = rope_hf(x, hd, hd, 500000.0, pos, inv=inv_l)
    out.append(encoded_case("llama31_rope_scaling", "HF _compute_llama3_parameters "
                            "(Llama 3.1), claimed with it", x, y31,
                            dict(half, base=500000.0, scaling=l3), "match"))
    out.append(encoded_case("llama31_claimed_unscaled", "the same claimed without rope_scaling",
                            x, y31, dict(half, base=500000.0), "explained", ["scaling_mismatch"],
                            ["attention_factor"]))
    # HF dynamic NTK beyond the original context: base * (f*seq/orig - (f-1))^(d/(d-2))
    orig, f = 32, 2.0
    base_dyn = 10000.0 * ((f * T / orig) - (f - 1)) ** (hd / (hd - 2))
    ydyn = rope_hf(x, hd, hd, base_dyn, pos)
    dyn = {"type": "dynamic", "factor": f, "original_max_position_embeddings": orig}
    out.append(encoded_case("dynamic_ntk_beyond_max", "HF _compute_dynamic_ntk_parameters at "
                            "48 tokens of an original 32, claimed with it", x, ydyn,
                            dict(half, scaling=dyn), "match"))
    out.append(encoded_case("dynamic_ntk_claimed_plain", "the same claimed without scaling",
                            x, ydyn, half, "explained", ["scaling_mismatch"],
                            ["base_mismatch", "frequency_formula"]))
    out[-1].check = dynamic_named(f, orig)
    # the same at heads of 64, factor 4 past 64 positions, 80 tokens
    T2, hd2 = 80, 64
    x2 = x_of(T2, 2 * hd2, 42)
    b2 = 10000.0 * ((4.0 * T2 / 64) - 3.0) ** (hd2 / (hd2 - 2))
    out.append(encoded_case("dynamic_ntk_factor4_claimed_plain", "HF dynamic NTK (factor 4, "
                            "original 64) at 80 tokens, heads of 64, claimed without scaling",
                            x2, rope_hf(x2, hd2, hd2, b2, np.arange(T2)),
                            {"layout": "half", "head_dim": hd2}, "explained",
                            ["scaling_mismatch"], ["base_mismatch"]))
    out[-1].check = dynamic_named(4.0, 64)
    # a true base change (theta 20000 where 10000 is claimed) is no scaling
    out.append(encoded_case("theta_20000_claimed_10000", "a port with rope_theta 20000 claimed "
                            "as 10000", x, rope_hf(x, hd, hd, 20000.0, pos), half, "explained",
                            ["base_mismatch"]))
    # Qwen2-VL mrope: frequency sections [4, 6, 6] take the t, h and w position
    # ids; 8 text tokens, a 4x4 image at t=8, h=w=8+row/col, then text at 12..
    tpos = np.concatenate([np.arange(8), np.full(16, 8), 12 + np.arange(T - 24)])
    hpos = np.concatenate([np.arange(8), 8 + np.repeat(np.arange(4), 4), 12 + np.arange(T - 24)])
    wpos = np.concatenate([np.arange(8), 8 + np.tile(np.arange(4), 4), 12 + np.arange(T - 24)])
    inv = inv_freq_f32(hd, 10000.0)
    sec = np.repeat([0, 1, 2], [4, 6, 6])
    pid = np.stack([tpos, hpos, wpos])[sec].T  # [T][hd/2]
    ang = (pid.astype(F32) * inv[None, :]).astype(F32)
    ymr = flat(rotate_half_layout(heads(x, hd), np.cos(ang).astype(F32),
                                  np.sin(ang).astype(F32), hd))
    out.append(encoded_case("qwen2vl_mrope_image", "Qwen2-VL multimodal rope (sections of the "
                            "frequencies at t/h/w positions), claimed as plain rope",
                            x, ymr, half, "unexplained", (), ["positions_mismatch"]))
    return out


def dynamic_named(factor, orig):
    """A check: the scaling_mismatch evidence names dynamic scaling whose
    factor and original context give the subject's base."""
    def check(answer):
        f = next((f for f in answer.get("findings", []) if f["code"] == "scaling_mismatch"), None)
        sc = (f or {}).get("evidence", {}).get("scaling") or {}
        if f and (sc.get("type") != "dynamic" or sc.get("factor") != factor or
                  sc.get("original_max_position_embeddings") != orig):
            return f"scaling_mismatch evidence {sc}, want dynamic {factor} past {orig}"
        return None
    return check


def qkv_cases():
    """q/k/v of a Llama-style attention layer: torch's nn.Linear keeps its
    weight as [out][in] and computes x @ W.T; a port that stores the same
    matrix and writes x @ W gets the transposed projection (only possible
    when the projection is square). posenc's inline model takes wq as
    [d_model][out] (q = x.wq), so the HF weight is wq.T."""
    T, d, H, hd = 12, 16, 2, 8
    rng = np.random.default_rng(77)
    x = x_of(T, d, 78)
    w_hf = {n: (rng.standard_normal((d, d)) / 4).astype(F32) for n in ("q", "k", "v")}
    model = {"d_model": d, "heads": H, "scheme": "rope", "params": {"head_dim": hd},
             "weights": {"w" + n: w_hf[n].T.tolist() for n in ("q", "k", "v")}}
    pos = np.arange(T)

    def subject(transposed):
        proj = {n: (x @ (w_hf[n] if transposed else w_hf[n].T)).astype(F32) for n in "qkv"}
        return {"q": flat(rope_hf(proj["q"], hd, hd, 10000.0, pos)).tolist(),
                "k": flat(rope_hf(proj["k"], hd, hd, 10000.0, pos)).tolist(),
                "v": proj["v"].tolist()}

    def body(arrays, **extra):
        return dict({"scheme": "rope", "model": model, "embeddings": x.tolist()}, **arrays, **extra)
    right, wrong = subject(False), subject(True)
    noise = {n: rng.standard_normal((T, d)).tolist() for n in "qkv"}
    return [
        Case("hf_linear_qkv", "HF LlamaAttention: q_proj/k_proj/v_proj (x @ W.T), rotate_half",
             body(right), "match"),
        Case("linear_weight_not_transposed", "a port computing x @ W with nn.Linear's [out][in] "
             "weight (the bug of the issue: x.W for x.W^T)", body(wrong), "explained",
             ["weights_transposed"]),
        Case("linear_weight_not_transposed_k", "only k_proj written as x @ W",
             body({"k": wrong["k"]}), "explained", ["weights_transposed"]),
        Case("qkv_unrelated", "q, k, v of another layer entirely (random)", body(noise),
             "unexplained", allowed=["projection_mismatch"]),
    ]


def all_cases():
    import cases_combined
    import cases_frameworks  # their generators build on the helpers above
    import cases_multimodal
    import cases_ports
    import cases_rope_alias
    import cases_rotation_slips
    return (rope_cases() + cache_cases() + sinusoidal_cases() + abs_encoded_cases() +
            alibi_cases() + t5_cases() + negative_cases() + batched_cases() +
            more_rope_cases() + qkv_cases() + cases_ports.all_cases() +
            cases_frameworks.all_cases() + cases_multimodal.all_cases() +
            cases_rotation_slips.all_cases() + cases_combined.all_cases() +
            cases_rope_alias.all_cases())

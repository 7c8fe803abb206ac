"""Subjects restated from training frameworks, array frameworks, kernels
and inference engines (read with the public code search; restated here in
our own numpy, none of their code is here):

  gemma (JAX)        apply_rope: timescale = base ** (2i/d) in float32, the
                     angle position / timescale (a division), / scale_factor
                     (Gemma 3's global layers: 8); first and second halves.
  MLX                mx.fast.rope(x, dims, traditional, base, scale, offset):
                     positions offset + t times scale; traditional = pairs.
  flash-attn         apply_rotary_emb(x, cos, sin, seqlen_offsets): cos/sin
                     [seqlen, rotary_dim/2], each batch row shifted by its
                     own offset (KV cache); RotaryEmbedding(scale_base):
                     xPos, q scaled per frequency by a power of the position.
  llama.cpp (ggml)   ggml_rope_cache_init: theta starts at the position and
                     is multiplied by powf(base, -2/n_dims) pair after pair
                     (float32); rope_yarn with freq_scale, ext_factor and
                     mscale = attn_factor (1 + 0.1 ln(1/freq_scale)).
  Megatron-LM / NeMo RotaryEmbedding(kv_channels, rotary_percent,
                     seq_len_interpolation_factor): inv_freq over the rotary
                     part, positions / interpolation factor.
  keras-hub          RotaryEmbedding(max_wavelength, scaling_factor) called
                     with start_index while decoding.
  TensorRT-LLM       ALiBi slopes of a tensor-parallel rank are the model's
                     (generate_alibi_slopes slices them per rank): a port
                     computing each rank's slopes for its local head count.
  candle             candle_nn::rotary_emb::rope_i (interleaved) on
                     [b, h, t, d] tensors.
  mistral-inference  precompute_freqs_cis(dim, end, theta=1e6) (complex
                     pairs); a port on Mistral 7B v0.1's 10000.
  torchtune          RotaryPositionalEmbeddings: pairs of x.reshape(..., -1,
                     2) on [b, s, h, d].
  TensorRT-LLM       Phi-3 LongRoPE choosing long_factor from the configured
                     maximum length, not the sequence (Phi-4-mini: partial
                     rotary 0.75).
"""
import numpy as np

from cases import (F32, Case, alibi_slopes, angles_f32, encoded_case, flat, heads, inv_freq_f32,
                   rope_hf, rope_pairs, rotate_half_layout, rotate_pairs_layout, x_of)
from cases_ports import expect_rows, learned_model, longrope_lists

HALF = "half"


def jax_rope(x, hd, base, positions, scale_factor=1.0):
    """gemma's apply_rope on [T][heads*hd]: float32 timescales, a division."""
    frac = (F32(2.0) * np.arange(hd // 2, dtype=F32) / F32(hd)).astype(F32)
    timescale = np.power(F32(base), frac, dtype=F32)
    ang = (np.asarray(positions, F32)[:, None] / timescale[None, :]).astype(F32)
    ang = (ang / F32(scale_factor)).astype(F32)
    return flat(rotate_half_layout(heads(x, hd), np.cos(ang), np.sin(ang), hd))


def gemma_jax_cases():
    T, hd = 48, 32
    x = x_of(T, 2 * hd, 201)
    pos = 4000 + np.arange(T)
    out = [encoded_case("gemma_jax_division_angles", "gemma (JAX) apply_rope: position / "
                        "base**(2i/d) in float32 at positions 4000..4047", x,
                        jax_rope(x, hd, 10000.0, pos), {"layout": HALF, "head_dim": hd}, "match",
                        positions=pos.tolist())]
    y = jax_rope(x, hd, 1000000.0, np.arange(T), scale_factor=8.0)
    out.append(encoded_case("gemma3_jax_global_scale_factor", "gemma (JAX) Gemma 3 global "
                            "layer: base 1e6, scale_factor 8, claimed without it", x, y,
                            {"layout": HALF, "head_dim": hd, "base": 1000000.0}, "explained",
                            ["scaling_mismatch"], ["positions_mismatch"]))
    return out


def mlx_rope(x, hd, base, positions, traditional, scale=1.0):
    """mx.fast.rope on float32 heads: angle (position * scale) * base**(-2i/d)."""
    inv = inv_freq_f32(hd, base)
    p = (np.asarray(positions, F32) * F32(scale)).astype(F32)
    ang = angles_f32(p, inv)
    layout = rotate_pairs_layout if traditional else rotate_half_layout
    return flat(layout(heads(x, hd), np.cos(ang), np.sin(ang), hd))


def mlx_cases():
    T, hd = 32, 32
    x = x_of(T, 2 * hd, 202)
    half = {"layout": HALF, "head_dim": hd}
    return [
        encoded_case("mlx_rope_cache_offset", "MLX nn.RoPE called with offset=cache.offset (7 "
                     "tokens cached), claimed from 0", x,
                     mlx_rope(x, hd, 10000.0, 7 + np.arange(T), False), half, "explained",
                     ["position_offset"]),
        encoded_case("mlx_rope_traditional", "MLX nn.RoPE(traditional=True) (pairs 2i, 2i+1) "
                     "claimed with Hugging Face's half layout", x,
                     mlx_rope(x, hd, 10000.0, np.arange(T), True), half, "explained",
                     ["layout_swapped"]),
        encoded_case("mlx_rope_scale_quarter", "MLX nn.RoPE(scale=0.25) (positions x 0.25) "
                     "claimed without scaling", x,
                     mlx_rope(x, hd, 10000.0, np.arange(T), False, scale=0.25), half,
                     "explained", ["scaling_mismatch"], ["positions_mismatch"]),
    ]


def flash_attn_cases():
    B, T, H, hd = 2, 16, 2, 16
    inv = inv_freq_f32(hd, 10000.0)
    offsets = [3, 10]
    xs = [x_of(T, H * hd, 203 + b) for b in range(B)]
    ys = []
    for b in range(B):  # cos/sin rows seqlen_offsets[b] + t of a [seqlen_ro, hd/2] cache
        ang = angles_f32(offsets[b] + np.arange(T), inv)
        ys.append(flat(rotate_half_layout(heads(xs[b], hd), np.cos(ang), np.sin(ang), hd)))
    pos = [list(range(o, o + T)) for o in offsets]
    out = [Case("flash_attn_seqlen_offsets", "flash-attn apply_rotary_emb with seqlen_offsets "
                "[3, 10] (each row decoding from its own cache length), claimed from 0",
                {"scheme": "rope", "params": {"layout": HALF, "head_dim": hd},
                 "embeddings": np.stack(xs).tolist(), "encoded": np.stack(ys).tolist()},
                "explained", ["positions_mismatch"],
                check=expect_rows("positions_mismatch", [0, 1], pos, "offset"))]
    # xPos (flash-attn RotaryEmbedding(scale_base=512)): cos/sin of q times
    # scale_i ** ((t - T//2) / scale_base), scale_i = (2i + 0.4 d) / (1.4 d)
    T2, d = 32, 32
    x = x_of(T2, 2 * d, 205)
    scale = ((np.arange(0, d, 2) + 0.4 * d) / (1.4 * d)).astype(np.float64)
    power = (np.arange(T2) - T2 // 2) / 512.0
    sc = (scale[None, :] ** power[:, None]).astype(F32)
    ang = angles_f32(np.arange(T2), inv_freq_f32(d, 10000.0))
    y = flat(rotate_half_layout(heads(x, d), (np.cos(ang) * sc).astype(F32),
                                (np.sin(ang) * sc).astype(F32), d))
    out.append(encoded_case("flash_attn_xpos_claimed_rope", "flash-attn RotaryEmbedding("
                            "scale_base=512) (xPos: q scaled by a power of the position per "
                            "frequency) claimed as plain rope", x, y,
                            {"layout": HALF, "head_dim": d}, "unexplained"))
    return out


def ggml_cache(positions, n_dims, base, freq_scale=1.0, ext_factor=0.0, n_ctx_orig=0,
               beta_fast=32.0, beta_slow=1.0, attn_factor=1.0):
    """ggml_rope_cache_init + rope_yarn in float32: cos, sin [T][n_dims/2]."""
    f = F32
    theta_scale = np.power(f(base), f(-2.0) / f(n_dims), dtype=f)
    lo = hi = 0.0
    mscale = f(attn_factor)
    if ext_factor != 0.0:
        def corr(n_rot):
            return n_dims * np.log(n_ctx_orig / (n_rot * 2 * np.pi)) / (2 * np.log(base))
        lo = max(0.0, np.floor(corr(beta_fast)))
        hi = min(n_dims - 1.0, np.ceil(corr(beta_slow)))
        mscale = f(mscale * f(1.0 + 0.1 * np.log(1.0 / freq_scale)))
    cos = np.empty((len(positions), n_dims // 2), f)
    sin = np.empty_like(cos)
    for t, p in enumerate(positions):
        theta = f(p)
        for i in range(n_dims // 2):
            interp = f(f(freq_scale) * theta)
            if ext_factor != 0.0:
                y = (i - lo) / max(0.001, hi - lo)
                mix = f((1.0 - min(1.0, max(0.0, y))) * ext_factor)
                ang = f(interp * (f(1) - mix) + theta * mix)
            else:
                ang = interp
            cos[t, i] = f(np.cos(ang) * mscale)
            sin[t, i] = f(np.sin(ang) * mscale)
            theta = f(theta * theta_scale)
    return cos, sin


def llama_cpp_cases():
    T, hd = 32, 64
    x = x_of(T, 2 * hd, 206)
    pos = 2000 + np.arange(T)
    c, s = ggml_cache(pos, hd, 10000.0)
    y = flat(rotate_half_layout(heads(x, hd), c, s, hd))
    out = [encoded_case("llama_cpp_theta_chain_float32", "llama.cpp NEOX rope: theta *= "
                        "theta_scale pair after pair in float32, positions 2000..2031", x, y,
                        {"layout": HALF, "head_dim": hd}, "match", positions=pos.tolist())]
    T2, hd2 = 40, 32
    x2 = x_of(T2, 2 * hd2, 207)
    c, s = ggml_cache(np.arange(T2), hd2, 10000.0, freq_scale=0.25, ext_factor=1.0,
                      n_ctx_orig=64)
    y2 = flat(rotate_half_layout(heads(x2, hd2), c, s, hd2))
    out.append(encoded_case("llama_cpp_yarn_claimed_plain", "llama.cpp --rope-scaling yarn "
                            "--rope-freq-scale 0.25 --yarn-orig-ctx 64 (ext_factor 1), claimed "
                            "without scaling", x2, y2, {"layout": HALF, "head_dim": hd2},
                            "explained", ["scaling_mismatch"], ["attention_factor"]))
    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    out.append(encoded_case("llama_cpp_yarn_claimed_yarn", "the same claimed as Hugging "
                            "Face's yarn (factor 4, original 64)", x2, y2,
                            {"layout": HALF, "head_dim": hd2, "scaling": yarn}, "match"))
    return out


def megatron_keras_cases():
    T, hd = 40, 32
    x = x_of(T, 2 * hd, 208)
    rd = hd // 2  # rotary_percent 0.5
    y = rope_hf(x, hd, rd, 10000.0, np.arange(T, dtype=F32) / F32(4.0))
    out = [encoded_case("megatron_rotary_percent_interpolation", "Megatron-LM RotaryEmbedding("
                        "rotary_percent=0.5, seq_len_interpolation_factor=4) claimed partial "
                        "without scaling", x, y,
                        {"layout": HALF, "head_dim": hd, "rotary_dim": rd}, "explained",
                        ["scaling_mismatch"], ["positions_mismatch"])]
    y2 = rope_hf(x, hd, hd, 10000.0, 12 + np.arange(T))
    out.append(encoded_case("keras_hub_start_index", "keras-hub RotaryEmbedding called with "
                            "start_index=12 while decoding, claimed from 0", x, y2,
                            {"layout": HALF, "head_dim": hd}, "explained", ["position_offset"]))
    return out


def alibi_tp_cases():
    heads_, tp = 12, 2
    local = alibi_slopes(heads_ // tp)
    slopes = np.concatenate([local] * tp).astype(F32)

    def check(answer):
        f = next((f for f in answer.get("findings", []) if f["code"] == "alibi_slopes"), None)
        want = [h for h in range(heads_) if abs(slopes[h] - alibi_slopes(heads_)[h]) > 1e-6]
        if f and f["evidence"].get("heads") != want:
            return f"alibi_slopes heads {f['evidence'].get('heads')}, want {want}"
        return None
    return [Case("alibi_tp_local_head_count", "a tensor-parallel port (2 ranks) computing each "
                 "rank's ALiBi slopes for its 6 local heads, claimed for 12 (TensorRT-LLM "
                 "slices the 12-head slopes per rank)",
                 {"scheme": "alibi", "params": {"heads": heads_}, "slopes": slopes.tolist()},
                 "explained", ["alibi_slopes"], check=check)]


def layout_cases():
    B, H, T, hd = 2, 2, 12, 16
    xs = np.stack([x_of(T, H * hd, 209 + b) for b in range(B)])
    ys = np.stack([rope_pairs(xb, hd, hd, 10000.0, np.arange(T)) for xb in xs])

    def bhtd(a):
        return a.reshape(B, T, H, hd).transpose(0, 2, 1, 3)
    out = [Case("candle_rope_i_bhtd", "candle rope_i (interleaved) on [b, h, t, d] tensors "
                "sent with axes bhtd, claimed half without head_dim",
                {"scheme": "rope", "axes": "bhtd", "params": {"layout": HALF},
                 "embeddings": bhtd(xs).tolist(), "encoded": bhtd(ys).tolist()},
                "explained", ["layout_swapped"])]
    out.append(Case("torchtune_pairs_bshd", "torchtune RotaryPositionalEmbeddings (pairs of "
                    "x.reshape(..., -1, 2)) on [b, s, h, d], sent as [b][s][h*d], claimed "
                    "half", {"scheme": "rope", "params": {"layout": HALF, "head_dim": hd},
                             "embeddings": xs.tolist(), "encoded": ys.tolist()},
                    "explained", ["layout_swapped"]))
    T2, hd2 = 32, 32
    x = x_of(T2, 2 * hd2, 211)
    y = rope_pairs(x, hd2, hd2, 1000000.0, np.arange(T2))
    out.append(encoded_case("mistral_inference_theta_1e6", "mistral-inference "
                            "precompute_freqs_cis(theta=1e6) (complex pairs), a port on Mistral "
                            "7B v0.1's theta 10000", x, y,
                            {"layout": "interleaved", "head_dim": hd2}, "explained",
                            ["base_mismatch"]))
    return out


def longrope_partial_cases():
    """Phi-4-mini: partial_rotary_factor 0.75 (rotary 24 of 32), LongRoPE
    lists of 12; an engine that takes long_factor whenever the configured
    maximum length exceeds the original, even for a short sequence."""
    T, hd, rd, orig = 24, 32, 24, 32
    _, long_, att, sc = longrope_lists(rd, orig, 212, 0.3, 20)
    x = x_of(T, 2 * hd, 213)
    inv = (inv_freq_f32(rd, 10000.0) / long_.astype(F32)).astype(F32)
    y = rope_hf(x, hd, rd, 10000.0, np.arange(T), attention=att, inv=inv)
    return [encoded_case("phi4mini_longrope_long_always", "a Phi-4-mini engine using "
                         "long_factor below the original context (partial rotary 24 of 32)",
                         x, y, {"layout": HALF, "head_dim": hd, "rotary_dim": rd, "scaling": sc},
                         "explained", ["scaling_mismatch"])]


def bf16(a):
    from cases import bf16 as round_bf16
    a = np.asarray(a, F32)
    return round_bf16(a.reshape(-1)).reshape(a.shape)


def half_output_cases():
    """Rotations computed in float32 and handed back in the input's dtype:
    MLX on float16 arrays, gemma (JAX) out.astype(inputs.dtype) on
    bfloat16 activations; the inputs already in that dtype."""
    T, hd = 48, 32
    x16 = x_of(T, 2 * hd, 214).astype(np.float16).astype(F32)
    y16 = mlx_rope(x16, hd, 10000.0, np.arange(T), False).astype(np.float16).astype(F32)
    xb = bf16(x_of(T, 2 * hd, 215))
    yb = bf16(jax_rope(xb, hd, 10000.0, np.arange(T)))
    half = {"layout": HALF, "head_dim": hd}
    return [
        encoded_case("mlx_rope_float16_output", "MLX nn.RoPE on float16 arrays (the rotation "
                     "rounded to float16)", x16, y16, half, "match", tolerance={"atol": 2e-3,
                                                                               "rtol": 2e-3}),
        encoded_case("mlx_rope_float16_default_tolerance", "the same at the default tolerance",
                     x16, y16, half, "explained", ["low_precision"]),
        encoded_case("gemma_jax_bf16_activations", "gemma (JAX) apply_rope on bfloat16 "
                     "activations (the rotation rounded to bfloat16)", xb, yb, half, "explained",
                     ["low_precision"]),
    ]


def learned_offset_cases():
    """HF Whisper's decoder (embed_positions.weight[past_length:
    past_length + T]) and fairseq's LearnedPositionalEmbedding
    (make_positions: padding_idx + cumsum of the non-pad mask, pads at
    padding_idx = 1) on a left-padded row, an inline learned table."""
    T = 8
    table, model, x = learned_model(216, 16, 64, T)
    mask = np.array([0, 0, 0, 1, 1, 1, 1, 1])
    fair = np.where(mask == 1, np.cumsum(mask) + 1, 1)

    def body(rows):
        return {"scheme": "learned", "model": model, "embeddings": x.tolist(),
                "encoded": (x + table[rows]).tolist()}
    return [
        Case("whisper_decoder_past_length", "HF Whisper decoder positions past_key_values_"
             "length + arange(T) (5 tokens cached), claimed from 0", body(5 + np.arange(T)),
             "explained", ["position_offset"]),
        Case("fairseq_learned_left_padded", "fairseq LearnedPositionalEmbedding on a "
             "left-padded row (pads at padding_idx 1, tokens from 2), claimed 0..T-1",
             body(fair), "explained", ["positions_mismatch"]),
    ]


def keras_scaled_decode_cases():
    T, hd = 40, 32
    x = x_of(T, 2 * hd, 217)
    pos = (12 + np.arange(T, dtype=F32)) / F32(2.0)
    return [encoded_case("keras_hub_scaling_and_start_index", "keras-hub RotaryEmbedding("
                         "scaling_factor=2) called with start_index=12, claimed plain from 0",
                         x, rope_hf(x, hd, hd, 10000.0, pos), {"layout": HALF, "head_dim": hd},
                         "explained", ["scaling_mismatch", "position_offset"],
                         ["positions_mismatch"])]


def merged_row_check(pad, T):
    """Only row 1 differs, and its real tokens are read at 0..T-pad-1 (its
    zero pads, which fit any position, at their claimed slots)."""
    def check(answer):
        f = next((f for f in answer.get("findings", []) if f["code"] == "positions_mismatch"),
                 None)
        if f is None:
            return None
        ev = f["evidence"]
        pos = ev.get("positions") or [[]]
        if ev.get("rows") != [1] or pos[0][pad:] != list(range(T - pad)) or \
                pos[0][:pad] != list(range(pad)):
            return f"evidence rows {ev.get('rows')} positions {pos}"
        return None
    return check


def reported_bug_cases():
    """Bugs reported in issue trackers, restated:
    - lucidrains/rotary-embedding-torch #11: the frequency cache keyed on
      the length alone, so a call with offset=20 got offset 0's rotation;
    - a batched KV cache (maclocal-api #92) whose shorter row, prefilled
      alone at 0..24, is merged left-padded into slots 5..29: its keys sit
      5 positions behind the claimed slots (pads are zero vectors);
    - vllm-ascend #12723: the Triton kernel read sin from the padded
      rotary width, sin ~ 0, out = x * cos: no rotation posenc knows;
    - Qwen1.5 GGUF files without rope_frequency_base (ollama #2379): the
      engine's default 10000 where the model has 1e6."""
    T, hd = 24, 32
    x = x_of(T, 2 * hd, 218)
    half = {"layout": HALF, "head_dim": hd}
    out = [encoded_case("lucidrains_cache_ignores_offset", "rotary-embedding-torch "
                        "rotate_queries_or_keys(offset=20) served from the offset-0 cache, "
                        "claimed at offset 20", x, rope_hf(x, hd, hd, 10000.0, np.arange(T)),
                        half, "explained", ["position_offset"], offset=20)]
    B, T2, pad = 2, 30, 5
    xs = np.stack([x_of(T2, 2 * hd, 219 + b) for b in range(B)])
    xs[1, :pad] = 0
    ys = np.stack([rope_hf(xs[0], hd, hd, 10000.0, np.arange(T2)),
                   np.concatenate([np.zeros((pad, 2 * hd), F32),
                                   rope_hf(xs[1, pad:], hd, hd, 10000.0, np.arange(T2 - pad))])])
    rows = [list(range(T2)), list(range(T2))]
    out.append(Case("batch_merge_left_pad_shift", "a batched KV cache merging a row prefilled "
                    "alone (0..24) left-padded into slots 5..29, claimed at the slots",
                    {"scheme": "rope", "params": half, "positions": rows,
                     "embeddings": xs.tolist(), "encoded": ys.tolist()},
                    "explained", ["positions_mismatch"], ["position_offset"],
                    check=merged_row_check(pad, T2)))
    ang = angles_f32(np.arange(T), inv_freq_f32(hd, 10000.0))
    c = np.concatenate([np.cos(ang)] * 2, 1)
    y = flat((heads(x, hd) * c[:, None, :]).astype(F32))
    out.append(encoded_case("ascend_rope_sin_lost", "vllm-ascend Triton rope reading sin from "
                            "the padded width (out = x * cos), claimed as rope", x, y, half,
                            "unexplained"))
    out.append(encoded_case("qwen15_gguf_default_base", "a Qwen1.5 GGUF without "
                            "rope_frequency_base run at the engine's 10000, claimed with the "
                            "model's 1e6", x, rope_hf(x, hd, hd, 10000.0, np.arange(T)),
                            dict(half, base=1000000.0), "explained", ["base_mismatch"]))
    return out


def all_cases():
    return (gemma_jax_cases() + mlx_cases() + flash_attn_cases() + llama_cpp_cases() +
            megatron_keras_cases() + alibi_tp_cases() + layout_cases() +
            longrope_partial_cases() + half_output_cases() + learned_offset_cases() +
            keras_scaled_decode_cases() + reported_bug_cases())

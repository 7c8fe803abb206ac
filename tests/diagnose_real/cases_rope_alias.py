"""RoPE subjects that another reading can mimic exactly, restated in our
own numpy (none of their code is here):

- frequencies at the claimed base squared (each inverse frequency
  squared): plain RoPE at theta 1e8 claimed 1e4, a tutorial's exponent
  with its 2 doubled (1 / base ** (2 * arange(0, d, 2) / d)), and
  llama2.c's run.c with the `i % head_size` dropped, whose frequencies run
  on over the whole vector (head 64 at base 1e8 when head 32 at 1e4 is
  claimed). A llama3 band from the highest frequency down, its share
  following the frequency, is the same profile: the right answer is the
  base, never a llama3 factor in the thousands.
- YaRN's correction range: Hugging Face's _compute_yarn_parameters
  floors and ceils its bounds (truncate true, the default), gpt-oss's
  configs set truncate false and keep them as computed. A subject of one
  claimed as the other is the claim's yarn with the other truncate, not a
  factor 34 or low precision.
- Phi-3's LongRoPE below its original context (short factors, attention
  factor sqrt(1 + ln 32 / ln 4096)) claimed as plain RoPE: no claim
  posenc reads lists off, so the answer stays unexplained; its angles
  are float32 and no finding may say they are half precision (the
  frequencies keep to lines in the position, between float16 numbers).
"""
import math

import numpy as np

from cases import F32, angles_f32, cache_case, encoded_case, rope_hf, x_of
from cases_ports import finding


def base_is(want):
    """The answer names base `want` and its best carries no scaling."""
    def check(answer):
        f = finding(answer, "base_mismatch")
        if f is None:
            return None
        if f["evidence"].get("base") != want:
            return f"evidence.base {f['evidence'].get('base')}, want {want}"
        scaling = (answer.get("best", {}).get("params") or {}).get("scaling")
        if scaling:
            return f"best carries scaling {scaling}"
        return None
    return check


def with_check(case, check):
    case.check = check
    return case


def squared_base_cases():
    out = []
    x = x_of(256, 128, 1301)
    out.append(with_check(encoded_case(
        "rope_theta_1e8_claimed_1e4", "plain RoPE (HF rotate_half) at theta 1e8, head 64, "
        "claimed at theta 1e4: each inverse frequency squared",
        x, rope_hf(x, 64, 64, 1e8, np.arange(256)), {"layout": "half", "head_dim": 64,
                                                      "base": 1e4},
        "explained", ["base_mismatch"]), base_is(1e8)))
    x = x_of(256, 64, 1302)
    out.append(with_check(encoded_case(
        "rope_theta_1e6_claimed_1e3", "plain RoPE at theta 1e6, head 32, claimed at theta 1e3",
        x, rope_hf(x, 32, 32, 1e6, np.arange(256)), {"layout": "half", "head_dim": 32,
                                                     "base": 1e3},
        "explained", ["base_mismatch"]), base_is(1e6)))
    for dim, T in ((64, 256), (128, 512)):
        th = (1.0 / (10000.0 ** (2 * np.arange(0, dim, 2, dtype=F32) / F32(dim)))).astype(F32)
        a = angles_f32(np.arange(T), th)
        cos, sin = np.concatenate([np.cos(a)] * 2, 1), np.concatenate([np.sin(a)] * 2, 1)
        out.append(with_check(cache_case(
            f"tutorial_exponent_doubled_d{dim}", "a tutorial's rotary cache: theta = "
            "1 / base ** (2 * arange(0, dim, 2) / dim), cos/sin of cat(m theta, m theta)",
            cos, sin, {"layout": "half", "head_dim": dim}, "explained", ["base_mismatch"]),
            base_is(1e8)))
    return out


def llama2c_no_modulo_case():
    """run.c's RoPE with head_dim = i instead of i % head_size: on a 64-wide
    vector of heads of 32 the exponent i / 32 runs to 62 / 32."""
    hd, dim, T = 32, 64, 256
    x = x_of(T, dim, 202)
    inv = (1.0 / 10000.0 ** (np.arange(0, dim, 2) / hd)).astype(F32)
    ang = angles_f32(np.arange(T), inv)
    a, b = x[:, 0::2], x[:, 1::2]
    y = np.empty_like(x)
    y[:, 0::2] = a * np.cos(ang) - b * np.sin(ang)
    y[:, 1::2] = a * np.sin(ang) + b * np.cos(ang)
    case = encoded_case(
        "llama2c_head_index_not_modulo", "llama2.c run.c RoPE with `i % head_size` dropped: "
        "frequencies over the whole 64-wide vector (head 64 at base 1e8), claimed head 32",
        x, y, {"layout": "interleaved", "head_dim": hd}, "explained",
        ["head_dim_mismatch", "base_mismatch"])
    return with_check(case, base_is(1e8))


def yarn_inv(rot, base, factor, orig, truncate):
    """YaRN's frequencies: a linear ramp between the dimensions where a
    wavelength turns 32 and 1 times over orig; rounded outward when
    truncate; attention factor 0.1 ln(factor) + 1."""
    def dim_of(turns):
        return rot * math.log(orig / (turns * 2 * math.pi)) / (2 * math.log(base))
    lo, hi = dim_of(32.0), dim_of(1.0)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, rot - 1)
    ramp = np.clip((np.arange(rot // 2) - lo) / (hi - lo), 0, 1)
    inv = base ** (-np.arange(0, rot, 2) / rot)
    return (inv / factor * ramp + inv * (1 - ramp)).astype(F32), 0.1 * math.log(factor) + 1


def truncate_is(want):
    """The scaling_mismatch's evidence and best carry truncate `want`."""
    def check(answer):
        f = finding(answer, "scaling_mismatch")
        if f is None:
            return None
        got = f["evidence"].get("scaling", {}).get("truncate")
        best = ((answer.get("best", {}).get("params") or {}).get("scaling") or {})
        if got is not want or best.get("truncate") is not want:
            return f"truncate {got} (best {best.get('truncate')}), want {want}"
        if best.get("factor") != 32:
            return f"best factor {best.get('factor')}, want 32"
        return None
    return check


def yarn_truncate_cases():
    out = []
    for T, hd in ((32, 32), (256, 64)):
        x = x_of(T, hd, 1303)
        for truncate in (True, False):
            inv, att = yarn_inv(hd, 150000.0, 32.0, 4096, truncate)
            y = rope_hf(x, hd, hd, 150000.0, np.arange(T), attention=att, inv=inv)
            claim = {"type": "yarn", "factor": 32, "original_max_position_embeddings": 4096,
                     "truncate": not truncate}
            who = "Hugging Face's default (truncate true)" if truncate else \
                "gpt-oss's config (truncate false)"
            out.append(with_check(encoded_case(
                f"yarn_truncate_{str(truncate).lower()}_claimed_{str(not truncate).lower()}_T{T}",
                f"YaRN factor 32 at base 150000 as {who}, claimed with the other truncate",
                x, y, {"layout": "half", "head_dim": hd, "base": 150000.0, "scaling": claim},
                "explained", ["scaling_mismatch"]), truncate_is(truncate)))
    return out


def no_low_precision(answer):
    f = finding(answer, "low_precision")
    return f and f"low_precision {f['evidence'].get('precision')} on float32 angles"


def longrope_short_claimed_plain_case():
    hd, T, orig = 64, 128, 4096
    x = x_of(T, 128, 1901)
    short = np.round(np.linspace(1.0, 1.2, hd // 2), 3)
    inv = (10000.0 ** (-np.arange(0, hd, 2) / hd) / short).astype(F32)
    att = math.sqrt(1 + math.log(32) / math.log(orig))
    y = rope_hf(x, hd, hd, 10000.0, np.arange(T), attention=att, inv=inv)
    case = encoded_case(
        "phi3_longrope_short_claimed_plain", "Phi-3 LongRoPE (HF) at a short length: "
        "frequencies divided by short_factor, cos/sin times its attention factor; claimed "
        "plain RoPE", x, y, {"layout": "half", "head_dim": hd}, "unexplained",
        ["attention_factor"], allowed=["base_mismatch"])
    return with_check(case, no_low_precision)


def all_cases():
    return (squared_base_cases() + [llama2c_no_modulo_case()] + yarn_truncate_cases() +
            [longrope_short_claimed_plain_case()])

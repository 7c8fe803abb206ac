"""Sinusoidal mistakes that come together, and evidence that must agree
with itself (restated in our own numpy; none of the implementations' code
is here):

  Marian / the paper's  encoder input x + PE where PE is the concatenated
  sin|cos table         [sin | cos] table (Marian, fairseq's
                        SinusoidalPositionalEmbedding) at positions
                        padding_idx + 1 = 2, 3, ...: claimed as the paper's
                        interleaved table from 0. Layout and offset alone
                        reproduce it exactly: no base, no precision may ride
                        along (the envelope of float16 angles covers a base
                        a few parts in a thousand off).
  Marian decoder step   sqrt(d) * x + split PE from position 5, claimed
                        split without the scale from 0.
  other combinations    offset + layout the other way round, offset +
                        embed_scale, offset + layout + base.
  float16 tables        a model's sinusoidal weights cast to float16 (HF's
                        SinusoidalPositionalEmbedding after .half()), and
                        fairseq's half-1 table at positions 2.. in float16:
                        error_after is what best leaves, as the messages say.
  bfloat16 positions    a cos/sin cache whose positions went through
                        bfloat16 (arange(...).to(bf16) with float32
                        inv_freq): the positions_mismatch message shows
                        where the positions differ from the claimed ones.
"""
import math
import re

import numpy as np

from cases import (F32, Case, angles_f32, bf16, cache_case, inv_freq_f32, interleave, table_case,
                   x_of)


def sin_table(positions, d, base=10000.0, layout="split"):
    """The paper's sin/cos of p / base^(2i/d), [sin | cos] or interleaved."""
    a = np.asarray(positions, np.float64)[:, None] / base ** (np.arange(d // 2) * 2 / d)
    if layout == "split":
        return np.concatenate([np.sin(a), np.cos(a)], 1)
    return interleave(np.sin(a), np.cos(a))


def consistent_evidence(forbidden=()):
    """A check: no code in `forbidden`; every finding's error_after is at
    most what best leaves (best.max_abs_error), and each 'drops from A to B'
    in a message quotes that error_after."""
    def check(answer):
        best = answer.get("best", {}).get("max_abs_error")
        for f in answer.get("findings", []):
            if f["code"] in forbidden:
                return f"{f['code']} reported: {f['message']}"
            after = f["evidence"].get("error_after")
            if best is not None and after is not None and after > best * (1 + 1e-6) + 1e-12:
                return f"{f['code']}: error_after {after} above best's {best}"
            m = re.search(r"drops from [0-9.e+-]+ to ([0-9.e+-]+)", f["message"])
            if m and after is not None and m.group(1) != f"{after:.3g}":
                return f"{f['code']}: message says {m.group(1)}, error_after {after}"
        return None
    return check


def encoded(name, source, x, y, params, codes, forbidden=("base_mismatch", "low_precision")):
    body = {"scheme": "sinusoidal", "params": params, "embeddings": x.astype(F32).tolist(),
            "encoded": np.asarray(y, F32).tolist()}
    return Case(name, source, body, "explained", codes,
                check=consistent_evidence(forbidden))


def offset_layout_cases():
    out = []
    for T, d in ((32, 32), (8, 8), (64, 64)):
        x = x_of(T, d, 301)
        out.append(encoded(f"split_from_2_claimed_paper_{T}x{d}", "x + [sin | cos] table at "
                           "fairseq's positions 2.. claimed as the paper's interleaved one",
                           x, x + sin_table(np.arange(2, T + 2), d), {"layout": "interleaved"},
                           ["layout_swapped", "position_offset"]))
    for T, d in ((64, 32), (32, 32)):
        x = x_of(T, d, 301)
        out.append(encoded(f"interleaved_from_2_claimed_split_{T}x{d}", "x + the paper's "
                           "interleaved table at positions 2.. claimed split", x,
                           x + sin_table(np.arange(2, T + 2), d, layout="interleaved"),
                           {"layout": "split"}, ["layout_swapped", "position_offset"]))
        out.append(encoded(f"scaled_from_2_{T}x{d}", "sqrt(d) * x + the interleaved table at "
                           "positions 2.., claimed without the scale from 0", x,
                           math.sqrt(d) * x.astype(np.float64) +
                           sin_table(np.arange(2, T + 2), d, layout="interleaved"),
                           {"layout": "interleaved"}, ["position_offset", "embed_scale"]))
    for T, d in ((32, 32), (64, 64), (8, 8)):
        x = x_of(T, d, 301)
        out.append(encoded(f"marian_decoder_step_{T}x{d}", "Marian decoder: sqrt(d) * x + [sin |"
                           " cos] from position 5, claimed split without the scale from 0", x,
                           math.sqrt(d) * x.astype(np.float64) + sin_table(np.arange(5, T + 5), d),
                           {"layout": "split"}, ["position_offset", "embed_scale"]))
    for T, d in ((8, 8), (16, 16)):
        x = x_of(T, d, 301)
        out.append(encoded(f"split_from_2_base_1000_{T}x{d}", "x + [sin | cos] at base 1000 from "
                           "position 2, claimed the paper's", x,
                           x + sin_table(np.arange(2, T + 2), d, 1000.0),
                           {"layout": "interleaved"},
                           ["layout_swapped", "position_offset", "base_mismatch"],
                           forbidden=("low_precision",)))
    return out


def half_precision_table_cases():
    d = 32
    tab16 = sin_table(np.arange(512), d, layout="interleaved").astype(np.float16).astype(F32)
    half = d // 2
    emb = np.exp(np.arange(half, dtype=F32) * F32(-math.log(10000.0) / (half - 1))).astype(F32)
    ang = (np.arange(2, 130, dtype=F32)[:, None] * emb).astype(F32)
    fair16 = np.concatenate([np.sin(ang), np.cos(ang)], 1).astype(np.float16).astype(F32)
    out = [table_case("sinusoidal_weights_float16", "a sinusoidal table cast to float16 with "
                      "its model", tab16, {"layout": "interleaved"}, "explained",
                      ["low_precision"]),
           table_case("fairseq_table_float16_claimed_paper", "fairseq's half-1 [sin | cos] table "
                      "at positions 2.. in float16, claimed as the paper's", fair16,
                      {"layout": "interleaved"}, "explained",
                      ["layout_swapped", "position_offset", "frequency_formula", "low_precision"],
                      allowed=["base_mismatch"])]
    for c in out:
        c.check = consistent_evidence()
    return out


def bf16_positions_case():
    T, hd = 1024, 32
    pos = bf16(np.arange(T, dtype=F32))
    ang = angles_f32(pos, inv_freq_f32(hd, 10000.0))
    cos, sin = np.cos(ang).astype(F32), np.sin(ang).astype(F32)
    first = int(np.argmax(pos != np.arange(T)))

    def check(answer):
        f = next((f for f in answer.get("findings", []) if f["code"] == "positions_mismatch"),
                 None)
        want = f"index {first}: {int(pos[first])}, {int(pos[first + 1])}"
        if f is not None and want not in f["message"]:
            return f"message does not show where positions differ ({want}): {f['message']}"
        return consistent_evidence()(answer)
    c = cache_case("positions_through_bfloat16", "a cos/sin cache of float32 inv_freq at "
                   "positions rounded to bfloat16", np.concatenate([cos, cos], 1),
                   np.concatenate([sin, sin], 1), {"layout": "half", "head_dim": hd},
                   "explained", ["positions_mismatch"])
    c.check = check
    return [c]


def all_cases():
    return offset_layout_cases() + half_precision_table_cases() + bf16_positions_case()

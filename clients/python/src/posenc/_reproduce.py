"""Diagnosis.reproduce(): rebuild the subject from ``best``.

``best`` is the variant the server found. Contract 1.2 makes it a complete
/encode (or /apply) request body, to be sent with the subject's input; a 1.1
server's ``best`` may lack the inline model (``"model": null``) and the
claim's positions or mask. So the request is built from ``best``, then the
claim (the diagnose request) fills in what ``best`` does not say, then the
subject's input is added: its embeddings or token_ids, or the shape of the
bare table. Findings that no request can express are applied to the answer.
"""
import numpy as np

from .errors import ReproduceError

_CLAIM_KEYS = ("scheme", "params", "model", "offset", "positions", "attention_mask", "causal",
               "embed_scale")
# Fields of best that are the input, which reproduce() supplies itself.
_INPUT_KEYS = ("embeddings", "embeddings_shape", "shape", "token_ids", "encoding")
# Findings no /encode or /apply request can express (best carries the rest
# of the variant), and, per kind of subject, those reproduce() applies to the
# server's answer itself. Every other finding is expressed by best.
_NOT_EXPRESSIBLE = ("transposed", "sin_cos_swapped", "rotation_reversed", "alibi_slopes",
                    "t5_direction", "weights_permuted", "weights_transposed",
                    "value_rotated")
_APPLICABLE = {
    "table": ("transposed", "sin_cos_swapped"),
    "encoded": ("sin_cos_swapped", "rotation_reversed"),
    "cache": ("sin_cos_swapped", "rotation_reversed"),
    "bias": ("alibi_slopes", "t5_direction"),
    "slopes": ("alibi_slopes",),
    "projections": (),
}


def _request(diagnosis):
    """(keyword arguments for Client.encode/apply, extra fields) from best and
    the claim."""
    best = diagnosis.best_request()
    claim = diagnosis.request
    kwargs, extra = {}, {}
    for key, value in best.items():
        if key in _CLAIM_KEYS:
            kwargs[key] = value
        elif key == "return":
            kwargs["return_"] = value
        elif key not in _INPUT_KEYS:
            extra[key] = value
    if kwargs.get("model") is None:  # 1.1: null for an inline model
        kwargs.pop("model", None)
        if "model" in claim:
            kwargs["model"] = claim["model"]
    if not any(key in best for key in ("offset", "positions", "attention_mask")):
        for key in ("offset", "positions", "attention_mask"):
            if key in claim:
                kwargs[key] = claim[key]
    if "causal" in claim and "causal" not in kwargs:
        kwargs["causal"] = claim["causal"]
    return kwargs, extra


def _kind(subject):
    if "table" in subject:
        return "table"
    if "encoded" in subject:
        return "encoded"
    if "cos" in subject or "sin" in subject:
        return "cache"
    if "bias" in subject:
        return "bias"
    if "slopes" in subject:
        return "slopes"
    if any(name in subject for name in ("q", "k", "v")):
        return "projections"
    raise ReproduceError("the diagnosis has no subject to reproduce")


def _rope_dims(params, width):
    """(head_dim, rotary_dim, layout) of a rope variant over vectors of
    ``width`` channels, with the contract's defaults."""
    head_dim = int(params.get("head_dim") or width)
    if params.get("rotary_dim"):
        rotary = int(params["rotary_dim"])
    elif params.get("partial_rotary_factor"):
        rotary = int(head_dim * float(params["partial_rotary_factor"]))
    else:
        rotary = head_dim
    return head_dim, rotary, params.get("layout", "half")


def _second_members(width, head_dim, rotary, layout):
    """Column indices of the second member of every rotated pair."""
    cols = []
    for start in range(0, width - head_dim + 1, head_dim):
        if layout == "interleaved":
            cols += range(start + 1, start + rotary, 2)
        else:
            cols += range(start + rotary // 2, start + rotary)
    return np.asarray(cols, dtype=np.intp)


def _swap_sin_cos(table, layout):
    """A sinusoidal table with each sin/cos column pair swapped."""
    d = table.shape[-1]
    out = table.copy()
    if layout == "split":
        if d % 2:
            raise ReproduceError("sin_cos_swapped with the split layout and an odd d")
        half = d // 2
        out[..., :half], out[..., half:] = table[..., half:], table[..., :half]
    else:
        pairs = d // 2 * 2
        out[..., 0:pairs:2], out[..., 1:pairs:2] = table[..., 1:pairs:2], table[..., 0:pairs:2]
    return out


def _round_to(values, precision):
    """float32 values rounded to float16 or bfloat16 (to nearest, ties to
    even) and back: what a half-precision table or cache stores."""
    values = np.asarray(values, dtype=np.float32)
    if precision == "float16":
        return values.astype(np.float16).astype(np.float32)
    if precision == "bfloat16":
        bits = values.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32)
    return values


def _stored_in(diagnosis):
    """The precision the subject's values were stored in, from a
    ``low_precision`` finding at ``stage: values`` (contract 1.2), else None."""
    finding = diagnosis.finding("low_precision")
    if finding is not None and finding.evidence.get("stage") == "values":
        return finding.evidence.get("precision")
    return None


def _alibi_found_slopes(finding, paper):
    """The slopes an ``alibi_slopes`` finding reports, one per head."""
    found = np.asarray(finding.evidence.get("slopes", []), dtype=np.float64)
    heads = finding.evidence.get("heads", [])
    if found.size == paper.size:
        return found
    if found.size == len(heads):
        out = paper.astype(np.float64).copy()
        out[np.asarray(heads, dtype=np.intp)] = found
        return out
    raise ReproduceError(f"alibi_slopes: {found.size} slopes for {paper.size} heads")


def _paper_slopes(client, kwargs):
    params = dict(kwargs.get("params") or {})
    params["form"] = "symmetric"
    bias = client.encode(shape=[2, 1], scheme="alibi", params=params).bias
    return -bias[:, 0, 1].astype(np.float64)


def reproduce(diagnosis, client):
    """See Diagnosis.reproduce."""
    subject = diagnosis.subject
    kind = _kind(subject)
    for code in diagnosis.codes:
        if code in _NOT_EXPRESSIBLE and code not in _APPLICABLE[kind]:
            raise ReproduceError(f"cannot reproduce a {kind} subject with finding {code}: "
                                 "no request expresses it and the client cannot apply it")
    kwargs, extra = _request(diagnosis)
    return _BUILDERS[kind](diagnosis, client, subject, kwargs, extra)


def _table(diagnosis, client, subject, kwargs, extra):
    shape = list(subject["table"].shape)
    transposed = diagnosis.finding("transposed") is not None
    if transposed:
        shape[-2], shape[-1] = shape[-1], shape[-2]
    out = client.encode(shape=shape, extra=extra, **kwargs).encoded
    if diagnosis.finding("sin_cos_swapped"):
        out = _swap_sin_cos(out, (kwargs.get("params") or {}).get("layout", "interleaved"))
    out = _round_to(out, _stored_in(diagnosis))
    return np.swapaxes(out, -1, -2) if transposed else out


def _encoded(diagnosis, client, subject, kwargs, extra):
    x = subject["embeddings"]
    bhtd = diagnosis.request.get("axes") == "bhtd"
    if bhtd:  # [b, h, t, hd] -> [b, t, h*hd], the shape /encode takes
        b, h, t, hd = x.shape
        x = x.transpose(0, 2, 1, 3).reshape(b, t, h * hd)
    params = kwargs.get("params") or {}
    scheme = kwargs.get("scheme")
    if diagnosis.finding("rotation_reversed"):
        # R(-theta) = P R(theta) P, with P negating each pair's second member
        cols = _second_members(x.shape[-1], *_rope_dims(params, x.shape[-1]))
        x = x.copy()
        x[..., cols] *= -1
        out = client.encode(x, extra=extra, **kwargs).encoded.copy()
        out[..., cols] *= -1
    elif diagnosis.finding("sin_cos_swapped"):
        if scheme not in (None, "sinusoidal"):
            raise ReproduceError(f"sin_cos_swapped on an encoded {scheme} subject")
        table_kwargs = {k: v for k, v in kwargs.items() if k != "embed_scale"}
        table = client.encode(shape=list(x.shape), extra=extra, **table_kwargs).encoded
        scale = float(kwargs.get("embed_scale", 1))
        table = _swap_sin_cos(table, params.get("layout", "interleaved"))
        out = (scale * x.astype(np.float64) + table).astype(np.float32)
    else:
        out = client.encode(x, extra=extra, **kwargs).encoded
    if bhtd:
        out = out.reshape(b, t, h, hd).transpose(0, 2, 1, 3)
    return out


def _cache(diagnosis, client, subject, kwargs, extra):
    ref = subject["cos"] if "cos" in subject else subject["sin"]
    width = ref.shape[-1]
    params = kwargs.get("params") or {}
    head_dim, rotary, layout = _rope_dims(params, 2 * width)
    table = client.encode(shape=list(ref.shape[:-1]) + [head_dim], extra=extra, **kwargs).encoded
    if layout == "interleaved":
        cos, sin = table[..., 0:rotary:2], table[..., 1:rotary:2]
    else:
        cos, sin = table[..., : rotary // 2], table[..., rotary // 2: rotary]
    if width == rotary:  # Hugging Face's duplicated halves, or repeat_interleave
        if layout == "interleaved":
            cos, sin = np.repeat(cos, 2, axis=-1), np.repeat(sin, 2, axis=-1)
        else:
            cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    elif width != rotary // 2:
        raise ReproduceError(f"a cos/sin cache of width {width} for rotary_dim {rotary}")
    if diagnosis.finding("sin_cos_swapped"):
        cos, sin = sin, cos
    if diagnosis.finding("rotation_reversed"):
        sin = -sin
    precision = _stored_in(diagnosis)
    return _round_to(cos, precision), _round_to(sin, precision)


def _bias(diagnosis, client, subject, kwargs, extra):
    shape = list(subject["bias"].shape)
    out = client.encode(shape=shape[:-3] + [shape[-1], 1], extra=extra, **kwargs).bias
    form = diagnosis.finding("alibi_form")
    if form is not None and form.evidence.get("sign") == -1:
        out = -out
    if diagnosis.finding("t5_direction"):
        out = np.swapaxes(out, -1, -2)
    slopes = diagnosis.finding("alibi_slopes")
    if slopes is not None:
        paper = _paper_slopes(client, kwargs)
        ratio = _alibi_found_slopes(slopes, paper) / paper
        out = (out * ratio[:, None, None]).astype(np.float32)
    return np.ascontiguousarray(out)


def _slopes(diagnosis, client, subject, kwargs, extra):
    paper = _paper_slopes(client, kwargs)
    finding = diagnosis.finding("alibi_slopes")
    found = paper if finding is None else _alibi_found_slopes(finding, paper)
    return found.astype(np.float32)


def _projections(diagnosis, client, subject, kwargs, extra):
    names = [name for name in ("q", "k", "v") if name in subject]
    claim = diagnosis.request
    result = client.apply(subject.get("embeddings"), token_ids=claim.get("token_ids"),
                          return_=kwargs.pop("return_", names), extra=extra, **kwargs)
    out = {name: result[name] for name in names}
    if claim.get("axes") == "bhtd":
        shape = result.get("shape") or {}
        for name in names:
            heads = shape.get("heads") if name == "q" else shape.get("kv_heads")
            b, t, width = out[name].shape
            out[name] = out[name].reshape(b, t, heads, width // heads).transpose(0, 2, 1, 3)
    return out


_BUILDERS = {"table": _table, "encoded": _encoded, "cache": _cache, "bias": _bias,
             "slopes": _slopes, "projections": _projections}

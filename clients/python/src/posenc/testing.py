"""Assertions for a port's own test suite: compare what your code computes
with what it claims to compute, through POST /diagnose.

    from posenc.testing import assert_encoding_matches
    assert_encoding_matches("http://127.0.0.1:8080", embeddings=x,
                            encoded=my_rope(x), scheme="rope",
                            params={"head_dim": 64})

Each raises AssertionError with the diagnosis in words (the verdict, one
line per finding, the variant that reproduces the subject) when the verdict
is not ``match``, and returns the :class:`posenc.Diagnosis` otherwise.
``client_or_url`` is a :class:`posenc.Client` or the server's URL.

Encodings with positions in more than one dimension (multimodal RoPE's
``params.mrope`` with ``[t, h, w]`` positions or ``mm_layout``, and
``scheme="rope2d"`` with ``[row, col]`` positions or ``grid``) are checked
the same way, through /diagnose (its findings: ``mrope_mismatch``, the other
``mm_rule``'s ``positions_mismatch``, ``rope2d_variant``). Against a server
whose /diagnose refuses such a claim (400 naming its field), the assertion
compares with what /encode computes for it instead (the same tolerance,
default atol = rtol = 1e-4), says where the worst value is and which
positions it had, and returns the /encode answer.
"""
import numpy as np

from .client import Client
from .errors import PosencError

# Fields of a claim /diagnose may refuse (400 naming them) where /encode serves it.
_ENCODE_ONLY_FIELDS = ("params.mrope", "scheme", "mm_layout", "merge", "mm_rule", "grid")
_LAYOUT_FIELDS = ("mm_layout", "merge", "mm_rule", "grid")


def _client(client_or_url):
    return client_or_url if isinstance(client_or_url, Client) else Client(client_or_url)


def assert_diagnosis_matches(client_or_url, what="the subject", **fields):
    """POST /diagnose with ``fields`` (Client.diagnose's keyword arguments);
    AssertionError unless the verdict is ``match``."""
    diagnosis = _client(client_or_url).diagnose(**fields)
    if not diagnosis.matches:
        raise AssertionError(f"{what} does not match its claim:\n{diagnosis}")
    return diagnosis


def assert_encoding_matches(client_or_url, *, encoded=None, embeddings=None, table=None,
                            scheme=None, params=None, **claim):
    """Your encoding step checked: ``embeddings`` and the ``encoded`` your code
    made of them (sinusoidal/learned added, rope rotated), or a bare absolute
    ``table``, against ``scheme`` and ``params`` (and ``offset``,
    ``positions``, ``attention_mask``, ``model``, ``embed_scale``,
    ``tolerance``, ``axes`` in ``claim``)."""
    if table is None and (encoded is None or embeddings is None):
        raise TypeError("assert_encoding_matches needs encoded and embeddings, or a table")
    client = _client(client_or_url)
    layout = {key: claim.pop(key) for key in _LAYOUT_FIELDS if key in claim}
    try:
        return assert_diagnosis_matches(client, "the table" if table is not None
                                        else "the encoding", table=table, embeddings=embeddings,
                                        encoded=encoded, scheme=scheme, params=params,
                                        **layout, **claim)
    except PosencError as exc:
        multidimensional = scheme == "rope2d" or "mrope" in (params or {}) or layout
        if not (multidimensional and exc.status == 400 and exc.field in _ENCODE_ONLY_FIELDS):
            raise
    if table is not None:
        raise TypeError("a multidimensional claim checks embeddings and encoded, not a table")
    return _assert_against_encode(client, embeddings, encoded, scheme, params, layout, claim)


def _assert_against_encode(client, embeddings, encoded, scheme, params, layout, claim):
    """``encoded`` against /encode of ``embeddings`` under the claim, value by
    value within the tolerance; AssertionError naming the worst value."""
    tolerance = claim.pop("tolerance", None)
    atol, rtol = _tolerance_pair(tolerance)
    for unused in ("axes", "return_map"):
        claim.pop(unused, None)
    answer = client.encode(embeddings, scheme=scheme, params=params, **layout, **claim)
    want = np.asarray(answer["encoded"], np.float64)
    got = np.asarray(encoded, np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"the encoding has shape {list(got.shape)}; the claim gives "
                             f"{list(want.shape)}")
    excess = np.abs(got - want) - (atol + rtol * np.abs(want))
    if not np.isfinite(got).all() or excess.max(initial=-1.0) > 0:
        worst = np.unravel_index(int(np.argmax(np.where(np.isfinite(excess), excess, np.inf))),
                                 got.shape)
        bad = int(np.count_nonzero(~(excess <= 0)))
        where = ", ".join(f"{name} {i}" for name, i in zip(_axis_names(got.ndim), worst))
        at = _position_of(answer, claim, worst)
        raise AssertionError(
            f"the encoding does not match its claim (compared with /encode, which serves "
            f"this claim where /diagnose does not):\n{bad} of {got.size} values differ by "
            f"more than atol {atol:g} + rtol {rtol:g}·|want|; the worst at {where}{at}: "
            f"{got[worst]:.7g}, the claim gives {want[worst]:.7g}")
    return answer


def assert_rope_cache_matches(client_or_url, *, cos, sin, params=None, **claim):
    """A RoPE cos/sin cache (``[tokens, rotary_dim/2]`` or ``[tokens,
    rotary_dim]``) against the rope claim ``params`` (head_dim, rotary_dim,
    base, layout, scaling)."""
    return assert_diagnosis_matches(client_or_url, "the cos/sin cache", cos=cos, sin=sin,
                                    scheme="rope", params=params, **claim)


def assert_bias_matches(client_or_url, *, bias=None, slopes=None, scheme="alibi", params=None,
                        **claim):
    """ALiBi or T5 ``bias`` ``[heads, tokens, tokens]`` (or ALiBi ``slopes``)
    against the claim."""
    if (bias is None) == (slopes is None):
        raise TypeError("assert_bias_matches needs exactly one of bias and slopes")
    return assert_diagnosis_matches(client_or_url, "the bias" if slopes is None else "the slopes",
                                    bias=bias, slopes=slopes, scheme=scheme, params=params,
                                    **claim)


def assert_projections_match(client_or_url, *, model, q=None, k=None, v=None, embeddings=None,
                             token_ids=None, **claim):
    """Your attention layer's ``q``/``k``/``v`` (any of them) for
    ``embeddings`` or ``token_ids`` against ``model`` (a loaded model's name
    or an inline model) as /apply computes it."""
    if q is None and k is None and v is None:
        raise TypeError("assert_projections_match needs q, k or v")
    return assert_diagnosis_matches(client_or_url, "the projections", model=model, q=q, k=k,
                                    v=v, embeddings=embeddings, token_ids=token_ids, **claim)


def _tolerance_pair(tolerance):
    if tolerance is None:
        return 1e-4, 1e-4
    if isinstance(tolerance, dict):
        return float(tolerance.get("atol", 1e-4)), float(tolerance.get("rtol", 1e-4))
    if isinstance(tolerance, (tuple, list)):
        return float(tolerance[0]), float(tolerance[1])
    return float(tolerance), float(tolerance)


def _axis_names(ndim):
    names = ["token", "dimension"]
    return ["batch row"] * (ndim - 2) + names if ndim >= 2 else names[-ndim:]


def _position_of(answer, claim, index):
    """`` (position [t, h, w])`` of the token at ``index`` (its last axis the
    dimension) when the answer or the claim gives positions."""
    positions = answer.get("positions")
    if positions is None:
        positions = claim.get("positions")
    if positions is None:
        return ""
    array = np.asarray(positions)
    if array.dtype == object:
        return ""
    token = index[:-1]
    if array.ndim == len(index):  # per row, with the component axis
        array = array[token]
    elif array.ndim in (1, 2):  # one list for every row
        array = array[token[-1]]
    else:
        return ""
    return f" (the claim's position {array.tolist()})"

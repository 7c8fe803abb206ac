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
"""
from .client import Client


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
    return assert_diagnosis_matches(client_or_url, "the table" if table is not None
                                    else "the encoding", table=table, embeddings=embeddings,
                                    encoded=encoded, scheme=scheme, params=params, **claim)


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

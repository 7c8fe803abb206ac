"""posenc.Client: /encode, /apply, /diagnose, /info and /healthz from Python,
numpy arrays in and out."""
import numpy as np

from . import _arrays
from ._transport import Transport
from .diagnosis import Diagnosis
from .errors import PosencError

_WEIGHT_NAMES = ("wq", "wk", "wv", "bq", "bk", "bv", "norm_weight", "norm_bias",
                 "position_table", "t5_bias", "token_embedding")
_DIAGNOSE_SUBJECTS = ("table", "embeddings", "encoded", "cos", "sin", "bias", "slopes",
                      "q", "k", "v")


class Result(dict):
    """An answer: the server's JSON object with every numeric array decoded to
    a float32 numpy array of its shape; keys read as attributes too
    (``result.encoded``, ``result.q``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _model_field(model):
    """A model name as is; an inline model object with its array weights (numpy,
    torch, lists) sent as base64 with ``<name>_shape`` siblings."""
    if not isinstance(model, dict):
        return model
    out = dict(model)
    weights = model.get("weights")
    if isinstance(weights, dict):
        sent = {}
        for name, value in weights.items():
            if name in _WEIGHT_NAMES and not isinstance(value, str):
                _arrays.put_array(sent, name, value)
            else:
                sent[name] = value
        out["weights"] = sent
    return out


class _Batch:
    """More than one leading batch axis, flattened to the single batch axis
    /encode and /apply take, and the answer's arrays shaped back."""

    def __init__(self, lead):
        self.lead = tuple(lead)
        self.rows = int(np.prod(self.lead)) if self.lead else 1

    @classmethod
    def of(cls, array, feature_axes):
        lead = array.shape[: max(array.ndim - feature_axes, 0)]
        return cls(lead) if len(lead) > 1 else None

    def flatten(self, array, feature_axes):
        return array.reshape((self.rows,) + array.shape[array.ndim - feature_axes:])

    def flatten_ints(self, value):
        """positions / attention_mask given per row: [*lead, tokens] -> [rows,
        tokens], triples or pairs [*lead, tokens, k] -> [rows, tokens, k]."""
        array = np.asarray(value)
        if array.dtype != object and array.ndim in (len(self.lead) + 1, len(self.lead) + 2):
            return array.reshape((self.rows,) + array.shape[len(self.lead):]).tolist()
        return value

    def restore(self, result):
        for key, value in result.items():
            if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == self.rows:
                result[key] = value.reshape(self.lead + value.shape[1:])
        shape = result.get("shape")
        if isinstance(shape, list) and shape and shape[0] == self.rows:  # /encode's
            result["shape"] = list(self.lead) + shape[1:]
        return result


def _put_embeddings(body, embeddings):
    """``embeddings`` into an /encode or /apply body as base64 with ``shape``
    (the name both contract versions take); returns the _Batch that flattened
    more than one leading axis, or None."""
    x = _arrays.as_float32(embeddings, "embeddings")
    batch = _Batch.of(x, 2)
    if batch:
        x = batch.flatten(x, 2)
    _arrays.put_array(body, "embeddings", x, shape_key="shape")
    return batch


class Client:
    """A posenc server at ``url`` (e.g. ``http://127.0.0.1:8080``).

    ``api_key`` is sent as ``Authorization: Bearer <key>``; ``timeout`` is
    the seconds each request may take. Answers are asked for in base64
    (``encoding="base64"``, exact float32 and compact) or JSON
    (``encoding="json"``); either way arrays come back as numpy float32.
    Every numeric input may be a numpy array, a torch tensor (when torch is
    installed; it is never required) or nested lists; it is sent as base64
    little-endian float32 with its shape.

    Positions are integers: one list for every row or one per row, and
    with ``params.mrope`` triples ``[t, h, w]`` (``[tokens, 3]`` or
    ``[batch, tokens, 3]``), with ``scheme="rope2d"`` pairs ``[row, col]``.
    ``positions_encoding="base64"`` sends them as float32 base64 with
    ``positions_shape`` (JSON when a value is past 2^24, where float32 stops
    holding every integer); the default sends JSON integers.

    Errors are raised as :class:`posenc.PosencError` (``status``, ``code``,
    ``message``, ``field``), and a server that cannot be reached as
    :class:`posenc.PosencConnectionError`.
    """

    def __init__(self, url="http://127.0.0.1:8080", api_key=None, timeout=60.0,
                 encoding="base64", positions_encoding="json"):
        if encoding not in ("base64", "json"):
            raise ValueError(f"encoding must be 'base64' or 'json', not {encoding!r}")
        if positions_encoding not in ("base64", "json"):
            raise ValueError("positions_encoding must be 'base64' or 'json', not "
                             f"{positions_encoding!r}")
        self._http = Transport(url, api_key, timeout)
        self.url = self._http.base_url
        self.encoding = encoding
        self.positions_encoding = positions_encoding

    def __repr__(self):
        return f"posenc.Client({self.url!r})"

    # ------------------------------------------------------------ requests
    def _claim(self, body, scheme, params, model, offset, positions, attention_mask, causal,
               embed_scale, batch=None, layout=None):
        """The claim fields common to /encode, /apply and /diagnose, those given
        (``layout``: mm_layout, merge, mm_rule and grid, those not None)."""
        if scheme is not None:
            body["scheme"] = scheme
        if params is not None:
            body["params"] = dict(params)
        if model is not None:
            body["model"] = _model_field(model)
        if offset is not None:
            body["offset"] = int(offset)
        if positions is not None:
            positions = _arrays.as_int_list(positions, "positions")
            _arrays.put_positions(body, batch.flatten_ints(positions) if batch else positions,
                                  self.positions_encoding == "base64")
        for key, value in (layout or {}).items():
            if value is not None:
                body[key] = _layout_field(key, value)
        if attention_mask is not None:
            mask = _arrays.as_int_list(attention_mask, "attention_mask")
            body["attention_mask"] = batch.flatten_ints(mask) if batch else mask
        if causal is not None:
            body["causal"] = bool(causal)
        if embed_scale is not None:
            body["embed_scale"] = float(embed_scale)
        body["encoding"] = self.encoding
        return body

    def _post(self, path, body, batch=None, extra=None):
        _merge(body, extra)
        result = Result(_arrays.decode_answer(self._http.request("POST", path, body)))
        if path != "/diagnose" and isinstance(result.get("positions"), list):
            result["positions"] = _arrays.as_int_array(result["positions"])
        return batch.restore(result) if batch else result

    def encode(self, embeddings=None, *, shape=None, scheme=None, params=None, model=None,
               offset=None, positions=None, attention_mask=None, causal=None,
               embed_scale=None, mm_layout=None, merge=None, mm_rule=None, grid=None,
               extra=None):
        """POST /encode: the positional encoding added to (sinusoidal, learned)
        or applied to (rope) ``embeddings`` ``[tokens, d]`` or ``[..., tokens,
        d]``; without embeddings, the bare table of ``shape``. ALiBi and T5
        answer ``bias`` instead of ``encoded``.

        Multimodal RoPE (``params={"mrope": {"section": [..], "style": ..}}``)
        takes ``[t, h, w]`` positions, or ``mm_layout`` (a list of ``{"text":
        n}``, ``{"image": [t, h, w]}``, ``{"video": [t, h, w],
        "seconds_per_grid": s}``) with ``mm_rule`` ("qwen" or "hf") and
        ``merge``; ``scheme="rope2d"`` (``params={"variant": ..}``) takes
        ``[row, col]`` positions or ``grid={"h": .., "w": .., "merge": ..}``.

        Returns a :class:`Result` (``.encoded`` or ``.bias``, ``.shape``,
        ``.scheme``, and ``.attention_factor`` where a scaling has one;
        ``.positions``, an int64 array ``[tokens, 3]``, for an ``mm_layout``).
        More than one leading batch axis is flattened into the one the server
        takes and the answer's arrays are shaped back. ``extra`` holds further
        request fields, sent as they are (for fields this client does not
        know yet).
        """
        body, batch = {}, None
        if embeddings is not None:
            batch = _put_embeddings(body, embeddings)
        elif shape is not None:
            shape = [int(n) for n in shape]
            if len(shape) > 3:
                batch = _Batch(shape[:-2])
                shape = [batch.rows] + shape[-2:]
            body["shape"] = shape
        else:
            raise TypeError("encode() needs embeddings or a shape")
        self._claim(body, scheme, params, model, offset, positions, attention_mask, causal,
                    embed_scale, batch, {"mm_layout": mm_layout, "merge": merge,
                                         "mm_rule": mm_rule, "grid": grid})
        return self._post("/encode", body, batch, extra)

    def apply(self, embeddings=None, *, token_ids=None, model=None, scheme=None, params=None,
              offset=None, positions=None, attention_mask=None, causal=None, embed_scale=None,
              return_=None, mm_layout=None, merge=None, mm_rule=None, extra=None):
        """POST /apply: position-aware q, k, v (and ``encoded``, ``bias``,
        ``scores`` if asked in ``return_``) of ``model`` (a loaded model's name,
        default ``default``, or an inline model object whose weights may be
        numpy arrays) for ``embeddings`` or ``token_ids``.

        Returns a :class:`Result` with ``.q``, ``.k``, ``.v`` ... as numpy
        arrays and ``.shape`` (batch, tokens, d_model, heads, kv_heads,
        head_dim). Batch axes, triple positions, ``mm_layout``, ``merge``,
        ``mm_rule`` (and the echoed ``.positions``) and ``extra`` as for
        :meth:`encode`.
        """
        body = {}
        batch = _put_embeddings(body, embeddings) if embeddings is not None else None
        if token_ids is not None:
            ids = _arrays.as_int_list(token_ids, "token_ids")
            if embeddings is None and np.ndim(ids) > 2:
                batch = _Batch(np.shape(ids)[:-1])
                ids = batch.flatten_ints(ids)
            body["token_ids"] = ids
        if return_ is not None:
            body["return"] = [return_] if isinstance(return_, str) else list(return_)
        self._claim(body, scheme, params, model, offset, positions, attention_mask, causal,
                    embed_scale, batch, {"mm_layout": mm_layout, "merge": merge,
                                         "mm_rule": mm_rule})
        return self._post("/apply", body, batch, extra)

    def diagnose(self, *, table=None, embeddings=None, encoded=None, cos=None, sin=None,
                 bias=None, slopes=None, q=None, k=None, v=None, token_ids=None, scheme=None,
                 params=None, model=None, offset=None, positions=None, attention_mask=None,
                 causal=None, embed_scale=None, tolerance=None, return_map=None, axes=None,
                 mm_layout=None, merge=None, mm_rule=None, grid=None):
        """POST /diagnose: compare what your code computed (the subject: one of
        ``table``; ``embeddings`` + ``encoded``; ``cos`` + ``sin``; ``bias``
        or ``slopes``; ``q``/``k``/``v`` with ``embeddings`` or ``token_ids``
        and a ``model``) with what it meant to compute (the claim: ``scheme``,
        ``params``, ``offset``/``positions``/``attention_mask``, ``model``,
        ``embed_scale``).

        ``tolerance`` is ``{"atol": .., "rtol": ..}``, a pair ``(atol, rtol)``
        or one number for both; ``return_map=True`` adds the error map;
        ``axes="bhtd"`` (contract 1.2) says that encoded/q/k/v are
        ``[batch, heads, tokens, head_dim]``. Subject arrays are sent with
        every axis they have (leading batch axes are a contract 1.2 feature).
        Claims with ``params.mrope`` take triple positions or ``mm_layout``,
        ``scheme="rope2d"`` pairs or ``grid`` (as for :meth:`encode`); a
        server whose /diagnose does not take them answers an error, raised as
        :class:`posenc.PosencError`.

        Returns a :class:`posenc.Diagnosis`.
        """
        subjects = {"table": table, "embeddings": embeddings, "encoded": encoded, "cos": cos,
                    "sin": sin, "bias": bias, "slopes": slopes, "q": q, "k": k, "v": v}
        body, sent = {}, {}
        for name in _DIAGNOSE_SUBJECTS:
            if subjects[name] is not None:
                sent[name] = _arrays.as_float32(subjects[name], name)
                # embeddings: `shape`, the name contract 1.1 and 1.2 both take
                _arrays.put_array(body, name, sent[name],
                                  shape_key="shape" if name == "embeddings" else None)
        if token_ids is not None:
            body["token_ids"] = _arrays.as_int_list(token_ids, "token_ids")
        if tolerance is not None:
            body["tolerance"] = _tolerance(tolerance)
        if return_map is not None:
            body["return_map"] = bool(return_map)
        if axes is not None:
            body["axes"] = axes
        self._claim(body, scheme, params, model, offset, positions, attention_mask, causal,
                    embed_scale, layout={"mm_layout": mm_layout, "merge": merge,
                                         "mm_rule": mm_rule, "grid": grid})
        answer = self._post("/diagnose", body)
        return Diagnosis(answer, request=body, subject=sent, client=self)

    # ------------------------------------------------------------ service
    def info(self):
        """GET /info: version, build, limits and the loaded models (a dict)."""
        return self._http.request("GET", "/info")

    def health(self):
        """GET /healthz: True while the server serves (raises otherwise)."""
        self._http.request("GET", "/healthz", want_json=False)
        return True

    def ready(self):
        """GET /readyz: True once the models are loaded, False while the
        server drains (503); raises for any other error."""
        try:
            self._http.request("GET", "/readyz", want_json=False)
        except PosencError as exc:
            if exc.status == 503:
                return False
            raise
        return True


def _layout_field(key, value):
    """mm_layout's segments with their grids as int lists (numpy welcome),
    grid as a dict of ints, merge an int, mm_rule as is."""
    if key == "mm_layout":
        return [{name: (_arrays.as_int_list(v, f"mm_layout.{name}")
                        if name != "seconds_per_grid" else float(v))
                 for name, v in dict(segment).items()} for segment in value]
    if key == "grid":
        return {name: int(v) for name, v in dict(value).items()}
    if key == "merge":
        return int(value)
    return value


def _merge(body, extra):
    """Further request fields, as given, except ``encoding``: the client's."""
    for key, value in (extra or {}).items():
        if key != "encoding":
            body[key] = value


def _tolerance(value):
    if isinstance(value, dict):
        return {key: float(v) for key, v in value.items()}
    if isinstance(value, (tuple, list)):
        atol, rtol = value
        return {"atol": float(atol), "rtol": float(rtol)}
    return {"atol": float(value), "rtol": float(value)}

"""Arrays on the wire: numpy (or torch) in, base64 little-endian float32 out,
and answers decoded back to numpy arrays with their shapes.

The contract (Conventions, "Array names and shapes") sends a numeric array
either as nested JSON numbers or as a base64 string of little-endian float32
values with its shape in a sibling field; a response array ``X`` written as
base64 comes with ``X_shape``.
"""
import base64
import binascii

import numpy as np


def _from_torch(value):
    """A torch tensor as a numpy array, without importing torch: anything with
    ``detach``/``cpu``/``numpy`` from a ``torch`` module. Floating tensors go
    through ``float()`` first, since numpy has no bfloat16."""
    if type(value).__module__.split(".")[0] != "torch":
        return value
    tensor = value.detach().cpu()
    if tensor.is_floating_point():
        tensor = tensor.float()
    return tensor.numpy()


def as_float32(value, name):
    """``value`` (numpy array, torch tensor, nested lists, scalar) as a C-ordered
    float32 numpy array. Raises TypeError naming the field when it is not
    numeric."""
    value = _from_torch(value)
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: not a numeric array ({exc})") from None
    return np.ascontiguousarray(array)


def as_int_list(value, name):
    """Integer data (positions, token_ids, attention_mask) as nested Python
    lists of int, from numpy, torch or lists. Raises TypeError naming the field
    for non-integer values."""
    value = _from_torch(value)
    try:
        array = np.asarray(value)
    except ValueError:  # ragged (numpy >= 1.24 refuses it): the server says which entry
        array = np.empty(0, dtype=object)
    if array.dtype == object:  # ragged or mixed (integers beside triples)
        return [as_int_list(row, name) for row in value]
    if array.size and not np.issubdtype(array.dtype, np.integer):
        if np.issubdtype(array.dtype, np.bool_):
            return array.astype(np.int64).tolist()
        if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise TypeError(f"{name}: not an integer array")
        return array.astype(np.int64).tolist()
    return array.tolist()


# float32 holds every integer up to 2^24 exactly: positions past it go as JSON.
_EXACT_INT_LIMIT = 1 << 24


def put_positions(body, positions, as_base64):
    """``positions`` (integer lists of any nesting, per-token triples
    ``[..., tokens, 3]`` or pairs included) into ``body``: nested JSON
    integers, or with ``as_base64`` float32 base64 with ``positions_shape``
    when the data is rectangular and every value is exact in float32."""
    if as_base64:
        array = np.asarray(positions)
        if (array.dtype != object and array.size and np.issubdtype(array.dtype, np.integer)
                and array.min() >= 0 and array.max() <= _EXACT_INT_LIMIT):
            put_array(body, "positions", array)
            return
    body["positions"] = positions


def as_int_array(value):
    """An answer's integer list (the echoed ``positions``) as an int64 array."""
    return np.asarray(value, dtype=np.int64)


def to_base64(array):
    """A float32 array as (base64 text, shape list): little-endian, C order,
    standard alphabet with padding (RFC 4648)."""
    data = np.ascontiguousarray(array, dtype="<f4").tobytes()
    return base64.b64encode(data).decode("ascii"), list(array.shape)


def from_base64(text, shape, name):
    """The inverse of to_base64; raises ValueError naming the field when the
    text or its length does not fit the shape."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{name}: malformed base64 in the answer ({exc})") from None
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(data) != 4 * count:
        raise ValueError(f"{name}: {len(data)} bytes of base64 for shape {list(shape)}")
    return np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(shape)


def put_array(body, name, value, shape_key=None):
    """Write ``value`` into the request ``body`` as base64 float32 under
    ``name``, with its shape under ``shape_key`` (default ``<name>_shape``)."""
    text, shape = to_base64(as_float32(value, name))
    body[name] = text
    body[shape_key or f"{name}_shape"] = shape


# Keys whose values are numeric arrays in a JSON (not base64) answer.
ARRAY_KEYS = frozenset({"encoded", "bias", "q", "k", "v", "scores", "error_map",
                        "cos", "sin", "table"})


def _decode_value(key, value, shape):
    if shape is not None and isinstance(value, str):
        return from_base64(value, shape, key)
    if isinstance(value, dict):
        return decode_answer(value, arrays=key in ARRAY_KEYS)
    if key in ARRAY_KEYS and isinstance(value, list):
        return np.asarray(value, dtype=np.float32)
    return value


def decode_answer(obj, arrays=False):
    """A response object with every array decoded to numpy: base64 strings with
    an ``X_shape`` sibling (the sibling is dropped) and, in JSON answers, the
    nested lists of the known array keys (with ``arrays``, every list: the
    per-array objects of ``error_map``)."""
    out = {}
    for key, value in obj.items():
        if key.endswith("_shape") and key[: -len("_shape")] in obj:
            continue
        shape = obj.get(f"{key}_shape")
        if arrays and isinstance(value, list):
            out[key] = np.asarray(value, dtype=np.float32)
        else:
            out[key] = _decode_value(key, value, shape)
    return out

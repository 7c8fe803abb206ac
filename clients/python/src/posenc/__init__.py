"""posenc: a Python client for the posenc positional-encoding service.

    import numpy as np, posenc
    client = posenc.Client("http://127.0.0.1:8080")
    table = client.encode(shape=[128, 64]).encoded           # sinusoidal PE
    rotated = client.encode(x, scheme="rope", params={"head_dim": 64}).encoded
    print(client.diagnose(cos=my_cos, sin=my_sin, scheme="rope",
                          params={"head_dim": 64}))

Arrays go out as base64 little-endian float32 and come back as numpy arrays;
errors are :class:`PosencError`. :mod:`posenc.testing` has assertions for a
port's own test suite.
"""
from .client import Client, Result
from .diagnosis import Diagnosis, Finding
from .errors import PosencConnectionError, PosencError, ReproduceError

__version__ = "1.3.0"
__all__ = ["Client", "Result", "Diagnosis", "Finding", "PosencError",
           "PosencConnectionError", "ReproduceError", "__version__"]

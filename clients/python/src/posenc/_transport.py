"""HTTP with the standard library only: one JSON request, one JSON answer,
errors mapped to PosencError."""
import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from .errors import PosencConnectionError, PosencError


def _json_default(value):
    """numpy scalars and arrays in a request (a base as np.float64, positions
    as np.int64 ...) as the Python numbers they hold."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _error_from_answer(status, raw, headers):
    """The PosencError of an error answer; a body that is not the contract's
    error object (a proxy's page, say) keeps its first 200 characters."""
    retry = headers.get("Retry-After") if headers is not None else None
    try:
        retry = float(retry) if retry is not None else None
    except ValueError:
        retry = None
    try:
        err = json.loads(raw)["error"]
        return PosencError(status, err.get("code", "error"), err.get("message", ""),
                           err.get("field"), retry)
    except (ValueError, KeyError, TypeError):
        text = raw.decode("utf-8", "replace").strip()[:200]
        return PosencError(status, "http_error", text or f"HTTP {status} with no body",
                           None, retry)


class Transport:
    """Requests to one server: ``base_url`` (``http://host:port``, with or
    without a path prefix), an optional bearer ``api_key`` and a timeout in
    seconds for each request."""

    def __init__(self, base_url, api_key=None, timeout=60.0):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def request(self, method, path, body=None, want_json=True):
        """Send one request; returns the decoded JSON answer (or the text with
        ``want_json=False``). Raises PosencError for an error status and
        PosencConnectionError when no answer came."""
        url = self.base_url + path
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, allow_nan=False, separators=(",", ":"),
                              default=_json_default).encode()
            headers["Content-Type"] = "application/json"
        if self.api_key is not None:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            raise _error_from_answer(exc.code, raw, exc.headers) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise PosencConnectionError(
                    "timeout", f"no answer from {url} within {self.timeout} s") from None
            raise PosencConnectionError("unreachable", f"cannot reach {url}: {reason}") from None
        except (socket.timeout, TimeoutError):
            raise PosencConnectionError(
                "timeout", f"no answer from {url} within {self.timeout} s") from None
        except (ConnectionError, OSError) as exc:  # reset or closed mid-answer
            raise PosencConnectionError("unreachable", f"connection to {url} failed: {exc}") \
                from None
        if not want_json:
            return raw.decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except ValueError:
            raise PosencError(200, "invalid_answer",
                              f"{url} answered with something that is not JSON: "
                              f"{raw[:200].decode('utf-8', 'replace')!r}") from None

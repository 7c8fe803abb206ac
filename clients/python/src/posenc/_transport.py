"""HTTP with the standard library only: one JSON request, one JSON answer,
errors mapped to PosencError.

It speaks through http.client (the layer under urllib.request) rather than
urlopen for one reason: the server says 413 (and 401) before it has read a
large body, then closes, so sending the rest fails with a broken pipe while
the answer is waiting to be read. urlopen reports only the broken pipe;
here the answer is read after it.
"""
import http.client
import json
import socket
import urllib.parse

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
    """Requests to one server: ``base_url`` (``http://host:port`` or https,
    with or without a path prefix), an optional bearer ``api_key`` and a
    timeout in seconds for each socket operation."""

    def __init__(self, base_url, api_key=None, timeout=60.0):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._parsed = parsed
        self._prefix = parsed.path.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def _connection(self):
        cls = http.client.HTTPSConnection if self._parsed.scheme == "https" \
            else http.client.HTTPConnection
        return cls(self._parsed.hostname, self._parsed.port, timeout=self.timeout)

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
        status, reason, raw, answer_headers = self._exchange(method, url, self._prefix + path,
                                                             headers, data)
        if status >= 400:
            raise _error_from_answer(status, raw, answer_headers)
        if not want_json:
            return raw.decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except ValueError:
            raise PosencError(status, "invalid_answer",
                              f"{url} answered {status} {reason} with something that is not "
                              f"JSON: {raw[:200].decode('utf-8', 'replace')!r}") from None

    def _exchange(self, method, url, target, headers, data):
        """(status, reason, body bytes, headers) of one exchange."""
        conn = self._connection()
        sent_error = None
        try:
            conn.putrequest(method, target or "/", skip_accept_encoding=True)
            for key, value in headers.items():
                conn.putheader(key, value)
            if data is not None:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders()
            if data is not None:
                try:
                    conn.send(data)
                except (BrokenPipeError, ConnectionResetError) as exc:
                    sent_error = exc  # answered early (413, 401) and closed: read it
            resp = conn.getresponse()
            return resp.status, resp.reason, resp.read(), resp.headers
        except (socket.timeout, TimeoutError):
            raise PosencConnectionError(
                "timeout", f"no answer from {url} within {self.timeout} s") from None
        except (OSError, http.client.HTTPException) as exc:
            what = f"{exc} (while sending the body: {sent_error})" if sent_error else exc
            raise PosencConnectionError("unreachable", f"cannot reach {url}: {what}") from None
        finally:
            conn.close()

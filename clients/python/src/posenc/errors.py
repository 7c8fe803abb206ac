"""The errors a posenc client raises."""


class PosencError(Exception):
    """An error answer of the server, as the contract writes it:
    ``{"error": {"code", "message", "field"}}`` with its HTTP ``status``.

    ``status`` is the HTTP status (None when no answer came), ``code`` the
    contract's snake_case code (``invalid_request``, ``invalid_shape``,
    ``unauthorized``, ...), ``message`` the server's words and ``field`` the
    JSON path of the field at fault, when one is. ``retry_after`` holds the
    seconds of a 503's ``Retry-After`` header, else None.
    """

    def __init__(self, status, code, message, field=None, retry_after=None):
        super().__init__(status, code, message, field)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after

    def __str__(self):
        where = f" (field {self.field})" if self.field else ""
        head = f"{self.status} {self.code}" if self.status is not None else self.code
        return f"{head}: {self.message}{where}"


class PosencConnectionError(PosencError, ConnectionError):
    """No answer: the server could not be reached, closed the connection, or
    did not answer within the timeout (``code`` is ``unreachable`` or
    ``timeout``; ``status`` is None)."""

    def __init__(self, code, message):
        PosencError.__init__(self, None, code, message)


class ReproduceError(ValueError):
    """Diagnosis.reproduce() cannot rebuild the subject: a finding names a
    variant the client does not know how to apply to /encode's answer."""

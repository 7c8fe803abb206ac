"""The answer of POST /diagnose: verdict, findings, the claim's errors and the
best variant, readable as text, and reproducible."""
import json


class Finding:
    """One difference between the subject and the claim: a stable ``code``
    (``layout_swapped``, ``base_mismatch``, ...), the server's ``message`` in
    words and numbers, and its ``evidence`` (a dict: the layout, base, offset
    ... found)."""

    def __init__(self, code, message, evidence=None):
        self.code = code
        self.message = message
        self.evidence = dict(evidence or {})

    @classmethod
    def from_answer(cls, obj):
        return cls(obj.get("code", ""), obj.get("message", ""), obj.get("evidence"))

    def __str__(self):
        return f"{self.code}: {self.message}"

    def __repr__(self):
        return f"Finding({self.code!r}, {self.message!r}, {self.evidence!r})"


def _number(x):
    if x is None:
        return "infinite"
    return f"{x:.3g}"


def _value(x):
    return f"{x:.7g}" if isinstance(x, (int, float)) else str(x)


def _params_text(params):
    parts = []
    for key, value in (params or {}).items():
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, (dict, list)) \
            else str(value)
        parts.append(f"{key} {text}")
    return ", ".join(parts)


def _variant_text(obj):
    """``rope (base 10000, head_dim 8, layout half), offset 1``."""
    text = str(obj.get("scheme", "?"))
    if obj.get("params"):
        text += f" ({_params_text(obj['params'])})"
    model = obj.get("model")
    if isinstance(model, str):
        text += f", model {model}"
    if "offset" in obj:
        text += f", offset {obj['offset']}"
    if "positions" in obj:
        text += f", positions {json.dumps(obj['positions'], separators=(',', ':'))}"
    if obj.get("embed_scale") not in (None, 1):
        text += f", embed_scale {obj['embed_scale']:g}"
    return text


class Diagnosis:
    """What /diagnose said about a subject.

    ``verdict`` is ``match``, ``explained`` or ``unexplained``; ``findings`` a
    list of :class:`Finding`; ``claimed`` the claim as the server read it with
    its errors (``max_abs_error``, ``max_rel_error``, ``mismatched``,
    ``worst``); ``best`` the variant that reproduces the subject (for
    ``unexplained``: the closest one tried); ``error_map`` the numpy error
    map(s) when asked for with ``return_map``; ``answer`` the whole decoded
    answer. ``str()`` gives the verdict and one line per finding.
    """

    def __init__(self, answer, request=None, subject=None, client=None):
        self.answer = answer
        self.verdict = answer.get("verdict")
        self.findings = [Finding.from_answer(f) for f in answer.get("findings") or []]
        self.claimed = answer.get("claimed") or {}
        self.best = answer.get("best") or {}
        self.error_map = answer.get("error_map")
        self.request = request or {}
        self.subject = subject or {}
        self._client = client

    @property
    def matches(self):
        """True when the verdict is ``match``."""
        return self.verdict == "match"

    @property
    def codes(self):
        """The findings' codes, in the server's order."""
        return [f.code for f in self.findings]

    def finding(self, code):
        """The finding with ``code``, or None."""
        return next((f for f in self.findings if f.code == code), None)

    def best_request(self):
        """``best`` without its error figures: the /encode (or /apply) fields of
        the variant found."""
        return {k: v for k, v in self.best.items()
                if k not in ("max_abs_error", "max_rel_error")}

    @property
    def truncated(self):
        """True when the server cut its search short (contract 1.2:
        ``evidence.truncated`` on a finding)."""
        return any(f.evidence.get("truncated") for f in self.findings)

    def __str__(self):
        lines = [self._headline()]
        lines += [f"  - {f}" for f in self.findings]
        if self.truncated:
            lines.append("  (the server cut its search short: the findings may be incomplete)")
        if self.verdict != "match" and self.best:
            label = "best" if self.verdict == "explained" else "closest variant tried"
            lines.append(f"  {label}: {_variant_text(self.best)} "
                         f"(max error {_number(self.best.get('max_abs_error'))})")
        return "\n".join(lines)

    def _headline(self):
        c = self.claimed
        claim = _variant_text(c) if c else "the claim"
        err = f"max error {_number(c.get('max_abs_error'))}"
        if self.verdict == "match":
            return f"match: {claim} reproduces the subject ({err})"
        frac = c.get("mismatched")
        outside = f", {100 * frac:.3g}% of values outside tolerance" if frac is not None else ""
        worst = c.get("worst") or {}
        at = ""
        if "index" in worst:
            at = (f"; worst at {worst.get('array') or ''}{worst['index']}: "
                  f"got {_value(worst.get('got'))}, want {_value(worst.get('want'))}")
        return f"{self.verdict}: the subject differs from {claim} ({err}{outside}{at})"

    def __repr__(self):
        return f"<Diagnosis {self.verdict} {self.codes}>"

    def reproduce(self):
        """Send ``best`` (with the subject's input) to /encode or /apply and
        return what it computes, shaped like the subject: an array for a
        ``table``, ``encoded``, ``bias`` or ``slopes`` subject; ``(cos, sin)``
        for a cos/sin cache; a dict of ``q``/``k``/``v`` arrays for a
        projection subject. Findings that no request can express
        (``transposed``, ``sin_cos_swapped``, ``rotation_reversed``,
        ``alibi_slopes``, a flipped ``alibi_form``, ``t5_direction``) are
        applied to the answer; for an ``unexplained`` verdict this is the
        closest variant tried. Raises :class:`posenc.ReproduceError` for a
        finding it cannot apply (``weights_permuted``, ``weights_transposed``,
        ``rotation_reversed`` on q/k). A table or cos/sin cache whose
        ``low_precision`` finding says its values were stored in float16 or
        bfloat16 (``stage: values``, contract 1.2) is rounded the same way."""
        if self._client is None:
            raise ValueError("this Diagnosis has no client to send best with")
        from ._reproduce import reproduce
        return reproduce(self, self._client)

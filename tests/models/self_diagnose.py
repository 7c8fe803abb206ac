"""/diagnose of /apply's own answer (contract 1.2, "One computation, one
place"): for every /apply the models suite sends that succeeds, the q, k
and v it returned go straight back to /diagnose with the same model and
input, and the verdict must be `match` with no finding. Installed on the
harness's Server by `install(checks)`, so every architecture fixture (layer
0 and later layers, token_ids and embeddings, padded batches with
attention_mask and causal) and every inline model the suite sends is
covered without listing them again."""
import harness

# What /apply takes that /diagnose does not (the arrays to return).
APPLY_ONLY = ("return",)
ARRAYS = ("q", "k", "v")


def _diagnose_body(body, answer):
    diag = {k: v for k, v in body.items() if k not in APPLY_ONLY}
    for name in ARRAYS:
        diag[name] = answer[name]
        if name + "_shape" in answer:
            diag[name + "_shape"] = answer[name + "_shape"]
    return diag


def round_trip(checks, srv, body, answer):
    """One /apply answer diagnosed against its own request: match with no
    finding, vision triples and mm_layout included."""
    if not all(name in answer for name in ARRAYS):
        st, answer = srv.request_raw("/apply", dict(body, **{"return": list(ARRAYS)}))
        if not checks.check(st == 200, f"self-diagnose: /apply q,k,v again: {st} {answer}"):
            return
    st, r = srv.request_raw("/diagnose", _diagnose_body(body, answer))
    model = body.get("model", "default")
    label = model if isinstance(model, str) else f"inline {model.get('scheme', '?')} model"
    keys = sorted(k for k in body if k not in ("model", "embeddings", "token_ids"))
    checks.check(st == 200 and r.get("verdict") == "match" and r.get("findings") == [],
                 f"/diagnose of /apply's own answer ({label}, {keys}) is match with no finding: "
                 f"{st} {str(r)[:400]}")


def install(checks):
    harness.Server.on_apply = lambda srv, body, answer: round_trip(checks, srv, body, answer)


def _inline(rng, scheme, params, norm=None, kv_heads=2, biases=False, tables=()):
    d, heads, hd = 16, 4, 4
    w = {"wq": rng.standard_normal((d, heads * hd)).round(3).tolist(),
         "wk": rng.standard_normal((d, kv_heads * hd)).round(3).tolist(),
         "wv": rng.standard_normal((d, kv_heads * hd)).round(3).tolist()}
    if biases:
        w.update(bq=rng.standard_normal(heads * hd).round(3).tolist(),
                 bk=rng.standard_normal(kv_heads * hd).round(3).tolist(),
                 bv=rng.standard_normal(kv_heads * hd).round(3).tolist())
    if norm:
        w["norm_weight"] = (1 + 0.1 * rng.standard_normal(d)).round(3).tolist()
        if norm == "layernorm":
            w["norm_bias"] = (0.1 * rng.standard_normal(d)).round(3).tolist()
    if "position_table" in tables:
        w["position_table"] = rng.standard_normal((32, d)).round(3).tolist()
    if "t5_bias" in tables:
        w["t5_bias"] = rng.standard_normal((32, heads)).round(3).tolist()
    if "token_embedding" in tables:
        w["token_embedding"] = rng.standard_normal((20, d)).round(3).tolist()
    m = {"d_model": d, "heads": heads, "kv_heads": kv_heads, "scheme": scheme, "params": params,
         "weights": w}
    if norm:
        m["norm"] = {"type": norm, "eps": 1e-5}
    return m


def inline_models(srv, rng):
    """One /apply per inline model kind: every scheme, both norms, grouped
    and full kv heads, biases, token_ids, a padded batch with causal. The
    installed hook diagnoses each answer."""
    x = rng.standard_normal((5, 16)).round(3).tolist()
    kinds = [
        ("sinusoidal", {"layout": "interleaved"}, dict(norm="layernorm", biases=True)),
        ("sinusoidal", {"layout": "split", "base": 500.0}, dict(kv_heads=4)),
        ("learned", {}, dict(tables=("position_table",), norm="rmsnorm")),
        ("rope", {"layout": "half"}, dict(norm="rmsnorm", biases=True)),
        ("rope", {"layout": "interleaved", "rotary_dim": 2, "base": 100.0}, dict(kv_heads=1)),
        ("rope", {"scaling": {"type": "linear", "factor": 2.0}}, {}),
        ("alibi", {}, dict(norm="layernorm")),
        ("t5", {"num_buckets": 32, "max_distance": 16}, dict(tables=("t5_bias",))),
        ("none", {}, dict(biases=True)),
    ]
    answered = 0
    for scheme, params, extra in kinds:
        m = _inline(rng, scheme, params, **extra)
        st, _ = srv.request("/apply", {"model": m, "embeddings": x})
        answered += st == 200
        st, _ = srv.request("/apply", {"model": m, "embeddings": [x, x[1:] + x[:1]],
                                       "attention_mask": [[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]],
                                       "causal": True, "return": ["q", "k", "v", "scores"]})
        answered += st == 200
    m = _inline(rng, "rope", {}, tables=("token_embedding",))
    st, _ = srv.request("/apply", {"model": m, "token_ids": [3, 1, 4, 1, 5], "offset": 7})
    answered += st == 200
    return answered, 2 * len(kinds) + 1

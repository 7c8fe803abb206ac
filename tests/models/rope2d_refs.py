"""/encode scheme rope2d (contract 1.3, "2-D RoPE of vision encoders") over
HTTP against numpy restatements of Hugging Face's vision rotary
embeddings: Qwen2-VL's VisionRotaryEmbedding with get_vision_position_ids'
block-major patch order, PixtralRotaryEmbedding, Llama 4's
Llama4VisionRotaryEmbedding (1-based, class token last and not turned) and
Gemma 4's apply_multidimensional_rope; the restatements were checked
against those functions executed in float64 torch. Also the grid's patch
order equals explicit [row, col] positions, and each refusal names its
field."""
import numpy as np

from harness import Server, sanitizer_clean
from mrope_refs import expect_refusal


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def grid_positions(variant, h, w, merge=1):
    """[row, col] of each patch in the variant's order; Llama 4's class
    token is None."""
    if variant == "qwen_vit":  # blocks of merge x merge, each row-major
        rows = np.arange(h).reshape(h // merge, merge, 1, 1).repeat(w // merge, 2).repeat(merge, 3)
        cols = np.arange(w).reshape(1, 1, w // merge, merge).repeat(h // merge, 0).repeat(merge, 1)
        pos = list(zip(rows.transpose(0, 2, 1, 3).ravel(), cols.transpose(0, 2, 1, 3).ravel()))
    else:
        pos = [(r, c) for r in range(h) for c in range(w)]
    pos = [[int(r), int(c)] for r, c in pos]
    return pos + [None] if variant == "llama4_vision" else pos


def rope2d_ref(x, pos, variant, head_dim, base):
    """x [tokens][d] rotated per head of head_dim by pos [tokens] of [row, col]
    (None: Llama 4's class token)."""
    x = np.asarray(x, np.float64)
    D = head_dim
    out = np.empty_like(x)
    for t, p in enumerate(pos):
        row, col = (0, 0) if p is None else p
        for h0 in range(0, x.shape[1], D):
            v = x[t, h0:h0 + D]
            if variant == "qwen_vit":
                f = 1.0 / base ** (np.arange(0, D // 2, 2) / (D // 2))
                ang = np.concatenate([row * f, col * f])
                emb = np.concatenate([ang, ang])
                out[t, h0:h0 + D] = v * np.cos(emb) + rotate_half(v) * np.sin(emb)
            elif variant == "pixtral":
                f = 1.0 / base ** (np.arange(0, D, 2) / D)
                ang = np.concatenate([row * f[::2], col * f[1::2]])
                emb = np.concatenate([ang, ang])
                out[t, h0:h0 + D] = v * np.cos(emb) + rotate_half(v) * np.sin(emb)
            elif variant == "llama4_vision":
                f = 1.0 / base ** (np.arange(0, D // 2, 2)[:D // 4] / (D // 2))
                ang = np.concatenate([(col + 1) * f, (row + 1) * f]) * (p is not None)
                z = (v[0::2] + 1j * v[1::2]) * np.exp(1j * ang)
                out[t, h0:h0 + D:2], out[t, h0 + 1:h0 + D:2] = z.real, z.imag
            else:  # gemma4_vision: one rotate-half rope per half, col then row
                f = 1.0 / base ** (np.arange(0, D // 2, 2) / (D // 2))
                for k, coord in enumerate((col, row)):
                    part = v[k * D // 2:(k + 1) * D // 2]
                    emb = np.concatenate([coord * f, coord * f])
                    out[t, h0 + k * D // 2:h0 + (k + 1) * D // 2] = (
                        part * np.cos(emb) + rotate_half(part) * np.sin(emb))
    return out


VARIANTS = ("qwen_vit", "pixtral", "llama4_vision", "gemma4_vision")


def _variant_checks(srv, C, rng):
    for variant in VARIANTS:
        base = 100.0 if variant == "gemma4_vision" else 10000.0
        h, w, merge = (4, 6, 2) if variant == "qwen_vit" else (3, 5, 1)
        pos = grid_positions(variant, h, w, merge)
        x = rng.standard_normal((len(pos), 32)).astype(np.float32)
        grid = {"h": h, "w": w} if merge == 1 else {"h": h, "w": w, "merge": merge}
        st, r = srv.request("/encode", {"scheme": "rope2d", "params": {"variant": variant,
                                                                       "head_dim": 16},
                                        "embeddings": x.tolist(), "grid": grid})
        if not C.check(st == 200, f"rope2d {variant} grid: status {st} {r}"):
            continue
        C.close(f"rope2d {variant} grid {h}x{w} (default base), two heads",
                r["encoded"], rope2d_ref(x, pos, variant, 16, base))
        if variant == "llama4_vision":
            C.check(np.array_equal(np.float32(r["encoded"][-1]), x[-1]),
                    "llama4_vision: the class token, last, is not turned (bit for bit)")
            pos = pos[:-1]
            x = x[:-1]
        coords = rng.integers(0, 500, (len(pos), 2)).tolist()
        st, e = srv.request("/encode", {"scheme": "rope2d",
                                        "params": {"variant": variant, "base": 321.0},
                                        "embeddings": x.tolist(), "positions": coords})
        C.check(st == 200, f"rope2d {variant} positions: {st}")
        C.close(f"rope2d {variant} explicit [row, col], base 321, whole-vector head",
                e.get("encoded", [[0]]), rope2d_ref(x, coords, variant, 32, 321.0))
        if variant != "llama4_vision":
            _, g = srv.request("/encode", {"scheme": "rope2d", "params": {"variant": variant},
                                           "embeddings": x.tolist(), "grid": grid})
            _, p = srv.request("/encode", {"scheme": "rope2d", "params": {"variant": variant},
                                           "embeddings": x.tolist(), "positions": pos})
            C.check(g.get("encoded") == p.get("encoded"),
                    f"rope2d {variant}: grid = its patch order sent as positions, bit for bit")


def _error_checks(srv, C):
    x = {"shape": [4, 8]}
    cases = [
        ({"params": {"variant": "pixtral"}}, 400, "positions"),
        ({"params": {"variant": "pixtral"}, "grid": {"h": 2, "w": 2},
          "positions": [[0, 0]] * 4}, 400, "grid"),
        ({"params": {}, "grid": {"h": 2, "w": 2}}, 400, "params.variant"),
        ({"params": {"variant": "vit"}, "grid": {"h": 2, "w": 2}}, 400, "params.variant"),
        ({"params": {"variant": "pixtral"}, "grid": {"h": 2, "w": 3}}, 422, "grid"),
        ({"params": {"variant": "pixtral"}, "grid": {"h": 2, "w": 2, "merge": 2}}, 422,
         "grid.merge"),
        ({"params": {"variant": "qwen_vit"}, "grid": {"h": 2, "w": 2, "merge": 3}}, 422,
         "grid.merge"),
        ({"params": {"variant": "qwen_vit", "head_dim": 6}, "grid": {"h": 2, "w": 2}}, 422,
         "params.head_dim"),
        ({"params": {"variant": "qwen_vit"}, "positions": [0, 1, 2, 3]}, 422, "positions"),
        ({"params": {"variant": "qwen_vit"}, "positions": [[0, 1]] * 3 + [[1, -1]]}, 422,
         "positions[3][1]"),
        ({"params": {"variant": "qwen_vit"}, "grid": {"h": 2, "w": 2}, "offset": 1}, 400,
         "offset"),
        ({"params": {"variant": "qwen_vit"}, "grid": {"h": 2}}, 400, "grid.w"),
        ({"scheme": "rope", "grid": {"h": 2, "w": 2}}, 400, "grid"),
    ]
    for extra, status, field in cases:
        body = dict({"scheme": "rope2d"}, **x, **extra)
        expect_refusal(C, f"rope2d refused {extra}", srv.request("/encode", body), status, field)
    pixtral = {"scheme": "rope2d", "params": {"variant": "pixtral"}}
    expect_refusal(C, "/apply refuses scheme rope2d",
                   srv.request_raw("/apply", dict(pixtral, embeddings=[[0.5] * 512] * 2,
                                                  positions=[[0, 0], [0, 1]])), 422, "scheme")
    expect_refusal(C, "/diagnose reads no rope2d claim on a table",
                   srv.request("/diagnose", dict(pixtral, table=[[0.5] * 8] * 4,
                                                 grid={"h": 2, "w": 2})), 400, "scheme")


def rope2d_checks(root, C):
    """Runs every check above against a fresh server."""
    del root
    rng = np.random.default_rng(44)
    with Server([]) as srv:
        _variant_checks(srv, C, rng)
        _error_checks(srv, C)
        C.check(srv.stop() == 0, "rope2d server exits 0")
        C.check(sanitizer_clean(srv.stderr()), f"rope2d server stderr clean: {srv.stderr()[-800:]}")

"""Independent numpy references for positions in more than one dimension:
multimodal RoPE's slot assignment, the positions mm_layout gives under each
rule, and the vision encoders' 2-D RoPE variants. Each is restated from
the contract's words, never from the client or the server."""
import numpy as np


def mrope_components(section, style):
    """Which component (0 = t, 1 = h, 2 = w) turns each frequency slot."""
    s_t, s_h, s_w = section
    slots = s_t + s_h + s_w
    out = np.zeros(slots, dtype=int)
    for j in range(slots):
        if style == "chunked":
            out[j] = 0 if j < s_t else 1 if j < s_t + s_h else 2
        elif style == "interleaved":
            out[j] = 1 if (j % 3 == 1 and j < 3 * s_h) else 2 if (j % 3 == 2 and j < 3 * s_w) else 0
        elif style == "ernie":
            out[j] = (1 if j % 2 == 0 else 2) if j < 2 * s_h else 0
        else:
            raise ValueError(style)
    return out


def rotate_half(x, angle):
    """Rotate-half RoPE of ``x`` [..., tokens, D] by ``angle`` [..., tokens, D/2]
    (pairs (i, i + D/2)), in float64."""
    x = np.asarray(x, np.float64)
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    cos, sin = np.cos(angle), np.sin(angle)
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def rotate_pairs(x, angle):
    """Adjacent-pair (complex) RoPE: pairs (2i, 2i + 1)."""
    x = np.asarray(x, np.float64)
    out = x.copy()
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = np.cos(angle), np.sin(angle)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = b * cos + a * sin
    return out


def mrope(x, positions, section, style, base=10000.0):
    """M-RoPE of ``x`` [..., tokens, D] (one head of D) at ``positions``
    [..., tokens, 3]: slot j turns by positions[component(j)]·base^(-2j/D)."""
    d = np.shape(x)[-1]
    inv_freq = base ** (-np.arange(d // 2, dtype=np.float64) * 2 / d)
    comp = mrope_components(section, style)
    pos = np.asarray(positions, np.float64)
    angle = np.take(pos, comp, axis=-1) * inv_freq  # [..., tokens, D/2]
    return rotate_half(x, angle)


def layout_positions(layout, rule, merge=2, tokens_per_second=2.0):
    """The [t, h, w] of every token of an mm_layout: text counts on from the
    start; a vision block [T, H, W] covers T frames of (H/merge)×(W/merge)
    tokens, each at (start + frame·interval, start + row, start + col). The
    start of the next segment: under "qwen" one past the largest position
    so far; under "hf" the start plus the text's length or, after a vision
    block, plus max(H, W)/merge."""
    rows, start, largest = [], 0, -1
    for seg in layout:
        if rule == "qwen":
            start = largest + 1
        if "text" in seg:
            n = seg["text"]
            p = np.arange(start, start + n)
            rows.append(np.stack([p, p, p], axis=1))
            largest = max(largest, start + n - 1)
            start += n
            continue
        t, h, w = seg.get("image", seg.get("video"))
        interval = 1
        if "seconds_per_grid" in seg:
            interval = tokens_per_second * int(seg["seconds_per_grid"])
        frame, row, col = np.meshgrid(np.arange(t), np.arange(h // merge), np.arange(w // merge),
                                      indexing="ij")
        block = np.stack([start + frame * interval, start + row, start + col], axis=-1)
        block = block.reshape(-1, 3)
        rows.append(block)
        largest = max(largest, int(block.max()))
        start += max(h, w) // merge
    return np.concatenate(rows).astype(np.int64)


def grid_pairs(variant, h, w, merge=1):
    """[row, col] of every patch of an h × w grid in the variant's order:
    qwen_vit block-major over merge × merge blocks (row-major inside a
    block), the others row-major."""
    if variant != "qwen_vit":
        r, c = np.divmod(np.arange(h * w), w)
        return np.stack([r, c], axis=1)
    out = []
    for br in range(h // merge):
        for bc in range(w // merge):
            for ir in range(merge):
                for ic in range(merge):
                    out.append((br * merge + ir, bc * merge + ic))
    return np.array(out)


def rope2d(x, pairs, variant, base=None):
    """The vision encoders' 2-D RoPE of ``x`` [tokens, D] at [row, col] pairs."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    row, col = (np.asarray(pairs, np.float64)[:, k:k + 1] for k in (0, 1))
    if variant == "qwen_vit":
        f = (base or 10000.0) ** (-4.0 * np.arange(d // 4) / d)
        return rotate_half(x, np.concatenate([row * f, col * f], axis=1))
    if variant == "pixtral":
        f = (base or 10000.0) ** (-2.0 * np.arange(d // 2) / d)
        return rotate_half(x, np.concatenate([row * f[0::2], col * f[1::2]], axis=1))
    if variant == "llama4_vision":
        f = (base or 10000.0) ** (-4.0 * np.arange(d // 4) / d)
        return rotate_pairs(x, np.concatenate([(col + 1) * f, (row + 1) * f], axis=1))
    if variant == "gemma4_vision":
        half = d // 2
        f = (base or 100.0) ** (-2.0 * np.arange(half // 2) / half)
        return np.concatenate([rotate_half(x[:, :half], col * f),
                               rotate_half(x[:, half:], row * f)], axis=1)
    raise ValueError(variant)

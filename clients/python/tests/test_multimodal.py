"""Positions in more than one dimension through posenc.Client against the
real server: M-RoPE with [t, h, w] triples (JSON and base64, shared and per
row), mm_layout under both rules with the echoed positions, the vision
encoders' 2-D RoPE with pairs and grids, and /diagnose's answer to an M-RoPE
claim passed through as PosencError. References: multimodal_refs.py."""
import unittest

import numpy as np

import multimodal_refs as ref
import posenc
import support
from test_client import close

SECTION = [2, 3, 3]  # rotary_dim 16
STYLES = ("chunked", "interleaved", "ernie")
ERNIE_SECTION = [2, 3, 3]  # s_h = s_w


def mrope_params(style, section=SECTION):
    return {"head_dim": 16, "mrope": {"section": list(section), "style": style}}


class Spy:
    """Records the bodies the client sends (wraps its transport)."""

    def __init__(self, client):
        self.bodies = []
        inner = client._http.request

        def request(method, path, body=None, **kw):
            self.bodies.append(body)
            return inner(method, path, body, **kw)
        client._http.request = request


class MropeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())
        cls.rng = np.random.default_rng(41)

    def triples(self, *lead):
        return self.rng.integers(0, 50, size=lead + (3,))

    def test_components_of_the_styles(self):
        # the contract's own examples restated: slot -> component
        self.assertEqual(ref.mrope_components([2, 3, 3], "chunked").tolist(),
                         [0, 0, 1, 1, 1, 2, 2, 2])
        self.assertEqual(ref.mrope_components([2, 3, 3], "interleaved").tolist(),
                         [0, 1, 2, 0, 1, 2, 0, 1])
        self.assertEqual(ref.mrope_components([2, 3, 3], "ernie").tolist(),
                         [1, 2, 1, 2, 1, 2, 0, 0])

    def test_triples_each_style_as_json(self):
        x = self.rng.standard_normal((7, 32)).astype(np.float32)
        pos = self.triples(7)
        for style in STYLES:
            with self.subTest(style=style):
                r = self.client.encode(x, scheme="rope", params=mrope_params(style),
                                       positions=pos)
                want = np.concatenate([ref.mrope(x[:, :16], pos, SECTION, style),
                                       ref.mrope(x[:, 16:], pos, SECTION, style)], axis=1)
                close(self, r.encoded, want, atol=3e-6)

    def test_text_triples_are_1d_rope(self):
        x = self.rng.standard_normal((5, 16)).astype(np.float32)
        p = np.array([0, 3, 4, 9, 100])
        r = self.client.encode(x, scheme="rope", params=mrope_params("interleaved"),
                               positions=np.stack([p, p, p], axis=1).tolist())
        close(self, r.encoded, support.rope(x, 16, positions=p), atol=3e-6)

    def test_batched_triples_as_base64_with_positions_shape(self):
        client = posenc.Client(support.url(), positions_encoding="base64")
        spy = Spy(client)
        x = self.rng.standard_normal((2, 6, 16)).astype(np.float32)
        pos = self.triples(2, 6)
        r = client.encode(x, scheme="rope", params=mrope_params("chunked"), positions=pos)
        self.assertEqual(spy.bodies[-1]["positions_shape"], [2, 6, 3])
        self.assertIsInstance(spy.bodies[-1]["positions"], str)
        close(self, r.encoded, ref.mrope(x, pos, SECTION, "chunked"), atol=3e-6)
        # one [tokens, 3] list for every row
        shared = self.triples(6)
        r = client.encode(x, scheme="rope", params=mrope_params("ernie", ERNIE_SECTION),
                          positions=shared)
        self.assertEqual(spy.bodies[-1]["positions_shape"], [6, 3])
        close(self, r.encoded, ref.mrope(x, np.broadcast_to(shared, (2, 6, 3)), ERNIE_SECTION,
                                         "ernie"), atol=3e-6)

    def test_base64_falls_back_to_json_past_float32_integers(self):
        client = posenc.Client(support.url(), positions_encoding="base64")
        spy = Spy(client)
        x = self.rng.standard_normal((2, 16)).astype(np.float32)
        pos = [[(1 << 24) + 1, 5, 6], [3, 4, 5]]
        r = client.encode(x, scheme="rope", params=mrope_params("chunked"), positions=pos)
        self.assertEqual(spy.bodies[-1]["positions"], pos)
        self.assertNotIn("positions_shape", spy.bodies[-1])
        close(self, r.encoded, ref.mrope(x, pos, SECTION, "chunked"), atol=3e-6)

    def test_more_batch_axes_with_triples(self):
        x = self.rng.standard_normal((2, 3, 4, 16)).astype(np.float32)
        pos = self.triples(2, 3, 4)
        r = self.client.encode(x, scheme="rope", params=mrope_params("interleaved"),
                               positions=pos)
        self.assertEqual(r.encoded.shape, (2, 3, 4, 16))
        close(self, r.encoded, ref.mrope(x, pos, SECTION, "interleaved"), atol=3e-6)

    def test_bad_triple_names_the_field(self):
        with self.assertRaises(posenc.PosencError) as ctx:
            self.client.encode(shape=[2, 16], scheme="rope", params=mrope_params("chunked"),
                               positions=[[1, 2], [3, 4, 5]])
        self.assertEqual(ctx.exception.status, 400)
        self.assertEqual(ctx.exception.field, "positions[0]")


# the video's 4 frames reach further on t than its side of 2: the rules differ after it
LAYOUT = [{"text": 3}, {"image": [1, 4, 6]}, {"text": 2}, {"video": [4, 4, 4]},
          {"text": 2}]
LAYOUT_TOKENS = 3 + 6 + 2 + 16 + 2


class LayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())
        cls.rng = np.random.default_rng(43)

    def test_reference_rules_by_hand(self):
        # a 2 x 2 merged image after 2 text tokens, then 1 text token
        layout = [{"text": 2}, {"image": [1, 4, 4]}, {"text": 1}]
        self.assertEqual(ref.layout_positions(layout, "qwen").tolist(),
                         [[0, 0, 0], [1, 1, 1], [2, 2, 2], [2, 2, 3], [2, 3, 2], [2, 3, 3],
                          [4, 4, 4]])
        self.assertEqual(ref.layout_positions(layout, "hf")[-1].tolist(), [4, 4, 4])
        wide = [{"image": [1, 2, 8]}, {"text": 1}]  # max(h, w)/merge = 4 > one past 3
        self.assertEqual(ref.layout_positions(wide, "qwen")[-1].tolist(), [4, 4, 4])
        tall = [{"image": [3, 2, 2]}, {"text": 1}]  # frames reach t = 2, side 1
        self.assertEqual(ref.layout_positions(tall, "qwen")[-1].tolist(), [3, 3, 3])
        self.assertEqual(ref.layout_positions(tall, "hf")[-1].tolist(), [1, 1, 1])

    def test_layout_under_both_rules_encodes_and_echoes(self):
        x = self.rng.standard_normal((LAYOUT_TOKENS, 16)).astype(np.float32)
        for rule in ("qwen", "hf"):
            with self.subTest(rule=rule):
                r = self.client.encode(x, scheme="rope", params=mrope_params("chunked"),
                                       mm_layout=LAYOUT, mm_rule=rule)
                want = ref.layout_positions(LAYOUT, rule)
                self.assertEqual(r.positions.dtype, np.int64)
                np.testing.assert_array_equal(r.positions, want)
                close(self, r.encoded, ref.mrope(x, want, SECTION, "chunked"), atol=3e-6)
        self.assertFalse(np.array_equal(ref.layout_positions(LAYOUT, "qwen"),
                                        ref.layout_positions(LAYOUT, "hf")))

    def test_merge_and_seconds_per_grid(self):
        layout = [{"text": 1}, {"video": np.array([3, 3, 3]), "seconds_per_grid": 2.7},
                  {"text": 2}]
        x = self.rng.standard_normal((1 + 27 + 2, 16)).astype(np.float32)
        r = self.client.encode(x, scheme="rope",
                               params=dict(mrope_params("interleaved"), tokens_per_second=3),
                               mm_layout=layout, merge=1, mm_rule="qwen")
        want = ref.layout_positions(layout, "qwen", merge=1, tokens_per_second=3)
        self.assertEqual(want[-2].tolist(), [14, 14, 14])  # frames at 1, 7, 13
        np.testing.assert_array_equal(r.positions, want)
        close(self, r.encoded, ref.mrope(x, want, SECTION, "interleaved"), atol=3e-6)

    def test_layout_equals_explicit_positions_and_serves_a_json_answer(self):
        json_client = posenc.Client(support.url(), encoding="json")
        x = self.rng.standard_normal((2, LAYOUT_TOKENS, 16)).astype(np.float32)
        by_layout = json_client.encode(x, scheme="rope", params=mrope_params("ernie"),
                                       mm_layout=LAYOUT, mm_rule="hf")
        # the contract's [tokens, 3]: the layout is every row's (no mask)
        self.assertEqual(by_layout.positions.shape, (LAYOUT_TOKENS, 3))
        np.testing.assert_array_equal(by_layout.positions, ref.layout_positions(LAYOUT, "hf"))
        explicit = json_client.encode(x, scheme="rope", params=mrope_params("ernie"),
                                      positions=by_layout.positions)
        np.testing.assert_array_equal(by_layout.encoded, explicit.encoded)

    def test_apply_with_a_layout(self):
        x = self.rng.standard_normal((LAYOUT_TOKENS, 512)).astype(np.float32)
        params = {"mrope": {"section": [8, 12, 12], "style": "chunked"}}
        r = self.client.apply(x, scheme="rope", params=params, mm_layout=LAYOUT, mm_rule="qwen",
                              return_=["q", "k"])
        np.testing.assert_array_equal(r.positions, ref.layout_positions(LAYOUT, "qwen"))
        again = self.client.apply(x, scheme="rope", params=params, positions=r.positions,
                                  return_=["q", "k"])
        np.testing.assert_array_equal(r.q, again.q)
        text = self.client.apply(x, scheme="rope", params=params,
                                 positions=np.arange(LAYOUT_TOKENS), return_=["q"])
        self.assertGreater(float(np.abs(r.q - text.q).max()), 1e-3)

    def test_layout_errors_pass_through(self):
        with self.assertRaises(posenc.PosencError) as ctx:
            self.client.encode(shape=[LAYOUT_TOKENS, 16], scheme="rope",
                               params=mrope_params("chunked"), mm_layout=LAYOUT)
        self.assertEqual((ctx.exception.status, ctx.exception.field), (400, "mm_rule"))
        with self.assertRaises(posenc.PosencError) as ctx:
            self.client.encode(shape=[LAYOUT_TOKENS, 16], scheme="rope",
                               params=mrope_params("chunked"), mm_layout=LAYOUT, mm_rule="qwen",
                               offset=2)
        self.assertEqual(ctx.exception.field, "offset")


class Rope2dTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())
        cls.rng = np.random.default_rng(47)

    def test_pairs_each_variant(self):
        x = self.rng.standard_normal((6, 16)).astype(np.float32)
        pairs = self.rng.integers(0, 30, size=(6, 2))
        for variant in ("qwen_vit", "pixtral", "llama4_vision", "gemma4_vision"):
            with self.subTest(variant=variant):
                r = self.client.encode(x, scheme="rope2d", params={"variant": variant},
                                       positions=pairs)
                close(self, r.encoded, ref.rope2d(x, pairs, variant), atol=3e-6)

    def test_grid_orders(self):
        for variant, grid in (("qwen_vit", {"h": 4, "w": 6, "merge": 2}),
                              ("pixtral", {"h": 3, "w": 5}), ("gemma4_vision", {"h": 2, "w": 3})):
            with self.subTest(variant=variant):
                n = grid["h"] * grid["w"]
                x = self.rng.standard_normal((n, 32)).astype(np.float32)
                r = self.client.encode(x, scheme="rope2d",
                                       params={"variant": variant, "head_dim": 16}, grid=grid)
                pairs = ref.grid_pairs(variant, grid["h"], grid["w"], grid.get("merge", 1))
                want = np.concatenate([ref.rope2d(x[:, :16], pairs, variant),
                                       ref.rope2d(x[:, 16:], pairs, variant)], axis=1)
                close(self, r.encoded, want, atol=3e-6)

    def test_llama4_grid_appends_an_unturned_class_token(self):
        x = self.rng.standard_normal((3 * 4 + 1, 16)).astype(np.float32)
        r = self.client.encode(x, scheme="rope2d", params={"variant": "llama4_vision"},
                               grid={"h": 3, "w": 4})
        pairs = ref.grid_pairs("llama4_vision", 3, 4)
        close(self, r.encoded[:-1], ref.rope2d(x[:-1], pairs, "llama4_vision"), atol=3e-6)
        np.testing.assert_array_equal(r.encoded[-1], x[-1])


class DiagnoseClaimTest(unittest.TestCase):
    """/diagnose of an M-RoPE claim: what the server answers comes back
    through the client, a verdict as a Diagnosis or a refusal as the typed
    PosencError with the server's status, code, field and words."""

    def test_mrope_claim(self):
        client = posenc.Client(support.url())
        rng = np.random.default_rng(53)
        x = rng.standard_normal((6, 16)).astype(np.float32)
        pos = rng.integers(0, 20, size=(6, 3))
        right = ref.mrope(x, pos, SECTION, "chunked")
        try:
            d = client.diagnose(embeddings=x, encoded=right, scheme="rope",
                                params=mrope_params("chunked"), positions=pos)
        except posenc.PosencError as exc:  # a server that does not diagnose M-RoPE yet
            self.assertEqual((exc.status, exc.code, exc.field),
                             (400, "invalid_request", "params.mrope"))
            self.assertIn("mrope", exc.message)
            return
        self.assertEqual(d.verdict, "match")  # a server that does: the claim is right
        wrong = ref.mrope(x, pos, SECTION, "interleaved")
        d = client.diagnose(embeddings=x, encoded=wrong, scheme="rope",
                            params=mrope_params("chunked"), positions=pos)
        self.assertFalse(d.matches)

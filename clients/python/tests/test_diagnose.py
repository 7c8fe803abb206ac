"""Client.diagnose and Diagnosis.reproduce against the real server: each
subject computed wrongly in numpy on purpose must give the expected finding,
and reproduce() must give back the subject."""
import unittest

import numpy as np

import posenc
import support


class DiagnoseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())
        cls.rng = np.random.default_rng(7)

    def assert_reproduces(self, diagnosis, subject, atol=1e-4):
        got = diagnosis.reproduce()
        pairs = zip(got, subject) if isinstance(subject, tuple) else [(got, subject)]
        for g, s in pairs:
            self.assertEqual(np.shape(g), np.shape(s))
            self.assertLessEqual(float(np.abs(np.asarray(g, np.float64) - s).max()), atol)

    def test_interleaved_rope_claimed_half(self):
        x = self.rng.standard_normal((12, 32)).astype(np.float32)
        encoded = support.rope(x, 8, layout="interleaved")
        d = self.client.diagnose(embeddings=x, encoded=encoded, scheme="rope",
                                 params={"head_dim": 8})
        self.assertEqual(d.verdict, "explained")
        self.assertEqual(d.codes, ["layout_swapped"])
        f = d.finding("layout_swapped")
        self.assertEqual(f.evidence["layout"], "interleaved")
        self.assertEqual(d.best["params"]["layout"], "interleaved")
        self.assertGreater(d.claimed["max_abs_error"], 0.5)
        self.assertFalse(d.matches)
        self.assert_reproduces(d, encoded)
        text = str(d)
        self.assertTrue(text.startswith("explained: "), text)
        self.assertIn("layout_swapped: ", text.splitlines()[1])
        self.assertIn("interleaved", text.splitlines()[1])
        self.assertIn("best: rope (", text)

    def test_wrong_base_and_layout_together(self):
        x = self.rng.standard_normal((16, 16)).astype(np.float32)
        encoded = support.rope(x, 16, base=500000.0, layout="interleaved")
        d = self.client.diagnose(embeddings=x, encoded=encoded, scheme="rope",
                                 params={"head_dim": 16})
        self.assertEqual(d.verdict, "explained")
        self.assertEqual(sorted(d.codes), ["base_mismatch", "layout_swapped"])
        self.assertAlmostEqual(d.finding("base_mismatch").evidence["base"], 500000, delta=1)
        self.assert_reproduces(d, encoded)

    def test_rotation_reversed_partial_rotary(self):
        x = self.rng.standard_normal((9, 16)).astype(np.float32)
        encoded = x.astype(np.float64)
        for start in (0, 8):  # heads of 8, the first 4 channels rotated by -theta
            encoded[:, start:start + 4] = support.rope(x[:, start:start + 4], 4,
                                                       positions=-np.arange(9))
        d = self.client.diagnose(embeddings=x, encoded=encoded, scheme="rope",
                                 params={"head_dim": 8, "rotary_dim": 4})
        self.assertEqual(d.codes, ["rotation_reversed"])
        self.assert_reproduces(d, encoded)

    def test_correct_rope_matches(self):
        x = self.rng.standard_normal((5, 8)).astype(np.float32)
        d = self.client.diagnose(embeddings=x, encoded=support.rope(x, 8), scheme="rope",
                                 params={"head_dim": 8})
        self.assertEqual(d.verdict, "match")
        self.assertTrue(d.matches)
        self.assertTrue(str(d).startswith("match: "))

    def test_repeat_interleave_cache(self):
        cos, sin = support.hf_cos_sin(10, 8, interleaved=True)
        d = self.client.diagnose(cos=cos, sin=sin, scheme="rope", params={"head_dim": 8})
        self.assertEqual(d.codes, ["layout_swapped"])
        self.assert_reproduces(d, (cos, sin))

    def test_vllm_cache_with_offset(self):
        angle = support.rope_angles(np.arange(1, 9), 16)  # positions start at 1
        cos, sin = np.cos(angle), np.sin(angle)
        d = self.client.diagnose(cos=cos, sin=sin, scheme="rope", params={"head_dim": 16})
        self.assertEqual(d.codes, ["position_offset"])
        self.assertEqual(d.finding("position_offset").evidence["offset"], 1)
        self.assert_reproduces(d, (cos, sin))

    def test_cache_rotation_reversed(self):
        cos, sin = support.hf_cos_sin(7, 8)
        d = self.client.diagnose(cos=cos, sin=-sin, scheme="rope", params={"head_dim": 8})
        self.assertEqual(d.codes, ["rotation_reversed"])
        self.assert_reproduces(d, (cos, -sin))

    def test_table_split_layout_offset_one(self):
        table = support.sinusoidal(40, 16, offset=1, layout="split")
        d = self.client.diagnose(table=table, params={"layout": "interleaved"})
        self.assertEqual(sorted(d.codes), ["layout_swapped", "position_offset"])
        self.assertEqual(d.best.get("offset"), 1)
        self.assert_reproduces(d, table)

    def test_table_transposed(self):
        table = support.sinusoidal(12, 8)
        d = self.client.diagnose(table=table.T)
        self.assertEqual(d.codes, ["transposed"])
        self.assert_reproduces(d, table.T)

    def test_table_sin_cos_swapped(self):
        table = support.sinusoidal(10, 8)[:, [1, 0, 3, 2, 5, 4, 7, 6]]
        d = self.client.diagnose(table=table)
        self.assertEqual(d.codes, ["sin_cos_swapped"])
        self.assert_reproduces(d, table)

    def test_embed_scale(self):
        x = self.rng.standard_normal((6, 8)).astype(np.float32)
        encoded = np.sqrt(8) * x + support.sinusoidal(6, 8)
        d = self.client.diagnose(embeddings=x, encoded=encoded)
        self.assertEqual(d.codes, ["embed_scale"])
        self.assertAlmostEqual(d.best["embed_scale"], np.sqrt(8), places=4)
        self.assert_reproduces(d, encoded)

    def test_alibi_power_of_two_slopes_for_12_heads(self):
        slopes = 2.0 ** (-8.0 * np.arange(1, 13) / 16)  # the formula for 16 heads
        d = self.client.diagnose(slopes=slopes, scheme="alibi")
        self.assertEqual(d.codes, ["alibi_slopes"])
        self.assert_reproduces(d, slopes, atol=1e-7)

    def test_alibi_bias_one_slope_wrong_sign_flipped(self):
        pos = np.arange(6)
        slopes = support.alibi_slopes(4)
        slopes[2] *= 3
        bias = slopes[:, None, None] * np.abs(pos[:, None] - pos[None, :])  # +, not -
        d = self.client.diagnose(bias=bias, scheme="alibi")
        self.assertEqual(sorted(d.codes), ["alibi_form", "alibi_slopes"])
        self.assertEqual(d.finding("alibi_form").evidence["sign"], -1)
        self.assert_reproduces(d, bias, atol=1e-6)

    def test_t5_direction(self):
        table = self.rng.standard_normal((32, 2)).astype(np.float32)
        model = {"d_model": 4, "heads": 2, "scheme": "t5",
                 "weights": {"wq": np.eye(4), "wk": np.eye(4), "wv": np.eye(4),
                             "t5_bias": table}}
        bias = self.client.encode(shape=[5, 4], model=model).bias
        d = self.client.diagnose(bias=np.swapaxes(bias, 1, 2), model=model)
        self.assertEqual(d.codes, ["t5_direction"])
        self.assert_reproduces(d, np.swapaxes(bias, 1, 2), atol=0)

    def test_projections_of_an_inline_model(self):
        d_model, heads, hd = 8, 2, 4
        w = {name: self.rng.standard_normal((d_model, d_model)).astype(np.float32)
             for name in ("wq", "wk", "wv")}
        model = {"d_model": d_model, "heads": heads, "scheme": "rope", "weights": w}
        x = self.rng.standard_normal((5, d_model)).astype(np.float32)
        x64 = x.astype(np.float64)
        q = support.rope(x64 @ w["wq"], hd, positions=np.arange(3, 8), layout="interleaved")
        k = support.rope(x64 @ w["wk"], hd, positions=np.arange(3, 8), layout="interleaved")
        d = self.client.diagnose(q=q, k=k, embeddings=x, model=model, offset=3)
        self.assertEqual(d.verdict, "explained")
        self.assertEqual(d.codes, ["layout_swapped"])
        got = d.reproduce()
        self.assertEqual(sorted(got), ["k", "q"])
        self.assertLessEqual(np.abs(got["q"] - q).max(), 1e-4)
        self.assertLessEqual(np.abs(got["k"] - k).max(), 1e-4)

    def test_projection_mismatch_is_unexplained(self):
        x = self.rng.standard_normal((3, 512)).astype(np.float32)
        v = self.client.apply(x, return_="v").v * 1.5
        d = self.client.diagnose(v=v, embeddings=x)
        self.assertEqual(d.verdict, "unexplained")
        self.assertIn("projection_mismatch", d.codes)
        self.assertIn("closest variant tried", str(d))

    def test_error_map_decoded(self):
        cos, sin = support.hf_cos_sin(4, 8, interleaved=True)
        d = self.client.diagnose(cos=cos, sin=sin, scheme="rope", params={"head_dim": 8},
                                 return_map=True)
        self.assertEqual(d.error_map["cos"].shape, (4, 8))
        want, _ = support.hf_cos_sin(4, 8)
        np.testing.assert_allclose(d.error_map["cos"], np.abs(cos - want), atol=1e-6)

    def test_tolerance_forms(self):
        x = self.rng.standard_normal((4, 8)).astype(np.float32)
        encoded = support.rope(x, 8) + 1e-3
        for tol, matches in ((1e-2, True), ((1e-5, 0), False), ({"atol": 1e-2, "rtol": 0}, True)):
            d = self.client.diagnose(embeddings=x, encoded=encoded, scheme="rope",
                                     params={"head_dim": 8}, tolerance=tol)
            self.assertEqual(d.matches, matches, tol)


class ReproduceLimitsTest(unittest.TestCase):
    def test_finding_that_cannot_be_applied(self):
        answer = {"verdict": "explained", "claimed": {}, "best": {"scheme": "rope"},
                  "findings": [{"code": "weights_permuted", "message": "m", "evidence": {}}]}
        d = posenc.Diagnosis(answer, request={}, subject={"q": np.zeros((1, 4))},
                             client=posenc.Client("http://127.0.0.1:9"))
        with self.assertRaises(posenc.ReproduceError) as ctx:
            d.reproduce()
        self.assertIn("weights_permuted", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()

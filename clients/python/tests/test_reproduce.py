"""Diagnosis.reproduce() on answers shaped as contract 1.2 writes them
(batch axes, per-row positions, ``axes: bhtd``, half-precision values),
which the server under test may not give yet: the answer is written here,
``best`` is sent to the real server's /encode, and the result is checked
against numpy."""
import unittest

import numpy as np

import posenc
import support
from posenc import _reproduce


def diagnosis(best, subject, findings=(), request=None):
    answer = {"verdict": "explained", "claimed": {"scheme": best.get("scheme")},
              "findings": [{"code": c, "message": m, "evidence": e} for c, m, e in findings],
              "best": dict(best, max_abs_error=0, max_rel_error=0)}
    return posenc.Diagnosis(answer, request=request or {}, subject=subject,
                            client=posenc.Client(support.url()))


class Reproduce12Test(unittest.TestCase):
    def test_table_with_batch_axes_and_positions_per_row(self):
        positions = [[0, 1, 2, 3, 4], [7, 6, 5, 4, 3], [0, 0, 0, 0, 0], [0, 1, 0, 1, 2],
                     [9, 10, 11, 12, 13], [2, 2, 3, 3, 4]]
        want = np.stack([support.sinusoidal(1, 8, offset=p)[0] for row in positions
                         for p in row]).reshape(2, 3, 5, 8)
        d = diagnosis({"scheme": "sinusoidal", "params": {"base": 10000, "layout": "interleaved"},
                       "positions": np.reshape(positions, (2, 3, 5)).tolist(),
                       "embed_scale": 1},
                      {"table": want.astype(np.float32)},
                      [("positions_mismatch", "positions found per row", {"pattern": "other"})])
        got = d.reproduce()
        self.assertEqual(got.shape, (2, 3, 5, 8))
        self.assertLessEqual(np.abs(got - want).max(), 2e-6)

    def test_encoded_bhtd(self):
        rng = np.random.default_rng(5)
        x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)  # [b, h, t, hd]
        want = support.rope(x, 8, layout="interleaved")  # per head: the last axis is one head
        d = diagnosis({"scheme": "rope", "params": {"head_dim": 8, "layout": "interleaved"},
                       "offset": 0},
                      {"embeddings": x, "encoded": want.astype(np.float32)},
                      [("layout_swapped", "interleaved pairs", {"layout": "interleaved"})],
                      request={"axes": "bhtd"})
        got = d.reproduce()
        self.assertEqual(got.shape, x.shape)
        self.assertLessEqual(np.abs(got - want).max(), 1e-5)

    def test_cache_stored_in_half_precision(self):
        for precision, dtype in (("float16", np.float16), ("bfloat16", None)):
            cos, sin = support.hf_cos_sin(64, 16, base=10000.0)
            if dtype is not None:
                cos, sin = cos.astype(dtype), sin.astype(dtype)
            else:
                cos, sin = _reproduce._round_to(cos, "bfloat16"), \
                    _reproduce._round_to(sin, "bfloat16")
            d = diagnosis({"scheme": "rope", "params": {"head_dim": 16, "layout": "half"},
                           "offset": 0},
                          {"cos": np.float32(cos), "sin": np.float32(sin)},
                          [("low_precision", "values stored in half precision",
                            {"precision": precision, "stage": "values"})])
            got_cos, got_sin = d.reproduce()
            self.assertLessEqual(np.abs(got_cos - cos.astype(np.float32)).max(), 0, precision)
            self.assertLessEqual(np.abs(got_sin - sin.astype(np.float32)).max(), 0, precision)

    def test_bfloat16_rounding(self):
        x = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1.01, -2.5e-3, 0.0], np.float32)
        # ties go to even: 1 + 2^-8 -> 1, 1 + 3*2^-8 -> 1 + 2^-6
        want = [1.0, 1 + 2.0 ** -6, 1.0078125, -0.0025024414, 0.0]
        np.testing.assert_array_equal(_reproduce._round_to(x, "bfloat16"),
                                      np.float32(want))

    def test_alibi_slopes_for_some_heads(self):
        slopes = support.alibi_slopes(8)
        found = slopes.copy()
        found[[1, 5]] = [0.3, 0.01]
        d = diagnosis({"scheme": "alibi", "params": {"heads": 8, "form": "symmetric"}},
                      {"slopes": found.astype(np.float32)},
                      [("alibi_slopes", "2 of 8", {"heads": [1, 5], "slopes": [0.3, 0.01]})])
        np.testing.assert_allclose(d.reproduce(), found, rtol=1e-6)

    def test_truncated_search_said_in_words(self):
        d = diagnosis({"scheme": "rope", "params": {}}, {"cos": np.ones((1, 2))},
                      [("head_dim_mismatch", "heads of 4", {"head_dim": 4, "truncated": True})])
        self.assertTrue(d.truncated)
        self.assertIn("cut its search short", str(d))


class ServiceTest(unittest.TestCase):
    def test_ready_and_info(self):
        client = posenc.Client(support.url())
        self.assertTrue(client.ready())
        info = client.info()
        self.assertIn("default", [m["name"] for m in info["models"]])


if __name__ == "__main__":
    unittest.main()

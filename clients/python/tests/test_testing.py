"""posenc.testing: the assertions a port's test suite calls pass on correct
numbers and fail with the diagnosis in words on wrong ones."""
import unittest

import numpy as np

import posenc
import support
from posenc import testing


class AssertionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = support.url()
        cls.rng = np.random.default_rng(3)

    def test_encoding_matches_passes_and_returns_the_diagnosis(self):
        x = self.rng.standard_normal((8, 16)).astype(np.float32)
        d = testing.assert_encoding_matches(self.url, embeddings=x, encoded=support.rope(x, 16),
                                            scheme="rope", params={"head_dim": 16})
        self.assertIsInstance(d, posenc.Diagnosis)
        self.assertEqual(d.verdict, "match")

    def test_encoding_mismatch_fails_with_words(self):
        x = self.rng.standard_normal((8, 16)).astype(np.float32)
        wrong = support.rope(x, 16, layout="interleaved")
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_encoding_matches(posenc.Client(self.url), embeddings=x,
                                            encoded=wrong, scheme="rope",
                                            params={"head_dim": 16})
        text = str(ctx.exception)
        self.assertTrue(text.startswith("the encoding does not match its claim:\nexplained: "),
                        text)
        self.assertIn("layout_swapped: dimensions 0-15 are paired as (2i, 2i+1)", text)
        self.assertIn("layout interleaved", text)

    def test_table(self):
        testing.assert_encoding_matches(self.url, table=support.sinusoidal(30, 8, base=100.0),
                                        params={"base": 100.0})
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_encoding_matches(self.url, table=support.sinusoidal(30, 8, offset=2))
        self.assertIn("position_offset: positions are shifted by +2", str(ctx.exception))

    def test_rope_cache(self):
        cos, sin = support.hf_cos_sin(16, 8, base=500000.0)
        testing.assert_rope_cache_matches(self.url, cos=cos, sin=sin,
                                          params={"head_dim": 8, "base": 500000.0})
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_rope_cache_matches(self.url, cos=cos, sin=sin, params={"head_dim": 8})
        self.assertIn("base_mismatch: frequencies follow base 500000", str(ctx.exception))

    def test_bias_and_slopes(self):
        testing.assert_bias_matches(self.url, slopes=support.alibi_slopes(8))
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_bias_matches(self.url, slopes=support.alibi_slopes(8)[::-1])
        self.assertIn("alibi_slopes", str(ctx.exception))
        with self.assertRaises(TypeError):
            testing.assert_bias_matches(self.url)

    def test_projections(self):
        x = self.rng.standard_normal((4, 512)).astype(np.float32)
        client = posenc.Client(self.url)
        r = client.apply(x)
        testing.assert_projections_match(client, model="default", q=r.q, k=r.k, v=r.v,
                                         embeddings=x)
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_projections_match(client, model="default", v=-r.v, embeddings=x)
        self.assertIn("projection_mismatch", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()

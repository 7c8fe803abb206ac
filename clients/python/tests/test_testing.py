"""posenc.testing: the assertions a port's test suite calls pass on correct
numbers and fail with the diagnosis in words on wrong ones."""
import unittest

import numpy as np

import multimodal_refs as ref
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


MROPE = {"head_dim": 16, "mrope": {"section": [2, 3, 3], "style": "chunked"}}


class MultidimensionalAssertionsTest(unittest.TestCase):
    """Claims in more than one dimension go through /diagnose like any other:
    right numbers return the Diagnosis, wrong ones fail with its findings."""

    @classmethod
    def setUpClass(cls):
        cls.url = support.url()
        cls.rng = np.random.default_rng(5)

    def test_mrope_triples(self):
        x = self.rng.standard_normal((2, 5, 16)).astype(np.float32)
        pos = self.rng.integers(0, 40, size=(2, 5, 3))
        right = ref.mrope(x, pos, [2, 3, 3], "chunked")
        diagnosis = testing.assert_encoding_matches(self.url, embeddings=x, encoded=right,
                                                    scheme="rope", params=MROPE, positions=pos)
        self.assertIsInstance(diagnosis, posenc.Diagnosis)
        self.assertEqual((diagnosis.verdict, diagnosis.findings), ("match", []))
        wrong = ref.mrope(x, pos, [2, 3, 3], "interleaved")
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_encoding_matches(self.url, embeddings=x, encoded=wrong,
                                            scheme="rope", params=MROPE, positions=pos)
        text = str(ctx.exception)
        self.assertTrue(text.startswith("the encoding does not match its claim:\nexplained"), text)
        self.assertIn("mrope_mismatch: the frequencies are turned by the interleaved "
                      "assignment of section [2, 3, 3]", text)
        self.assertIn('mrope {"style":"interleaved","section":[2,3,3]}', text)

    def test_layout_and_its_rule(self):
        layout = [{"text": 2}, {"video": [4, 4, 4]}, {"text": 3}]
        x = self.rng.standard_normal((21, 16)).astype(np.float32)
        qwen = ref.mrope(x, ref.layout_positions(layout, "qwen"), [2, 3, 3], "chunked")
        testing.assert_encoding_matches(self.url, embeddings=x, encoded=qwen, scheme="rope",
                                        params=MROPE, mm_layout=layout, mm_rule="qwen")
        with self.assertRaises(AssertionError) as ctx:
            testing.assert_encoding_matches(self.url, embeddings=x, encoded=qwen, scheme="rope",
                                            params=MROPE, mm_layout=layout, mm_rule="hf")
        # the text after the video is where the rules differ: hf starts it at 4, qwen past
        # the frames at 6; the diagnosis names the rule that reproduces the subject
        text = str(ctx.exception)
        self.assertIn("positions_mismatch: the positions follow the layout's other mm_rule: "
                      "token 18 is at [6, 6, 6], not the claimed [4, 4, 4]", text)
        diagnosis = posenc.Client(self.url).diagnose(
            embeddings=x, encoded=qwen, scheme="rope", params=MROPE, mm_layout=layout,
            mm_rule="hf")
        evidence = diagnosis.findings[0].evidence
        self.assertEqual((evidence["pattern"], evidence["mm_rule"]), ("mm_rule", "qwen"))
        self.assertEqual(evidence["positions"],
                         [ref.layout_positions(layout, "qwen").tolist()])

    def test_rope2d_grid(self):
        x = self.rng.standard_normal((16, 32)).astype(np.float32)
        pairs = ref.grid_pairs("qwen_vit", 4, 4, 2)
        right = np.concatenate([ref.rope2d(x[:, :16], pairs, "qwen_vit"),
                                ref.rope2d(x[:, 16:], pairs, "qwen_vit")], axis=1)
        params = {"variant": "qwen_vit", "head_dim": 16}
        grid = {"h": 4, "w": 4, "merge": 2}
        testing.assert_encoding_matches(self.url, embeddings=x, encoded=right, scheme="rope2d",
                                        params=params, grid=grid)
        with self.assertRaises(AssertionError):  # the patches in row-major order instead
            testing.assert_encoding_matches(self.url, embeddings=x, encoded=right,
                                            scheme="rope2d", params=params,
                                            grid={"h": 4, "w": 4, "merge": 1})

    def test_other_refusals_still_raise(self):
        with self.assertRaises(posenc.PosencError) as ctx:
            testing.assert_encoding_matches(self.url, embeddings=np.zeros((2, 16)),
                                            encoded=np.zeros((2, 16)), scheme="rope",
                                            params={"head_dim": 16, "mrope": {"section": [1, 1]}})
        self.assertEqual((ctx.exception.status, ctx.exception.field),
                         (422, "params.mrope.section"))


if __name__ == "__main__":
    unittest.main()

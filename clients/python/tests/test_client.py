"""posenc.Client against the real server: values checked against numpy
references computed here, shapes and batch axes, both answer encodings,
torch-style inputs, and every kind of error."""
import base64
import socket
import unittest

import numpy as np

import posenc
import support


def close(test, got, want, atol=2e-6, rtol=2e-6):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    test.assertEqual(got.shape, want.shape)
    err = np.abs(got - want) - (atol + rtol * np.abs(want))
    test.assertLessEqual(err.max(initial=-1), 0,
                         f"max |got - want| = {np.abs(got - want).max()}")


class FakeTensor:
    """What the client sees of a torch tensor: a ``torch`` module and
    detach().cpu() -> float() -> numpy(). Real torch is not installed here."""
    __module__ = "torch"

    def __init__(self, array, floating=True):
        self.array = np.asarray(array)
        self.floating = floating
        self.calls = []

    def detach(self):
        self.calls.append("detach")
        return self

    def cpu(self):
        self.calls.append("cpu")
        return self

    def is_floating_point(self):
        return self.floating

    def float(self):
        self.calls.append("float")
        return FakeTensor(self.array.astype(np.float32), self.floating)

    def numpy(self):
        self.calls.append("numpy")
        return self.array


class EncodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())
        cls.json_client = posenc.Client(support.url(), encoding="json")
        cls.rng = np.random.default_rng(19)

    def test_bare_sinusoidal_table(self):
        for client in (self.client, self.json_client):
            r = client.encode(shape=[50, 16], offset=7)
            self.assertEqual(r.encoded.dtype, np.float32)
            self.assertEqual(r.shape, [50, 16])
            close(self, r.encoded, support.sinusoidal(50, 16, offset=7))

    def test_split_layout_and_base(self):
        r = self.client.encode(shape=[20, 12], params={"layout": "split", "base": 500.0})
        close(self, r.encoded, support.sinusoidal(20, 12, base=500.0, layout="split"))

    def test_embeddings_plus_scaled_encoding(self):
        x = self.rng.standard_normal((9, 8)).astype(np.float32)
        r = self.client.encode(x, embed_scale=2.0, offset=3)
        close(self, r.encoded, 2.0 * x + support.sinusoidal(9, 8, offset=3), atol=4e-6)

    def test_rope_half_and_interleaved(self):
        x = self.rng.standard_normal((11, 32)).astype(np.float32)
        for layout in ("half", "interleaved"):
            r = self.client.encode(x, scheme="rope", params={"head_dim": 8, "layout": layout,
                                                             "base": 500000.0})
            close(self, r.encoded, support.rope(x, 8, base=500000.0, layout=layout),
                  atol=1e-5)

    def test_rope_positions_numpy_ints(self):
        x = self.rng.standard_normal((4, 16)).astype(np.float32)
        positions = np.array([1000000, 3, 3, 0], dtype=np.int64)
        r = self.client.encode(x, scheme="rope", params={"head_dim": 16}, positions=positions)
        close(self, r.encoded, support.rope(x, 16, positions=positions), atol=1e-5)

    def test_numpy_scalars_in_params(self):
        r = self.client.encode(shape=[3, 6], params={"base": np.float64(100.0)},
                               offset=np.int64(2))
        close(self, r.encoded, support.sinusoidal(3, 6, base=100.0, offset=2))
        r = self.client.encode(shape=[2, 8], scheme="rope",
                               params={"head_dim": np.int64(8), "base": np.float32(50.0)})
        angle = support.rope_angles(np.arange(2), 8, base=50.0)
        close(self, r.encoded, np.concatenate([np.cos(angle), np.sin(angle)], axis=1))

    def test_batch_axes_kept(self):
        x = self.rng.standard_normal((2, 5, 16)).astype(np.float32)
        r = self.client.encode(x, scheme="rope", params={"head_dim": 8})
        self.assertEqual(r.encoded.shape, (2, 5, 16))
        close(self, r.encoded, support.rope(x, 8), atol=1e-5)

    def test_more_batch_axes_flattened_and_restored(self):
        x = self.rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
        positions = np.arange(24).reshape(2, 3, 4)  # one list per row
        r = self.client.encode(x, scheme="rope", params={"head_dim": 8}, positions=positions)
        self.assertEqual(r.encoded.shape, (2, 3, 4, 8))
        self.assertEqual(r.shape, [2, 3, 4, 8])
        want = np.stack([support.rope(x[i, j], 8, positions=positions[i, j])
                         for i in range(2) for j in range(3)]).reshape(x.shape)
        close(self, r.encoded, want, atol=1e-5)

    def test_json_and_base64_answers_agree_exactly(self):
        x = self.rng.standard_normal((6, 8)).astype(np.float32)
        a = self.client.encode(x, scheme="rope", params={"head_dim": 4}).encoded
        b = self.json_client.encode(x, scheme="rope", params={"head_dim": 4}).encoded
        np.testing.assert_array_equal(a, b)

    def test_torch_like_tensor(self):
        x = self.rng.standard_normal((3, 8))
        t = FakeTensor(x)
        r = self.client.encode(t)
        self.assertEqual(t.calls[:2], ["detach", "cpu"])
        close(self, r.encoded, x.astype(np.float32) + support.sinusoidal(3, 8), atol=4e-6)

    def test_alibi_bias(self):
        r = self.client.encode(shape=[5, 8], scheme="alibi", params={"heads": 4})
        slopes = support.alibi_slopes(4)
        pos = np.arange(5)
        want = -slopes[:, None, None] * np.abs(pos[:, None] - pos[None, :])
        close(self, r.bias, want)

    def test_float32_on_the_wire(self):
        x = np.array([[1 + 2.0 ** -23, -0.0, 3e-39, 1e30]], dtype=np.float32)
        r = self.client.encode(x, scheme="none")
        np.testing.assert_array_equal(r.encoded.view(np.uint32), x.view(np.uint32))


class ApplyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())
        cls.rng = np.random.default_rng(4)

    def test_inline_rope_model_gqa(self):
        d, heads, kv_heads, hd = 16, 4, 2, 4
        w = {"wq": self.rng.standard_normal((d, heads * hd)).astype(np.float32),
             "wk": self.rng.standard_normal((d, kv_heads * hd)).astype(np.float32),
             "wv": self.rng.standard_normal((d, kv_heads * hd)).astype(np.float32)}
        model = {"d_model": d, "heads": heads, "kv_heads": kv_heads, "scheme": "rope",
                 "params": {"layout": "interleaved"}, "weights": w}
        x = self.rng.standard_normal((2, 6, d)).astype(np.float32)
        r = self.client.apply(x, model=model, offset=5, return_=["q", "k", "v", "scores"])
        x64 = x.astype(np.float64)
        pos = np.arange(5, 11)
        q = support.rope(x64 @ w["wq"], hd, positions=pos, layout="interleaved")
        k = support.rope(x64 @ w["wk"], hd, positions=pos, layout="interleaved")
        close(self, r.q, q, atol=1e-4, rtol=1e-5)
        close(self, r.k, k, atol=1e-4, rtol=1e-5)
        close(self, r.v, x64 @ w["wv"], atol=1e-4, rtol=1e-5)
        self.assertEqual(r.shape["batch"], 2)
        self.assertEqual(r.scores.shape, (2, heads, 6, 6))
        qh = q.reshape(2, 6, heads, hd)
        kh = k.reshape(2, 6, kv_heads, hd)
        scores = np.einsum("bihd,bjhd->bhij", qh, np.repeat(kh, heads // kv_heads, axis=2))
        close(self, r.scores, scores / np.sqrt(hd), atol=1e-3, rtol=1e-5)

    def test_default_model_shapes(self):
        r = self.client.apply(np.zeros((3, 512)), return_="q")
        self.assertEqual(set(r) & {"q", "k", "v"}, {"q"})
        self.assertEqual(r.q.shape, (3, 512))
        self.assertEqual(r.shape["head_dim"], 64)

    def test_token_ids(self):
        emb = self.rng.standard_normal((10, 4)).astype(np.float32)
        model = {"d_model": 4, "heads": 1, "scheme": "none",
                 "weights": {"wq": np.eye(4), "wk": np.eye(4), "wv": np.eye(4),
                             "token_embedding": emb}}
        r = self.client.apply(token_ids=np.array([[3, 1], [0, 9]]), model=model)
        close(self, r.v, emb[[[3, 1], [0, 9]]])


class ErrorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = posenc.Client(support.url())

    def error(self, call, *args, **kwargs):
        with self.assertRaises(posenc.PosencError) as ctx:
            call(*args, **kwargs)
        return ctx.exception

    def test_unknown_field_is_400_with_field(self):
        e = self.error(self.client.encode, shape=[2, 2], extra={"colour": "blue"})
        self.assertEqual((e.status, e.code, e.field), (400, "invalid_request", "colour"))
        self.assertIn("colour", e.message)
        self.assertIn("400 invalid_request", str(e))

    def test_non_finite_is_422(self):
        e = self.error(self.client.encode, np.array([[1.0, np.inf]]))
        self.assertEqual((e.status, e.code, e.field), (422, "non_finite", "embeddings"))

    def test_ragged_shape_is_422(self):
        e = self.error(self.client.encode, np.zeros((2, 6)), scheme="rope",
                       params={"head_dim": 4})
        self.assertEqual(e.status, 422)
        self.assertEqual(e.code, "invalid_shape")

    def test_unknown_model_is_404(self):
        e = self.error(self.client.apply, np.zeros((1, 4)), model="no-such-model")
        self.assertEqual((e.status, e.code), (404, "unknown_model"))

    def test_offset_and_positions_is_400(self):
        e = self.error(self.client.encode, shape=[2, 4], offset=1, positions=[0, 1])
        self.assertEqual(e.status, 400)

    def test_diagnose_without_subject_is_400(self):
        e = self.error(self.client.diagnose, scheme="rope")
        self.assertEqual((e.status, e.code), (400, "invalid_request"))

    def test_not_an_array_is_a_type_error(self):
        with self.assertRaises(TypeError):
            self.client.encode([["a", "b"]])
        with self.assertRaises(TypeError):
            self.client.encode(shape=[2, 4], positions=[0.5, 1])

    def test_connection_refused(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # free once closed
        e = self.error(posenc.Client(f"http://127.0.0.1:{port}").health)
        self.assertIsInstance(e, posenc.PosencConnectionError)
        self.assertIsInstance(e, ConnectionError)
        self.assertEqual((e.status, e.code), (None, "unreachable"))
        self.assertIn(str(port), e.message)

    def test_timeout(self):
        with socket.socket() as s:  # accepts the connection, never answers
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            client = posenc.Client(f"http://127.0.0.1:{s.getsockname()[1]}", timeout=0.3)
            e = self.error(client.encode, shape=[2, 2])
        self.assertEqual(e.code, "timeout")
        self.assertIn("0.3", e.message)

    def test_bad_url(self):
        with self.assertRaises(ValueError):
            posenc.Client("localhost:8080")


class AuthTest(support.OwnServerTest):
    server_args = ("--api-key", "s3cret")

    def test_missing_and_wrong_key_are_401(self):
        for key in (None, "wrong"):
            with self.assertRaises(posenc.PosencError) as ctx:
                posenc.Client(self.server.url, api_key=key).encode(shape=[1, 2])
            self.assertEqual((ctx.exception.status, ctx.exception.code), (401, "unauthorized"))

    def test_key_sent_as_bearer(self):
        client = posenc.Client(self.server.url, api_key="s3cret")
        close(self, client.encode(shape=[2, 2]).encoded, support.sinusoidal(2, 2))
        self.assertIn("version", client.info())
        self.assertTrue(posenc.Client(self.server.url).health())  # /healthz needs no key


class BodyLimitTest(support.OwnServerTest):
    """413 and 401 come before the server reads a large body, then it closes:
    the client must still report the answer, not the broken pipe."""
    server_args = ("--max-body-bytes", "65536", "--api-key", "k")

    def test_payload_too_large(self):
        client = posenc.Client(self.server.url, api_key="k")
        for rows in (3000, 300000):  # 128 KB and 12.8 MB of base64
            with self.assertRaises(posenc.PosencError) as ctx:
                client.encode(np.zeros((rows, 8)))
            e = ctx.exception
            self.assertEqual((e.status, e.code), (413, "payload_too_large"), str(e))
            self.assertIn("65536", e.message)
        close(self, client.encode(shape=[2, 2]).encoded, support.sinusoidal(2, 2))

    def test_unauthorized_before_the_body(self):
        with self.assertRaises(posenc.PosencError) as ctx:
            posenc.Client(self.server.url).encode(np.zeros((300000, 8)))
        self.assertEqual(ctx.exception.status, 401)


class ArraysTest(unittest.TestCase):
    def test_base64_is_little_endian_float32(self):
        from posenc import _arrays
        text, shape = _arrays.to_base64(np.array([[1.0, -2.0]], np.float64))
        self.assertEqual(shape, [1, 2])
        self.assertEqual(base64.b64decode(text), bytes.fromhex("0000803f000000c0"))
        back = _arrays.from_base64(text, shape, "x")
        np.testing.assert_array_equal(back, [[1.0, -2.0]])
        with self.assertRaises(ValueError):
            _arrays.from_base64(text, [3], "x")

    def test_decode_answer(self):
        from posenc import _arrays
        text, _ = _arrays.to_base64(np.arange(6, dtype=np.float32))
        out = _arrays.decode_answer({"q": text, "q_shape": [2, 3], "shape": [2, 3],
                                     "error_map": {"cos": [[1, 2]], "sin": [[0, 1]]}})
        self.assertEqual(out["q"].shape, (2, 3))
        self.assertNotIn("q_shape", out)
        self.assertEqual(out["shape"], [2, 3])
        self.assertEqual(out["error_map"]["sin"].dtype, np.float32)


if __name__ == "__main__":
    unittest.main()

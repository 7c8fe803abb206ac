#!/usr/bin/python3
"""posenc tokenizer sidecar: text in, SentencePiece token ids out, over HTTP.

Standard library plus Debian's python3-sentencepiece; no pip.

  tokenizer.py                      serve (TOKENIZER_HOST, TOKENIZER_PORT)
  tokenizer.py --check              GET /healthz, exit 0 when healthy
  tokenizer.py --train CORPUS PREFIX [--vocab-size N]
                                    train PREFIX.model / PREFIX.vocab

Routes (JSON in and out, errors as {"error": {"code", "message"}} like posenc):
  GET  /healthz     {"status": "ok"}
  GET  /info        {"model", "vocab_size", "unk_id", "bos_id", "eos_id", ...}
  POST /tokenize    {"text": "..."} -> {"token_ids": [...], "pieces": [...]}
                    {"texts": ["...", ...]} -> {"token_ids": [[...], ...], "pieces": [[...], ...]}
  POST /detokenize  {"token_ids": [...]} -> {"text": "..."}

SIGTERM or SIGINT stops the server after the requests in progress; exit 0.
"""
import json
import os
import signal
import socket
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_MODEL = "/opt/tokenizer/tokenizer.model"
MAX_BODY = 1 << 20


def env(name, default):
    value = os.environ.get(name, "")
    return value if value else default


def train(corpus, prefix, vocab_size):
    import sentencepiece as spm

    # One thread and a fixed order: the same corpus gives the same model.
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, num_threads=1,
        hard_vocab_limit=False, shuffle_input_sentence=False,
        minloglevel=1)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    print(f"trained {prefix}.model: {sp.get_piece_size()} pieces from {corpus}")


def check(host, port):
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=3) as r:
            return 0 if r.status == 200 else 1
    except (urllib.error.URLError, OSError) as e:
        print(f"tokenizer: check: {e}", file=sys.stderr)
        return 1


class ApiError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def make_handler(sp, model_path):
    info = {
        "model": os.path.basename(model_path),
        "type": "sentencepiece",
        "vocab_size": sp.get_piece_size(),
        "unk_id": sp.unk_id(),
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "pad_id": sp.pad_id(),
    }

    def ids_of(text, field):
        if not isinstance(text, str):
            raise ApiError(400, "invalid_request", f"'{field}' must be a string")
        return sp.encode(text, out_type=int), sp.encode(text, out_type=str)

    def tokenize(body):
        if set(body) - {"text", "texts", "add_bos", "add_eos"}:
            bad = sorted(set(body) - {"text", "texts", "add_bos", "add_eos"})[0]
            raise ApiError(400, "invalid_request", f"unknown field '{bad}'")
        if ("text" in body) == ("texts" in body):
            raise ApiError(400, "invalid_request", "give exactly one of 'text' or 'texts'")

        def one(text, field):
            ids, pieces = ids_of(text, field)
            if body.get("add_bos") and sp.bos_id() >= 0:
                ids, pieces = [sp.bos_id()] + ids, [sp.id_to_piece(sp.bos_id())] + pieces
            if body.get("add_eos") and sp.eos_id() >= 0:
                ids, pieces = ids + [sp.eos_id()], pieces + [sp.id_to_piece(sp.eos_id())]
            return ids, pieces

        if "text" in body:
            ids, pieces = one(body["text"], "text")
            return {"token_ids": ids, "pieces": pieces}
        texts = body["texts"]
        if not isinstance(texts, list):
            raise ApiError(400, "invalid_request", "'texts' must be a list of strings")
        out = [one(t, f"texts[{i}]") for i, t in enumerate(texts)]
        return {"token_ids": [o[0] for o in out], "pieces": [o[1] for o in out]}

    def detokenize(body):
        ids = body.get("token_ids")
        if not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ApiError(400, "invalid_request", "'token_ids' must be a list of integers")
        for n, i in enumerate(ids):
            if not 0 <= i < sp.get_piece_size():
                raise ApiError(422, "out_of_range",
                               f"token_ids[{n}] = {i} is outside [0, {sp.get_piece_size()})")
        return {"text": sp.decode(ids)}

    routes = {
        ("GET", "/healthz"): lambda _: {"status": "ok"},
        ("GET", "/info"): lambda _: info,
        ("POST", "/tokenize"): tokenize,
        ("POST", "/detokenize"): detokenize,
    }

    class Handler(BaseHTTPRequestHandler):
        server_version = "posenc-tokenizer/1.0"
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # one line per request, stderr
            sys.stderr.write("tokenizer: " + (fmt % args) + "\n")

        def send_json(self, status, obj):
            data = (json.dumps(obj, ensure_ascii=False) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def handle_any(self, method):
            path = self.path.split("?", 1)[0]
            try:
                route = routes.get((method, path))
                if route is None:
                    if any(p == path for _, p in routes):
                        raise ApiError(405, "method_not_allowed", f"{method} {path} is not allowed")
                    raise ApiError(404, "not_found", f"no route {path}")
                body = None
                if method == "POST":
                    n = int(self.headers.get("Content-Length") or 0)
                    if n > MAX_BODY:
                        raise ApiError(413, "payload_too_large", f"body over {MAX_BODY} bytes")
                    try:
                        body = json.loads(self.rfile.read(n) or b"null")
                    except (ValueError, UnicodeDecodeError) as e:
                        raise ApiError(400, "invalid_json", str(e)) from None
                    if not isinstance(body, dict):
                        raise ApiError(400, "invalid_request", "the body must be a JSON object")
                self.send_json(200, route(body))
            except ApiError as e:
                if e.status == 413:
                    self.close_connection = True
                self.send_json(e.status, {"error": {"code": e.code, "message": e.message}})

        def do_GET(self):
            self.handle_any("GET")

        def do_POST(self):
            self.handle_any("POST")

    return Handler


def serve(host, port, model_path):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=model_path)
    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        daemon_threads = True

    httpd = Server((host, port), make_handler(sp, model_path))

    def stop(signum, _frame):
        print(f"tokenizer: {signal.Signals(signum).name}: stopping", file=sys.stderr, flush=True)
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    bound_port = httpd.server_address[1]
    print(f"tokenizer listening on http://{host}:{bound_port} "
          f"({sp.get_piece_size()} pieces, {model_path})", flush=True)
    httpd.serve_forever()
    httpd.server_close()
    print("tokenizer: stopped", file=sys.stderr, flush=True)
    return 0


def main(argv):
    host = env("TOKENIZER_HOST", "127.0.0.1")
    port = int(env("TOKENIZER_PORT", "8081"))
    model = env("TOKENIZER_MODEL", DEFAULT_MODEL)
    if argv[:1] == ["--train"]:
        if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--vocab-size"):
            print("usage: tokenizer.py --train CORPUS PREFIX [--vocab-size N]", file=sys.stderr)
            return 2
        train(argv[1], argv[2], int(argv[4]) if len(argv) == 5 else 256)
        return 0
    if argv == ["--check"]:
        return check(host, port)
    if argv in (["--help"], ["-h"]):
        print(__doc__)
        return 0
    if argv:
        print(f"tokenizer: unknown arguments {argv} (see --help)", file=sys.stderr)
        return 2
    return serve(host, port, model)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Running build/posenc-server for the model tests: start it on a free port
with some --model flags, talk HTTP with urllib, stop it; or run it expecting
a startup failure. Counts checks and prints failures.
"""
import json
import os
import select
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np

BUILD = os.environ.get("BUILD", "build")
SERVER = os.environ.get("POSENC_SERVER") or os.path.join(BUILD, "posenc-server")
VALGRIND = os.environ.get("VALGRIND") == "1"
START_TIMEOUT = 120 if VALGRIND else 30
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "Invalid read", "Invalid write", "definitely lost")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", flush=True)
        return ok

    def close(self, what, got, want, rel=2e-5):
        """Every row of got within rel x (the row's largest |want|) + 1e-6."""
        got = np.asarray(got, np.float64)
        want = np.asarray(want, np.float64)
        if got.shape != want.shape:
            return self.check(False, f"{what}: shape {got.shape}, expected {want.shape}")
        scale = np.abs(want).max(axis=-1, keepdims=True) if want.ndim else abs(want)
        err = np.abs(got - want) - (rel * scale + 1e-6)
        if err.size and err.max() > 0:
            i = np.unravel_index(np.argmax(err), err.shape)
            return self.check(False, f"{what}: at {tuple(int(v) for v in i)} got {got[i]!r}, "
                                     f"want {want[i]!r}")
        return self.check(True, what)


def command(args):
    cmd = [SERVER, "--host", "127.0.0.1", "--port", "0", "--threads", "2"] + args
    if VALGRIND:
        cmd = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite"] + cmd
    return cmd


class Server:
    """A running server; `with Server([...]) as s: s.post(...)`.

    on_apply, when set (self_diagnose.install), is called as
    on_apply(server, body, answer) after every /apply that answers 200."""

    on_apply = None

    def __init__(self, args, env=None):
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(command(args), stdout=subprocess.PIPE, stderr=self.err,
                                     env=env)
        self.url = None
        deadline = time.time() + START_TIMEOUT
        line = b""
        while time.time() < deadline and self.proc.poll() is None:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                break
        text = line.decode().strip()
        if not text.startswith("posenc listening on "):
            self.stop()
            raise RuntimeError(f"server did not start: {text!r}\n{self.stderr()}")
        self.url = text[len("posenc listening on "):]

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def request(self, path, body=None):
        status, answer = self.request_raw(path, body)
        if path == "/apply" and status == 200 and Server.on_apply:
            Server.on_apply(self, body, answer)
        return status, answer

    def request_raw(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_failing(args, env=None):
    """Run the server expecting it to refuse to start: (status, stderr, listened)."""
    try:
        proc = subprocess.run(command(args), capture_output=True, timeout=START_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode(errors="replace"), True
    listened = b"posenc listening" in proc.stdout
    return proc.returncode, proc.stderr.decode(errors="replace"), listened


def sanitizer_clean(text):
    return not any(mark in text for mark in SANITIZER_MARKS)


def info_models(checks, srv, label):
    """/info's models by name, or None (a failed check) when /info fails."""
    st, info = srv.request("/info")
    if not checks.check(st == 200, f"{label} /info: status {st}"):
        return None
    return {m["name"]: m for m in info["models"]}


def stop_clean(checks, srv, label):
    """SIGTERM the server; it must exit 0 with a sanitizer-clean stderr."""
    status = srv.stop()
    checks.check(status == 0, f"{label}: server exits 0 (got {status})")
    checks.check(sanitizer_clean(srv.stderr()), f"{label}: stderr clean: {srv.stderr()[-800:]}")


def fixture_args(root, label, fixtures):
    """Write each distinct checkpoint of fixtures {name: (checkpoint, layer,
    shards)} once under root and return the --model flags serving every name
    at its layer."""
    args, dirs = [], {}
    for name, (ckpt, layer, shards) in fixtures.items():
        d = dirs.get(id(ckpt))
        if d is None:
            d = dirs[id(ckpt)] = os.path.join(root, f"{label}_{name}")
            ckpt.write(d, shards=shards)
        args += ["--model", f"{name}={d}" + (f":{layer}" if layer else "")]
    return args

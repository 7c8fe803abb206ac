#!/usr/bin/python3
"""The Python client's tests, as `make test` runs them: install the package
the way its README says, offline, into a temporary venv made by Debian's
python3 (`-m venv --system-site-packages`, then `pip install
--no-build-isolation --no-index`: numpy, setuptools and wheel come from
Debian's python3-* packages), check that the installed copy is the one
imported, then run tests/test_*.py with the venv's python against the real
server (tests/support.py starts $BUILD/posenc-server).

Prints failures, then "pyclient: N passed, M failed" (tests/run.sh adds it
up); exit status 0 only when nothing failed.

    BUILD=build clients/python/tests/run.py
    clients/python/tests/run.py --inside    (the second stage, in the venv)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(PACKAGE))


class Count:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}\n{detail}".rstrip(), flush=True)
        return ok


def run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def inside():
    """Run the unittest files with this interpreter; print the counts."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed
    import support  # the shared server: its exit status and stderr count too
    started, problem = support.stop_shared()
    if problem:
        print(f"FAIL: the shared server did not stop cleanly: {problem}", flush=True)
    failed += bool(problem)
    passed += started and not problem
    print(f"unittest: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


def main():
    count = Count()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PIP_NO_INPUT="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    server = env.get("POSENC_SERVER") or os.path.join(env.get("BUILD", "build"), "posenc-server")
    env["POSENC_SERVER"] = os.path.join(ROOT, server) if not os.path.isabs(server) else server
    with tempfile.TemporaryDirectory(prefix="posenc-pyclient.") as tmp:
        venv = os.path.join(tmp, "venv")
        python = os.path.join(venv, "bin", "python")
        made = run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], env=env)
        if not count.check(made.returncode == 0, "python3 -m venv --system-site-packages "
                           "(python3-venv installed?)", made.stderr):
            return report(count)
        # a copy, so that the build leaves nothing in the source tree
        src = os.path.join(tmp, "src")
        shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", "tests"))
        pip = run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", src],
                  env=env)
        if not count.check(pip.returncode == 0, "pip install --no-build-isolation --no-index",
                           pip.stdout + pip.stderr):
            return report(count)
        where = run([python, "-c", "import posenc, numpy; print(posenc.__file__); "
                     "print(numpy.__file__)"], env=env, cwd=tmp)
        lines = where.stdout.split()
        count.check(where.returncode == 0 and lines[0].startswith(venv + os.sep),
                    "posenc is imported from the venv", where.stdout + where.stderr)
        count.check(len(lines) > 1 and lines[1].startswith("/usr/lib/python3/dist-packages/"),
                    "numpy is Debian's python3-numpy", where.stdout)
        tests = subprocess.run([python, os.path.join(HERE, "run.py"), "--inside"], env=env,
                               cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        print(tests.stdout, end="", flush=True)
        summary = [line for line in tests.stdout.splitlines() if line.startswith("unittest: ")]
        if summary:
            words = summary[-1].split()
            count.passed += int(words[1])
            count.failed += int(words[3])
        if not summary or (tests.returncode != 0 and not int(summary[-1].split()[3])):
            count.check(False, f"the unittest stage ended with status {tests.returncode} "
                               "and no failed test")
    return report(count)


def report(count):
    print(f"pyclient: {count.passed} passed, {count.failed} failed", flush=True)
    return 0 if count.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(inside() if sys.argv[1:] == ["--inside"] else main())

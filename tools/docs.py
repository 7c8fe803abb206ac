#!/usr/bin/python3
"""docs.py - keeps the documents' reference tables equal to the code's.

A document (README.md, docs/*.md) holds generated blocks,

    <!-- generated:NAME -->
    ...
    <!-- /generated -->

whose text this script writes from the code's own tables:

    flags          build/posenc-server --help (the option table of server/config.c)
    errors         build/docs_facts errors (API_ERROR_LIST, api/api_error.h)
    architectures  build/docs_facts architectures (the spec table, api/models/hf_specs.c)
    findings       GET /info's diagnose.finding_codes of a server started here
    metrics        GET /metrics of the same server: # HELP, # TYPE and the labels

A hand-written table that starts after `<!-- keys:NAME -->` (NAME is
findings or architectures) must name, in the backquoted words of its first
column, exactly the facts of NAME. Every relative link ([text](path) or
path#anchor) must point at a file that exists and, with an anchor, at a
heading or an <a id> in it.

    tools/docs.py BUILD          rewrite the generated blocks (make docs)
    tools/docs.py --check BUILD  change nothing; list every difference and
                                 exit 1 if there is one (make check-docs)

The last line of --check is "docs: N passed, M failed".
"""
import difflib
import glob
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- generated:([a-z_]+) -->\n)(.*?)(<!-- /generated -->)", re.S)
KEYS = re.compile(r"<!-- keys:([a-z_]+) -->\n\n?((?:\|.*\n)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def run(*argv):
    """stdout of argv (new str); raises on a non-zero exit."""
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def flags_from_help(text):
    """[(flag, meta, variable, default, help)] parsed from --help."""
    rows, cur = [], None
    for line in text.splitlines():
        m = re.match(r"  (--[a-z-]+)( \S+)? +(\S.*)$", line)
        if m and not line.startswith("  --help") and not line.startswith("  --version"):
            cur = [m.group(1), (m.group(2) or "").strip(), "", "", [m.group(3)]]
            rows.append(cur)
            continue
        m = re.match(r" {29}\[(POSENC_[A-Z_]+)(?:; default:? (.*))?\]$", line)
        if m and cur:
            cur[2], cur[3] = m.group(1), m.group(2) or ""
            continue
        if cur and line.startswith(" " * 29):
            cur[4].append(line.strip())
        elif not line.startswith("  "):
            cur = None
    return [(f, meta, env, d, " ".join(h)) for f, meta, env, d, h in rows]


def cell(text):
    return text.replace("|", "\\|")


def render_flags(build):
    rows = flags_from_help(run(os.path.join(build, "posenc-server"), "--help"))
    out = ["| flag | variable | default | what it sets |", "| --- | --- | --- | --- |"]
    for flag, meta, env, dflt, text in rows:
        name = "`%s%s`" % (flag, " " + meta if meta else "")
        shown = "`%s`" % dflt if dflt and dflt != "see above" else ("see text" if dflt else "none")
        shown = shown if meta else ""
        out.append("| %s | %s | %s | %s |" % (cell(name), "`%s`" % env if env else "",
                                              cell(shown), cell(text)))
    return out


def render_errors(build):
    by_code = {}
    for line in run(os.path.join(build, "docs_facts"), "errors").splitlines():
        status, code = line.split()
        by_code.setdefault(code, [])
        if status not in by_code[code]:
            by_code[code].append(status)
    rows = sorted(by_code.items(), key=lambda kv: (min(kv[1]), kv[0]))
    return ["| status | code |", "| --- | --- |"] + [
        "| %s | `%s` |" % (", ".join(sorted(s)), c) for c, s in rows]


def architectures(build):
    return run(os.path.join(build, "docs_facts"), "architectures").split()


def wrap(names):
    """`a`, `b`, ... as lines of at most ~76 characters."""
    lines, cur = [], ""
    for n in names:
        piece = n + ","
        if cur and len(cur) + 1 + len(piece) > 76:
            lines.append(cur)
            cur = piece
        else:
            cur = piece if not cur else cur + " " + piece
    lines.append(cur.rstrip(","))
    return lines


def render_architectures(build):
    names = ["`%s`" % n for n in architectures(build)]
    return wrap(names) + ["", "(%d model types.)" % len(names)]


class Server:
    """posenc-server on a free loopback port, for /info and /metrics."""

    def __init__(self, build):
        self.proc = subprocess.Popen([os.path.join(build, "posenc-server"), "--port", "0",
                                      "--threads", "1"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://([^ ]+)$", line.strip())
        if not m:
            self.stop()
            raise RuntimeError("posenc-server did not print its listening line: %r" % line)
        self.base = "http://" + m.group(1)

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=30) as r:
            return r.read().decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def render_findings(info):
    return wrap(["`%s`" % c for c in info["diagnose"]["finding_codes"]])


def metrics_rows(text):
    """[(name, type, labels, help)] in the order of the # HELP lines."""
    helps, types, labels = {}, {}, {}
    for line in text.splitlines():
        m = re.match(r"# HELP (\S+) (.*)$", line)
        if m:
            helps[m.group(1)] = m.group(2)
            continue
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            types[m.group(1)] = m.group(2)
            continue
        m = re.match(r"([a-z_]+)\{([^}]*)\}", line)
        if m:
            base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
            base = base if base in helps else m.group(1)
            keys = [kv.split("=")[0] for kv in m.group(2).split(",") if kv]
            labels.setdefault(base, [])
            for k in keys:
                if k != "le" and k not in labels[base]:
                    labels[base].append(k)
    return [(n, types.get(n, "?"), labels.get(n, []), h) for n, h in helps.items()]


def render_metrics(text):
    out = ["| series | type | meaning |", "| --- | --- | --- |"]
    for name, kind, labels, text_ in metrics_rows(text):
        series = name + ("{%s}" % ",".join(labels) if labels else "")
        out.append("| `%s` | %s | %s |" % (series, kind, cell(text_)))
    return out


def collect(build):
    """{block name: [lines]} and {keys name: set}, from the code."""
    srv = Server(build)
    try:
        info = json.loads(srv.get("/info"))
        metrics = srv.get("/metrics")
    finally:
        srv.stop()
    blocks = {
        "flags": render_flags(build),
        "errors": render_errors(build),
        "architectures": render_architectures(build),
        "findings": render_findings(info),
        "metrics": render_metrics(metrics),
    }
    keys = {"findings": set(info["diagnose"]["finding_codes"]),
            "architectures": set(architectures(build))}
    return blocks, keys


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def regenerate(text, blocks, problems, where):
    def sub(m):
        name = m.group(2)
        if name not in blocks:
            problems.append("%s: unknown generated block '%s'" % (where, name))
            return m.group(0)
        return m.group(1) + "\n".join(blocks[name]) + "\n" + m.group(4)
    return BLOCK.sub(sub, text)


def check_keys(text, keys, problems, where):
    for m in KEYS.finditer(text):
        name = m.group(1)
        rows = [r for r in m.group(2).splitlines()[2:]]
        got = set()
        for r in rows:
            first = r.split("|")[1] if r.count("|") > 1 else ""
            got.update(re.findall(r"`([^`]+)`", first))
        want = keys.get(name)
        if want is None:
            problems.append("%s: unknown keys table '%s'" % (where, name))
            continue
        for k in sorted(want - got):
            problems.append("%s: the %s table has no row for `%s`" % (where, name, k))
        for k in sorted(got - want):
            problems.append("%s: the %s table names `%s`, which the code does not have" %
                            (where, name, k))


def anchors(text):
    """GitHub's anchors of a document's headings, and its <a id>s."""
    out, in_code = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            h = line.lstrip("#").strip().lower()
            h = re.sub(r"[^\w\- ]", "", h)
            out.add(h.replace(" ", "-"))
    out.update(re.findall(r'<a id="([^"]+)"', text))
    return out


def check_links(path, text, problems, where):
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        file_, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_)) if file_ else path
        if not os.path.exists(dest):
            problems.append("%s: link to %s: no such file" % (where, target))
            continue
        if anchor and dest.endswith(".md"):
            with open(dest, encoding="utf-8") as f:
                if anchor not in anchors(f.read()):
                    problems.append("%s: link to %s: no such heading" % (where, target))


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    build = args[0] if args else "build"
    blocks, keys = collect(build)
    problems, passed = [], 0
    for path in documents():
        where = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        before = len(problems)
        new = regenerate(text, blocks, problems, where)
        check_keys(new, keys, problems, where)
        check_links(path, new, problems, where)
        if new != text:
            if check:
                diff = difflib.unified_diff(text.splitlines(), new.splitlines(), where,
                                            where + " (from the code)", lineterm="", n=1)
                problems.append("%s differs from the code (make docs rewrites it):\n%s" %
                                (where, "\n".join(diff)))
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print("docs: rewrote %s" % where)
        passed += len(problems) == before
    for p in problems:
        print("FAIL docs: " + p)
    print("docs: %d passed, %d failed" % (passed, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

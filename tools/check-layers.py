#!/usr/bin/python3
"""check-layers: fail on an #include against the direction of the layers,
or on a circle of modules that include each other.

The layers, lowest first; each may include its own folder and the folders
below it, never one above (docs/hacking.md, "Layout"):

    lib/          the numeric core            includes lib/
    lib/diagnose/ /diagnose's numeric search  includes lib/, lib/diagnose/
    api/json/     codecs: numbers, strings,   includes api/json/
                  arrays, limits
    api/models/   config and checkpoint       includes lib/, api/json/, api/models/
                  reading
    api/          the endpoints               includes lib/, lib/diagnose/, api/json/,
                                              api/models/, api/, api/diagnose/
    api/diagnose/ /diagnose's endpoint        the same as api/
    server/       the daemon                  includes api/api.h, server/

The core (lib/ outside lib/diagnose/) never includes the diagnosis: the
search is built as its own archive (libposenc_diagnose.a) on top of it.

A module is a .c file with its .h (model.c + model.h); module A depends on
B when a file of A includes B's header. A loop of such dependencies is a
circle, even when every single include points downwards.

Usage: tools/check-layers.py [ROOT]   (exit 1 and one line per problem)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SEARCH = ["lib", "api"]  # the -I directories of the Makefile, in order

# layer -> the layers it may include
ALLOWED = {
    "lib": {"lib"},
    "lib/diagnose": {"lib", "lib/diagnose"},
    "api/json": {"api/json"},
    "api/models": {"lib", "api/json", "api/models"},
    "api": {"lib", "lib/diagnose", "api/json", "api/models", "api", "api/diagnose"},
    "api/diagnose": {"lib", "lib/diagnose", "api/json", "api/models", "api", "api/diagnose"},
    "server": {"server"},
}
# server/ sees the API through its one public header, nothing inside it
SERVER_MAY_INCLUDE = {"api/api.h", "api/api_error.h"}


def layer_of(path):
    for layer in ("lib/diagnose", "api/diagnose", "api/json", "api/models", "lib", "api", "server"):
        if path.startswith(layer + "/"):
            return layer
    return None


def resolve(root, src, name):
    here = os.path.dirname(src)
    for d in [here] + SEARCH:
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.exists(os.path.join(root, cand)):
            return cand
    return None


def sources(root):
    for top in ("lib", "api", "server"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h", ".cc")):
                    yield os.path.relpath(os.path.join(dirpath, n), root)


def module(path):
    return os.path.splitext(path)[0]


def find_circles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    edges = {}
    for src in sources(root):
        with open(os.path.join(root, src), encoding="utf-8") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            target = resolve(root, src, name)
            if target is None:
                continue  # a generated or system header
            a, b = layer_of(src), layer_of(target)
            if b is None:
                continue
            if a == "server" and b != "server":
                ok = target in SERVER_MAY_INCLUDE
            else:
                ok = b in ALLOWED[a]
            if not ok:
                problems.append(f"{src}: includes {target}: {a}/ may not include {b}/")
            if module(src) != module(target):
                edges.setdefault(module(src), set()).add(module(target))
    for comp in find_circles(edges):
        problems.append("include circle: " + " <-> ".join(comp))
    for p in problems:
        print("check-layers: " + p)
    if problems:
        return 1
    print("check-layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

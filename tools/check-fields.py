#!/usr/bin/python3
"""Check that api/request_fields.h and api/openapi.yaml name the same
request fields: every property of EncodeRequest, ApplyRequest and
DiagnoseRequest is in the table for that endpoint, and every field of the
table for an endpoint is a property of its schema. Also (contract 1.2): a
base64 array X of an endpoint comes with its X_shape there.

    tools/check-fields.py [api/request_fields.h] [api/openapi.yaml]

Prints what differs and exits 1; prints one line and exits 0 when they agree.
"""
import re
import sys

import yaml

SCHEMAS = {"RF_ENCODE": "EncodeRequest", "RF_APPLY": "ApplyRequest",
           "RF_DIAGNOSE": "DiagnoseRequest"}
ALIASES = {"RF_ALL": list(SCHEMAS)}


def table_fields(path):
    """{endpoint bit name: {field: kind}} from the REQUEST_FIELDS X-macro."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    body = re.search(r"#define REQUEST_FIELDS\(XX\)(.*?)\n\n", text, re.S)
    if not body:
        sys.exit(f"{path}: no REQUEST_FIELDS(XX) list found")
    out = {bit: {} for bit in SCHEMAS}
    rows = re.findall(r"XX\(\s*(\w+)\s*,\s*(\w+)\s*,\s*([^)]*)\)", body.group(1))
    if not rows:
        sys.exit(f"{path}: REQUEST_FIELDS(XX) has no rows")
    for name, kind, endpoints in rows:
        for word in re.findall(r"\w+", endpoints):
            for bit in ALIASES.get(word, [word]):
                if bit not in out:
                    sys.exit(f"{path}: field {name}: unknown endpoint {word}")
                out[bit][name] = kind
    return out


def main():
    header = sys.argv[1] if len(sys.argv) > 1 else "api/request_fields.h"
    spec_path = sys.argv[2] if len(sys.argv) > 2 else "api/openapi.yaml"
    table = table_fields(header)
    with open(spec_path, encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    schemas = spec["components"]["schemas"]
    problems = []
    for bit, schema in SCHEMAS.items():
        props = set(schemas.get(schema, {}).get("properties", {}))
        fields = table[bit]
        for name in sorted(props - set(fields)):
            problems.append(f"{spec_path}: {schema} has {name}, which {header} lacks for {bit}")
        for name in sorted(set(fields) - props):
            problems.append(f"{header}: {name} is a field of {bit}, which {schema} in "
                            f"{spec_path} lacks")
        for name, kind in sorted(fields.items()):
            if kind == "ARRAY" and name + "_shape" not in fields:
                problems.append(f"{header}: {bit} accepts the array {name} without "
                                f"{name}_shape (contract 1.2)")
    for p in problems:
        print("check-fields: " + p, file=sys.stderr)
    if problems:
        return 1
    counts = ", ".join(f"{SCHEMAS[b]} {len(table[b])}" for b in SCHEMAS)
    print(f"check-fields: {header} and {spec_path} agree ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Convert the OpenAPI YAML to JSON at build time (Debian's python3-yaml)."""
import json
import sys

import yaml

with open(sys.argv[1], encoding="utf-8") as fh:
    doc = yaml.safe_load(fh)
json.dump(doc, sys.stdout, indent=1, sort_keys=False)
sys.stdout.write("\n")

#!/bin/sh
# decode_bench.sh [BEFORE] - the request decoder of this tree against that of
# revision BEFORE (default: the merge base with main) and jansson, on the S1
# and S4 bodies (tests/bench/gen_bodies.py), in one run: see decode_bench.c.
# Needs `make` done (build/libposenc_api.a). Scratch files go to $TMPDIR.
set -eu
BUILD=${BUILD:-build}
BEFORE=${1:-$(git merge-base HEAD main)}
ROUNDS=${ROUNDS:-15}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/decode_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
CFLAGS="-std=c11 -O2 -fopenmp -D_DEFAULT_SOURCE -Iinclude -Ilib -Iapi $(pkg-config --cflags jansson)"
git show "$BEFORE:api/json/json_doc.c" > "$tmp/old_json_doc.c"
rename=""
for f in json_doc_setup json_doc_load json_doc_free json_doc_array json_doc_string_text \
         json_doc_string json_doc_describe; do
    rename="$rename -D$f=old_$f"
done
# shellcheck disable=SC2086
cc $CFLAGS $rename -Iapi/json -c "$tmp/old_json_doc.c" -o "$tmp/old_json_doc.o"
# shellcheck disable=SC2086
cc $CFLAGS tests/bench/decode_bench.c "$tmp/old_json_doc.o" "$BUILD/libposenc_api.a" "$BUILD/libposenc_diagnose.a" \
    "$BUILD/libposenc.a" -fopenmp $(pkg-config --libs jansson) -lstdc++ -lm -o "$tmp/decode_bench"
/usr/bin/python3 tests/bench/gen_bodies.py "$tmp" s1 s4 > /dev/null
echo "decoder: this tree vs $BEFORE (git), $(nproc) cores; $(uptime | sed 's/.*load/load/')"
"$tmp/decode_bench" "$tmp/s1.json" "$ROUNDS"
"$tmp/decode_bench" "$tmp/s4.json" "$ROUNDS"

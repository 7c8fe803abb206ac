#!/bin/sh
# Write web/index.html to stdout with web/style.css and web/app.js inlined in
# place of their <link>/<script> lines, so GET / is one self-contained page.
# Usage: web/bundle.sh [WEBDIR] > page.html
set -eu
dir=${1:-web}
# Inlined text must not close its own element early.
if grep -qi '</style' "$dir/style.css" || grep -qi '</script' "$dir/app.js"; then
    echo "web/bundle.sh: style.css or app.js contains a closing </style or </script" >&2
    exit 1
fi
grep -q '^<link rel="stylesheet" href="style.css">$' "$dir/index.html"
grep -q '^<script src="app.js"></script>$' "$dir/index.html"
awk -v css="$dir/style.css" -v js="$dir/app.js" '
$0 == "<link rel=\"stylesheet\" href=\"style.css\">" {
    print "<style>"; while ((getline l < css) > 0) print l; close(css); print "</style>"; next
}
$0 == "<script src=\"app.js\"></script>" {
    print "<script>"; while ((getline l < js) > 0) print l; close(js); print "</script>"; next
}
{ print }
' "$dir/index.html"

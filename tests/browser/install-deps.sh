#!/bin/sh
# Install what `make test-browser` needs, if missing: Debian's Chromium, a
# font, and Node.js with npm (Debian's own packages; a node >= 18 already on
# PATH is kept). playwright-core itself comes from npm (package-lock.json); no
# browser is ever downloaded by npm or playwright.
set -eu

missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
# The page asks for system fonts; DejaVu makes screenshots the same everywhere.
[ -d /usr/share/fonts/truetype/dejavu ] || missing="$missing fonts-dejavu-core"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 18 ] || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2086
exec "$here/../../tools/install-deps.sh" packages $missing

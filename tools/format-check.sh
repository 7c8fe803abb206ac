#!/bin/sh
# Checks that every C source and header under include/ lib/ api/ server/
# tests/ tools/ examples/ is already what clang-format makes of it with the
# checked-in .clang-format;
# lists each file that differs (and how many of its lines would change) and
# exits 1 if any does. Only tracked files are checked (git ls-files), so
# build output (build*/gen/...) never is; files matching $FORMAT_EXCLUDE (an
# extended regex of paths: generated or third-party code) are skipped.
#
#   tools/format-check.sh            check the tree (make format-check)
#   tools/format-check.sh --diff     also print what would change
#   tools/format-check.sh FILE...    check just these files
#
# Needs clang-format 14 (Debian 12) or 19 (Debian 13; tools/install-deps.sh test
# installs the release's): the tree is written so that both give the same text
# (a construct they lay out apart sits between clang-format off and on).
set -u

cd "$(dirname "$0")/.." || exit 2
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
FORMAT_EXCLUDE=${FORMAT_EXCLUDE:-'^$'}
show_diff=0
if [ "${1:-}" = "--diff" ]; then
    show_diff=1
    shift
fi
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
    echo "format-check: $CLANG_FORMAT not found (tools/install-deps.sh test installs it)" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    files=$(printf '%s\n' "$@")
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files -- 'include/*.[ch]' 'lib/*.[ch]' 'api/*.[ch]' 'server/*.[ch]' 'tests/*.[ch]' \
        'tools/*.[ch]' 'examples/*.[ch]')
else
    files=$(find include lib api server tests tools examples -name '*.[ch]' 2>/dev/null | sort)
fi

files=$(printf '%s\n' "$files" | grep -Ev -- "$FORMAT_EXCLUDE")

# Fast path: clang-format checks many files per process (--dry-run
# --Werror: a file it would change is an error), two processes at once;
# one process a file spent most of its time starting up. Only when a file
# differs does the loop below say which and by how many lines.
if [ "$show_diff" = 0 ] &&
    printf '%s\n' "$files" | xargs -r -n 64 -P 2 "$CLANG_FORMAT" --style=file --dry-run --Werror \
        >/dev/null 2>&1; then
    echo "format-check: $(printf '%s\n' "$files" | grep -c .) files formatted"
    exit 0
fi

tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT INT TERM
checked=0
differ=0
lines=0
for f in $files; do
    [ -f "$f" ] || continue
    checked=$((checked + 1))
    if ! "$CLANG_FORMAT" --style=file "$f" >"$tmp"; then
        echo "format-check: $CLANG_FORMAT failed on $f" >&2
        exit 2
    fi
    cmp -s "$f" "$tmp" && continue
    n=$(diff "$f" "$tmp" | grep -c '^<')
    differ=$((differ + 1))
    lines=$((lines + n))
    echo "$f: $n lines differ from clang-format"
    [ "$show_diff" = 1 ] && diff -u "$f" "$tmp" | sed "1,2s|$tmp|$f (formatted)|"
done
if [ "$differ" -gt 0 ]; then
    echo "format-check: $differ of $checked files are not formatted ($lines lines);" \
        "clang-format -i FILE... fixes them"
    exit 1
fi
echo "format-check: $checked files formatted"

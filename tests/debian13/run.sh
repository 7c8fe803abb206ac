#!/usr/bin/env bash
# make test-debian13: the README's `make test` on Debian 13 (trixie), from
# a Debian 12 machine: GCC 14, libmicrohttpd 1.0.1, clang-format 19,
# Python 3.13 and numpy 2.
#
#   1. a trixie root in $CACHE/rootfs, unpacked from the minimal root of
#      tests/debian13/minbase.sh (debootstrap from this machine's mirror),
#      kept between runs with the packages `make test` installed in it;
#   2. a copy of this tree (tracked and untracked files, no build output) in
#      its /src;
#   3. make installed (a minimal root has none), then `make test` run in it
#      with chroot, in mount and PID namespaces of its own (unshare): /proc,
#      /dev, /sys (read-only) and a /tmp are mounted for the run and vanish
#      with it, nothing of the machine is changed.
#      The network is the machine's: apt reaches the mirror, servers bind
#      127.0.0.1 on free ports.
#
# A fresh machine downloads the minimal root and the packages (about 8
# minutes here); later runs only build and test. `--purge` deletes
# $CACHE. Needs root. The last line is make test's "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

CACHE=${POSENC_DEBIAN13_CACHE:-/var/tmp/posenc-debian13}
ROOT=$CACHE/rootfs
STAMP=$ROOT/.posenc-unpacked

if [ "${1:-}" = "--purge" ]; then
    rm -rf "$CACHE"
    echo "removed $CACHE"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "tests/debian13/run.sh: needs root (debootstrap, chroot); try: sudo make test-debian13" >&2
    exit 1
fi
for tool in debootstrap unshare chroot git tar; do
    command -v "$tool" >/dev/null 2>&1 || { echo "tests/debian13/run.sh: $tool is missing" >&2; exit 1; }
done
t_start=$(date +%s)

# --- 1. the root -------------------------------------------------------------
tar=$(tests/debian13/minbase.sh "$CACHE") || { echo "FAIL: no Debian 13 root"; exit 1; }
if [ ! -f "$STAMP" ] || [ "$tar" -nt "$STAMP" ]; then
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    tar --numeric-owner -C "$ROOT" -xf "$tar" || { echo "FAIL: cannot unpack $tar"; exit 1; }
    touch "$STAMP"
fi
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
echo "# Debian $(cat "$ROOT/etc/debian_version") in $ROOT"

# --- 2. the tree ---------------------------------------------------------------
rm -rf "$ROOT/src"
mkdir -p "$ROOT/src"
git ls-files -z -c -o --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -C "$ROOT/src" -xf - || { echo "FAIL: cannot copy the tree"; exit 1; }

# --- 3. make test ----------------------------------------------------------------
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --pid --fork --mount-proc="$ROOT/proc" sh -c '
    root=$1
    mount --rbind /dev "$root/dev" &&
        mount --rbind /sys "$root/sys" && mount -o remount,bind,ro "$root/sys" &&
        mount -t tmpfs tmpfs "$root/tmp" || exit 1
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        sh -c "cd /src && tools/install-deps.sh packages make && make test"' sh "$ROOT" 2>&1 | tee "$CACHE/make-test.log"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$CACHE/make-test.log" | tail -n 1)
echo "# make test on Debian 13: exit status $rc, $(($(date +%s) - t_start)) s in all"
[ "$rc" -eq 0 ] || [ -z "$summary" ] || case $summary in *" 0 failed") summary="" ;; esac
echo "${summary:-0 passed, 1 failed}"
exit "$rc"

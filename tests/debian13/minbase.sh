#!/bin/sh
# tests/debian13/minbase.sh DIR: makes DIR/trixie-minbase.tar, a minimal
# Debian 13 (trixie) root (debootstrap --variant=minbase from this
# machine's mirror, tests/docker/debian_mirror.sh), unless it is there
# already; prints its path. Its apt sources are trixie, trixie-updates and
# trixie-security on that mirror, as in the official image; no .deb and no
# package list stays in it. tests/debian13/run.sh unpacks it as the root
# `make test` runs in, tests/docker/run.sh imports it as the images' base:
# one debootstrap (about 3.5 minutes, ~50 MB downloaded) serves both.
# Needs root. Progress on stderr.
set -eu
dir=$1
tar=$dir/trixie-minbase.tar
if [ -s "$tar" ]; then
    echo "$tar"
    exit 0
fi
mirror=$("$(dirname "$0")/../docker/debian_mirror.sh")
security=${DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}
mkdir -p "$dir"
root=$(mktemp -d "$dir/debootstrap.XXXXXX")
trap 'rm -rf "$root"' EXIT INT TERM
echo "# debootstrap --variant=minbase trixie from $mirror" >&2
t0=$(date +%s)
if ! debootstrap --variant=minbase trixie "$root" "$mirror" >"$dir/debootstrap.log" 2>&1; then
    tail -n 20 "$dir/debootstrap.log" >&2
    exit 1
fi
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar --numeric-owner -C "$root" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
echo "# debootstrap took $(($(date +%s) - t0)) s" >&2
echo "$tar"

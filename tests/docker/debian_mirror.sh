#!/bin/sh
# Prints the Debian mirror this machine's apt uses (DEBIAN_MIRROR first,
# then /etc/apt/sources.list.d/debian.sources, then /etc/apt/sources.list,
# else deb.debian.org): debootstrap makes the base images and the Debian 13
# root from it (tests/docker/run.sh, tests/debian13/run.sh).
mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
fi
echo "${mirror:-http://deb.debian.org/debian}"

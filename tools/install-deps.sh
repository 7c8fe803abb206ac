#!/bin/sh
# Install the Debian packages posenc needs to build, run and test, if any
# are missing. Runs apt-get as root, or through sudo; does nothing when all
# are present. Debian 12 (bookworm) and 13 (trixie); where a name differs,
# /etc/os-release picks the release's.
# Usage: tools/install-deps.sh [build|test|fuzz|soak|bench|docker]
set -eu

build_pkgs="gcc g++ make pkg-config libc6-dev libmicrohttpd-dev libjansson-dev
libdragonbox-dev libfast-float-dev python3-yaml"
# the Python client's tests: a venv with pip, setuptools and wheel (offline)
test_pkgs="libcurl4-openssl-dev python3-numpy valgrind clang-format
python3-venv python3-pip python3-setuptools python3-wheel"
# libFuzzer's runtime and OpenMP for clang: versioned names on Debian 12,
# the default LLVM's on Debian 13 (which renamed them).
. /etc/os-release
case "${VERSION_ID:-}" in
12) fuzz_pkgs="clang libclang-rt-14-dev libomp-14-dev" ;;
*) fuzz_pkgs="clang libclang-rt-dev libomp-dev" ;;
esac
# make test-soak: wrk drives the ASan server; curl for the known-answer checks
soak_pkgs="wrk curl"
bench_pkgs="wrk gnuplot-nox python3-fastapi python3-uvicorn python3-httptools
python3-numpy libopenblas-openmp-dev"
# make test-docker: rootful podman with no Docker engine and no registry
# (the base image comes from debootstrap); dnsname lets compose services
# find each other by name.
docker_pkgs="podman runc catatonit uidmap slirp4netns fuse-overlayfs debootstrap
podman-compose golang-github-containernetworking-plugin-dnsname curl python3-yaml"

want=$build_pkgs
case "${1:-build}" in
packages) shift; want="$*" ;; # the packages named after it (tests/browser)
test) want="$build_pkgs $test_pkgs" ;;
fuzz) want="$build_pkgs $fuzz_pkgs" ;;
soak) want="$build_pkgs $test_pkgs $soak_pkgs" ;;
bench) want="$build_pkgs $bench_pkgs" ;;
docker) want="$docker_pkgs" ;;
esac

missing=""
for p in $want; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "posenc: installing Debian packages:$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
    run=""
elif command -v sudo >/dev/null 2>&1; then
    run="sudo"
else
    echo "posenc: need root or sudo to install:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$run apt-get update -qq
# shellcheck disable=SC2086
$run apt-get install -y -qq --no-install-recommends $missing >/dev/null

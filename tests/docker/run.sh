#!/usr/bin/env bash
# make test-docker: build the posenc and tokenizer images and run them for
# real with rootful podman (no Docker engine, no image registry needed):
#
#   1. the Debian 13 base image: the minimal root of tests/debian13/minbase.sh
#      (debootstrap from the machine's Debian mirror, shared with make
#      test-debian13) imported as docker.io/library/debian:trixie (cached);
#   2. `Dockerfile` and `docker/tokenizer/Dockerfile` built as
#      posenc:VERSION and posenc-tokenizer:VERSION (VERSION: include/posenc.h's
#      POSENC_VERSION, the tag the manifests deploy); labels, no .deb left;
#   3. the posenc image run with a loopback-published port: /healthz,
#      /readyz, /encode, /apply, HEALTHCHECK, non-root, POSENC_* variables,
#      SIGTERM drain and a clean exit;
#   4. docker/k8s/sidecar-pod.yaml played with `podman play kube`, and the
#      text -> tokenizer -> token_ids -> /apply flow run inside the Pod;
#   5. docker/compose.yaml with podman-compose (what it supports);
#   6. static checks of the Kubernetes manifests and the compose file.
#
# Everything runs in a podman setup of its own (containers.conf,
# storage.conf, CNI config and storage under $STATE), so the machine's own
# podman images and containers are never touched, and everything the run
# started is removed on exit, failed or not. Only the cached base image
# stays; `tests/docker/run.sh --purge` deletes it and $STATE too.
# Needs root. Last line: "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

STATE=${POSENC_DOCKER_STATE:-/var/lib/posenc-test-docker}
RUNDIR=/run/posenc-test-docker
BASE_IMAGE=docker.io/library/debian:trixie
VERSION=$(sed -n 's/^#define PE_VERSION_STRING "\(.*\)"$/\1/p' include/posenc.h)
IMAGE=posenc:$VERSION
TOK_IMAGE=posenc-tokenizer:$VERSION
OCI_IMAGE=posenc-oci:$VERSION
CTR=posenc-test
CTR2=posenc-test-env
CTR3=posenc-test-model
CTR4=posenc-test-oci
POD_YAML=docker/k8s/sidecar-pod.yaml
POD=posenc-sidecar
DEP_YAML=docker/k8s/posenc.yaml
DEP_POD=posenc-pod-0 # podman names the Deployment's Pod NAME-pod-0
PROJECT=posenc-test
COMPOSE=docker/compose.yaml

if [ "${1:-}" = "--purge" ]; then
    rm -rf "$STATE" "$RUNDIR"
    echo "removed $STATE"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "tests/docker/run.sh: needs root (rootful podman); try: sudo make test-docker" >&2
    exit 1
fi

passed=0
failed=0
t_start=$(date +%s)
LOG=$(mktemp -d /tmp/posenc-test-docker.XXXXXX)

ok() { passed=$((passed + 1)); echo "ok   - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
note() { echo "# $*"; }
# check DESCRIPTION COMMAND...: passes when COMMAND exits 0.
check() {
    local desc=$1
    shift
    if "$@"; then ok "$desc"; else fail "$desc"; fi
}
show_log() { # the end of a log file, indented, for a failure
    [ -f "$1" ] && tail -n "${2:-25}" "$1" | grep -v 'level=error msg="unable to get systemd' | sed 's/^/#   /'
}

# --- a podman of our own -------------------------------------------------
# runc, not crun ("cgroups in hybrid mode not supported"), and explicit
# ulimits: podman's defaults exceed what this kind of machine allows
# ("setrlimit ... Operation not permitted").
mkdir -p "$STATE/storage" "$STATE/cni" "$STATE/models" "$RUNDIR"
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=1048576
cat >"$STATE/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
[network]
network_config_dir = "$STATE/cni"
[engine]
runtime = "runc"
events_logger = "file"
tmp_dir = "$RUNDIR/libpod"
EOF
cat >"$STATE/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$STATE/storage"
runroot = "$RUNDIR/storage"
EOF
export CONTAINERS_CONF=$STATE/containers.conf
export CONTAINERS_STORAGE_CONF=$STATE/storage.conf
unset POSENC_API_KEY
# No systemd here: healthchecks run by `podman healthcheck run` only, and
# their timers are left off rather than failing to start.
HC_ARGS=()
[ -S /run/systemd/private ] || HC_ARGS=(--health-interval=disable)

# --- cleanup, on any exit --------------------------------------------------
images_before=""
cleanup() {
    set +e
    note "cleaning up"
    podman-compose -p "$PROJECT" -f "$COMPOSE" down -v >"$LOG/compose-down.log" 2>&1
    podman play kube --down "$POD_YAML" >"$LOG/kube-down.log" 2>&1
    podman kube down "$DEP_YAML" >>"$LOG/kube-down.log" 2>&1
    podman pod rm -f "$POD" "$DEP_POD" >/dev/null 2>&1
    for c in "$CTR" "$CTR2" "$CTR3" "$CTR4" "${PROJECT}_client_1" "${PROJECT}_posenc_1" "${PROJECT}_tokenizer_1"; do
        podman rm -f -v "$c" >/dev/null 2>&1
    done
    podman network rm -f "${PROJECT}_default" podman-default-kube-network >/dev/null 2>&1
    podman volume rm -f "${PROJECT}_models" >/dev/null 2>&1
    podman volume prune -f >/dev/null 2>&1
    podman rmi -f "$IMAGE" "$TOK_IMAGE" "$OCI_IMAGE" >/dev/null 2>&1
    # Every other image this run made (build stages, the pod's pause image),
    # keeping the base image that was there before.
    if [ -n "$images_before" ]; then
        for id in $(podman images -a -q --no-trunc 2>/dev/null); do
            case " $images_before " in *" $id "*) ;; *) podman rmi -f "$id" >/dev/null 2>&1 ;; esac
        done
    fi
    podman image prune -f >/dev/null 2>&1
    left=$(podman ps -a -q | wc -l)
    [ "$left" -eq 0 ] || echo "# warning: $left containers left in $STATE"
    rm -rf "$LOG"
    echo "# took $(($(date +%s) - t_start)) s"
    echo "$passed passed, $failed failed"
    if [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then exit 0; else exit 1; fi
}
trap cleanup EXIT
trap 'fail "interrupted by a signal"; exit 130' INT TERM

# --- helpers ---------------------------------------------------------------
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port_free() {
    /usr/bin/python3 -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}
# http METHOD URL [BODY] -> prints "STATUS BODY"
http() {
    local out
    if [ $# -ge 3 ]; then
        out=$(curl -sS -m 30 -X "$1" -H 'Content-Type: application/json' --data-binary "$3" \
            -w '\n%{http_code}' "$2" 2>&1)
    else
        out=$(curl -sS -m 30 -X "$1" -w '\n%{http_code}' "$2" 2>&1)
    fi
    printf '%s %s\n' "${out##*$'\n'}" "${out%$'\n'*}"
}
# expect DESCRIPTION WANT GOT
expect() {
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1"; echo "#   want: $2"; echo "#   got:  $3"; fi
}
# wait_for SECONDS COMMAND...: retries COMMAND every 0.2 s
wait_for() {
    local deadline=$(($(date +%s) + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}
healthy() { # healthy CONTAINER: the image's HEALTHCHECK passes now
    podman healthcheck run "$1" >"$LOG/hc.log" 2>&1 &&
        [ "$(podman inspect -f '{{.State.Health.Status}}' "$1" 2>/dev/null)" = healthy ]
}
jq_py() { # jq_py EXPR < json: a Python expression over `d`
    /usr/bin/python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}
debs_in() { # debs_in IMAGE: the first downloaded .deb or apt package list in it
    podman run --rm --no-healthcheck --user 0 --entrypoint /usr/bin/find "$1" / -xdev \
        \( -name '*.deb' -o -path '/var/lib/apt/lists/*_Packages' \) -print -quit
}
uid_of_pid1() { # uid_of_pid1 CONTAINER: the effective uid of its main process, seen from the host
    local pid
    pid=$(podman inspect -f '{{.State.Pid}}' "$1" 2>/dev/null) || return 1
    [ "${pid:-0}" -gt 0 ] && awk '/^Uid:/ {print $3}' "/proc/$pid/status"
}

# --- 0. tools -----------------------------------------------------------------
for tool in podman runc debootstrap podman-compose curl /usr/bin/python3; do
    command -v "$tool" >/dev/null 2>&1 || { fail "tool $tool is missing (tools/install-deps.sh docker)"; exit 1; }
done
note "podman $(podman version -f '{{.Client.Version}}' 2>/dev/null), state in $STATE"

# Leftovers of an interrupted run.
podman-compose -p "$PROJECT" -f "$COMPOSE" down -v >/dev/null 2>&1
podman play kube --down "$POD_YAML" >/dev/null 2>&1
podman kube down "$DEP_YAML" >/dev/null 2>&1
podman rm -f -v "$CTR" "$CTR2" "$CTR3" >/dev/null 2>&1

# --- 1. base image ------------------------------------------------------------
if podman image exists "$BASE_IMAGE"; then
    ok "base image $BASE_IMAGE (cached in $STATE)"
else
    if tar=$(tests/debian13/minbase.sh "${POSENC_DEBIAN13_CACHE:-/var/tmp/posenc-debian13}") &&
        podman import --change 'CMD ["bash"]' "$tar" "$BASE_IMAGE" >"$LOG/import.log" 2>&1; then
        ok "base image $BASE_IMAGE made with debootstrap and podman import"
    else
        fail "the base image $BASE_IMAGE (debootstrap, podman import)"; show_log "$LOG/import.log"
    fi
    podman image exists "$BASE_IMAGE" || exit 1
fi
images_before=$(podman images -a -q --no-trunc)

# --- 2. build both images -----------------------------------------------------
t0=$(date +%s)
if timeout 1200 podman build --format docker -t "$IMAGE" . >"$LOG/build-posenc.log" 2>&1; then
    ok "podman build -t $IMAGE . ($(($(date +%s) - t0)) s)"
else
    fail "podman build -t $IMAGE ."; show_log "$LOG/build-posenc.log" 40; exit 1
fi
t0=$(date +%s)
if timeout 900 podman build --format docker -t "$TOK_IMAGE" docker/tokenizer >"$LOG/build-tok.log" 2>&1; then
    ok "podman build -t $TOK_IMAGE docker/tokenizer ($(($(date +%s) - t0)) s)"
else
    fail "podman build -t $TOK_IMAGE docker/tokenizer"; show_log "$LOG/build-tok.log" 40; exit 1
fi
check "the tokenizer model was trained at build time" grep -q 'trained /opt/tokenizer/tokenizer.model' "$LOG/build-tok.log"
size=$(podman image inspect -f '{{.Size}}' "$IMAGE")
tsize=$(podman image inspect -f '{{.Size}}' "$TOK_IMAGE")
note "image sizes: $IMAGE $((size / 1000000)) MB, $TOK_IMAGE $((tsize / 1000000)) MB"
check "posenc image under 250 MB ($((size / 1000000)) MB)" test "$size" -lt 250000000

cfg=$(podman image inspect -f '{{json .Config}}' "$IMAGE")
expect "image runs as user 10001:10001" "10001:10001" "$(jq_py 'd.get("User")' <<<"$cfg")"
expect "image exposes 8080/tcp" "True" "$(jq_py '"8080/tcp" in (d.get("ExposedPorts") or {})' <<<"$cfg")"
expect "image sets POSENC_HOST=0.0.0.0" "True" "$(jq_py '"POSENC_HOST=0.0.0.0" in d.get("Env", [])' <<<"$cfg")"
expect "image has /models as a volume" "True" "$(jq_py '"/models" in (d.get("Volumes") or {})' <<<"$cfg")"
expect "entrypoint is exec form, the binary itself" "['/usr/local/bin/posenc-server']" \
    "$(jq_py 'd.get("Entrypoint")' <<<"$cfg")"
expect "HEALTHCHECK is the binary's --check (kept by --format docker)" \
    "['CMD', '/usr/local/bin/posenc-server', '--check']" \
    "$(podman image inspect -f '{{json .HealthCheck}}' "$IMAGE" | jq_py '(d or {}).get("Test")')"
check "no curl, wget or compiler in the runtime image" \
    podman run --rm --no-healthcheck --entrypoint /bin/sh "$IMAGE" -c \
    '! command -v curl && ! command -v wget && ! command -v gcc && ! command -v cc && ! command -v make'
expect "OCI label org.opencontainers.image.version" "$VERSION" \
    "$(podman image inspect -f '{{index .Labels "org.opencontainers.image.version"}}' "$IMAGE")"
expect "the binary in the image is the same version" "posenc $VERSION" \
    "$(podman run --rm --no-healthcheck "$IMAGE" --version 2>&1)"
for i in "$IMAGE" "$TOK_IMAGE"; do
    expect "no downloaded .deb and no apt package list in $i" "" "$(debs_in "$i" 2>&1)"
done
# podman's default image format, OCI, has no HEALTHCHECK (podman build warns
# and drops it): the same check is then given at run time. The OCI image is
# the one built above converted (what `podman build --format oci` makes,
# without building again: it shares no cached layer with a docker-format
# build).
if podman push "$IMAGE" "oci-archive:$LOG/oci.tar:$OCI_IMAGE" >"$LOG/build-oci.log" 2>&1 &&
    podman pull "oci-archive:$LOG/oci.tar" >>"$LOG/build-oci.log" 2>&1 &&
    rm -f "$LOG/oci.tar"; then
    expect "the image in OCI format keeps no HEALTHCHECK" "" \
        "$(podman image inspect -f '{{if .HealthCheck}}{{.HealthCheck.Test}}{{end}}' "$OCI_IMAGE")"
    podman run -d --name "$CTR4" "${HC_ARGS[@]}" --read-only \
        --health-cmd '["/usr/local/bin/posenc-server", "--check"]' "$OCI_IMAGE" >"$LOG/run4.log" 2>&1
    wait_for 30 podman exec "$CTR4" /usr/local/bin/posenc-server --check
    check "OCI image run with --health-cmd posenc-server --check: healthy" healthy "$CTR4"
    podman rm -f -v "$CTR4" >/dev/null 2>&1
else
    fail "the image in OCI format ($OCI_IMAGE)"; show_log "$LOG/build-oci.log"
fi

# --- 3. run the posenc image --------------------------------------------------
port=$(free_port)
if podman run -d --name "$CTR" "${HC_ARGS[@]}" --read-only \
    -p "127.0.0.1:$port:8080" -v "$STATE/models:/models:ro" \
    -e POSENC_OMP_THREADS=1 -e POSENC_DRAIN_TIMEOUT=15 \
    "$IMAGE" >"$LOG/run.log" 2>&1; then
    ok "podman run -p 127.0.0.1:$port:8080 --read-only $IMAGE"
else
    fail "podman run $IMAGE"; show_log "$LOG/run.log"
fi
check "server says 'posenc listening on http://0.0.0.0:8080'" \
    wait_for 30 sh -c "podman logs $CTR 2>/dev/null | grep -q '^posenc listening on http://0.0.0.0:8080$'"
base=http://127.0.0.1:$port
expect "GET /healthz" '200 {"status":"ok"}' "$(http GET "$base/healthz")"
expect "GET /readyz" '200 {"status":"ready"}' "$(http GET "$base/readyz")"
expect "POST /encode: the sinusoidal table for shape [3, 4]" \
    '200 {"scheme":"sinusoidal","shape":[3,4],"encoded":[[0,1,0,1],[0.84147096,0.5403023,0.009999833,0.99995],[0.9092974,-0.41614684,0.019998666,0.9998]]}' \
    "$(http POST "$base/encode" '{"shape": [3, 4]}')"
# Identity projections on zero embeddings: q = k = v = z = PE.
apply_body='{"model": {"d_model": 4, "heads": 1, "weights": {"wq": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], "wk": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], "wv": [[2,0,0,0],[0,2,0,0],[0,0,2,0],[0,0,0,2]]}}, "embeddings": [[0,0,0,0],[0,0,0,0]], "return": ["q", "k", "v"]}'
res=$(http POST "$base/apply" "$apply_body")
expect "POST /apply: status" 200 "${res%% *}"
expect "POST /apply: q = k = PE, v = 2 PE" \
    '[[[0,1,0,1],[0.84147096,0.5403023,0.009999833,0.99995]],[[0,1,0,1],[0.84147096,0.5403023,0.009999833,0.99995]],[[0,2,0,2],[1.6829419,1.0806046,0.019999666,1.9999]]]' \
    "$(jq_py 'json.dumps([d["q"], d["k"], d["v"]], separators=(",", ":"))' <<<"${res#* }" 2>/dev/null)"
check "HEALTHCHECK passes (podman healthcheck run)" healthy "$CTR"
expect "the server process runs as uid 10001 (seen from the host)" 10001 "$(uid_of_pid1 "$CTR")"
expect "PID 1 in the container is posenc-server itself (no shell)" posenc-server \
    "$(podman top "$CTR" pid comm 2>/dev/null | awk '$1 == 1 {print $2}')"
check "POSENC_OMP_THREADS from the environment (omp_threads=1)" \
    sh -c "podman logs $CTR 2>&1 | grep -q 'omp_threads=1 '"

# POSENC_* configure it; HEALTHCHECK follows POSENC_PORT; /healthz needs no key.
port2=$(free_port)
podman run -d --name "$CTR2" "${HC_ARGS[@]}" --read-only -p "127.0.0.1:$port2:9090" \
    -e POSENC_PORT=9090 -e POSENC_API_KEY=s3cret -e POSENC_LOG_FORMAT=json "$IMAGE" >"$LOG/run2.log" 2>&1
if wait_for 30 curl -sf "http://127.0.0.1:$port2/healthz"; then
    expect "POSENC_API_KEY: /info without the key is 401" 401 "$(http GET "http://127.0.0.1:$port2/info" | cut -d' ' -f1)"
    expect "POSENC_API_KEY: /info with the key is 200" 200 \
        "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' "http://127.0.0.1:$port2/info")"
    check "HEALTHCHECK follows POSENC_PORT=9090" healthy "$CTR2"
    check "POSENC_LOG_FORMAT=json gives JSON log lines" \
        sh -c "podman logs $CTR2 2>&1 | grep -q '^{.*}$'"
else
    fail "container with POSENC_PORT=9090 did not come up"; show_log "$LOG/run2.log"
fi
podman rm -f -v "$CTR2" >/dev/null 2>&1

# A model directory on the /models volume, when the binary loads models:
# posenc's own format (tests/docker/tiny_model.py).
help_text=$(podman run --rm "${HC_ARGS[@]}" "$IMAGE" --help 2>&1)
if grep -q 'NAME=DIR' <<<"$help_text" && ! grep -q 'Not supported yet' <<<"$help_text"; then
    rm -rf "$STATE/models/tiny"
    /usr/bin/python3 tests/docker/tiny_model.py write "$STATE/models/tiny"
    chmod -R a+rX "$STATE/models"
    port3=$(free_port)
    podman run -d --name "$CTR3" "${HC_ARGS[@]}" --read-only -p "127.0.0.1:$port3:8080" \
        -v "$STATE/models:/models:ro" -e POSENC_MODEL=tiny=/models/tiny "$IMAGE" >"$LOG/run3.log" 2>&1
    if wait_for 30 curl -sf "http://127.0.0.1:$port3/readyz"; then
        curl -sS -m 30 -o "$LOG/tiny.json" -H 'Content-Type: application/json' \
            -d '{"model": "tiny", "token_ids": [2, 1, 0], "return": ["q", "v"]}' \
            "http://127.0.0.1:$port3/apply"
        check "a model on the /models volume (POSENC_MODEL=tiny=/models/tiny) answers /apply" \
            /usr/bin/python3 tests/docker/tiny_model.py check "$LOG/tiny.json" ||
            echo "#   got: $(head -c 300 "$LOG/tiny.json")"
    else
        fail "a model on the /models volume: the server did not come up"
        podman logs "$CTR3" 2>&1 | tail -5 | sed 's/^/#   /'
    fi
    podman rm -f -v "$CTR3" >/dev/null 2>&1
else
    note "this posenc-server loads no model directories yet: /models volume check skipped"
fi

# SIGTERM while a request runs: the request completes, the server exits 0.
/usr/bin/python3 - "$LOG/big.json" <<'EOF'
import base64, json, sys
n, d = 2048, 512
body = {"embeddings": base64.b64encode(bytes(4 * n * d)).decode(), "shape": [n, d],
        "return": ["q", "k", "v"]}
json.dump(body, open(sys.argv[1], "w"))
EOF
curl -sS -m 60 -o "$LOG/big.out" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "@$LOG/big.json" "$base/apply" >"$LOG/big.status" 2>"$LOG/big.err" &
curl_pid=$!
# Send SIGTERM once the request is in flight (the /metrics request itself
# counts as one).
wait_for 10 sh -c "curl -s $base/metrics | grep -Eq '^posenc_in_flight_requests ([2-9]|[1-9][0-9])'" ||
    note "(the request finished before SIGTERM could catch it in flight)"
t0=$(date +%s)
podman kill --signal TERM "$CTR" >/dev/null 2>&1
rc=$(timeout 40 podman wait "$CTR" 2>/dev/null)
elapsed=$(($(date +%s) - t0))
wait "$curl_pid"
expect "SIGTERM: the container exits 0 (in ${elapsed} s)" 0 "$rc"
check "SIGTERM: the server logged its drain" \
    sh -c "podman logs $CTR 2>&1 | grep -q 'SIGTERM: draining' && podman logs $CTR 2>&1 | grep -q 'stopped after'"
expect "SIGTERM: the request in flight still got its 200" 200 "$(cat "$LOG/big.status" 2>/dev/null)"
expect "SIGTERM: ... and a whole answer (2048 rows of q)" 2048 \
    "$(jq_py 'len(d["q"])' <"$LOG/big.out" 2>/dev/null)"
podman rm -f -v "$CTR" >/dev/null 2>&1

# --- 4. the sidecar Pod (podman play kube) ------------------------------------
# The manifest's hostPorts (18080, 18081); if something on this machine
# already listens there, a copy of the manifest with free ones is played.
pod_yaml=$POD_YAML
pe_port=18080
tok_port=18081
if ! port_free "$pe_port" || ! port_free "$tok_port"; then
    pe_port=$(free_port)
    tok_port=$(free_port)
    pod_yaml=$LOG/sidecar-pod.yaml
    sed -e "s/hostPort: 18080$/hostPort: $pe_port/" -e "s/hostPort: 18081$/hostPort: $tok_port/" \
        "$POD_YAML" >"$pod_yaml"
    note "127.0.0.1:18080 or :18081 is taken here: playing $POD_YAML with hostPorts $pe_port and $tok_port"
fi
POD_YAML=$pod_yaml
if podman play kube "$POD_YAML" >"$LOG/kube.log" 2>&1; then
    ok "podman play kube docker/k8s/sidecar-pod.yaml"
else
    fail "podman play kube docker/k8s/sidecar-pod.yaml"; show_log "$LOG/kube.log"
fi
check "Pod: posenc ready on its hostPort 127.0.0.1:$pe_port" wait_for 30 curl -sf "http://127.0.0.1:$pe_port/readyz"
check "Pod: tokenizer healthy on its hostPort 127.0.0.1:$tok_port" wait_for 30 curl -sf "http://127.0.0.1:$tok_port/healthz"
# podman turns httpGet probes into `curl` commands, which the images do not
# carry, so the probes are made here as the kubelet makes them, and the
# images' own HEALTHCHECK commands are run inside the Pod.
expect "Pod: posenc livenessProbe GET /healthz" 200 "$(http GET "http://127.0.0.1:$pe_port/healthz" | cut -d' ' -f1)"
expect "Pod: posenc readinessProbe GET /readyz" 200 "$(http GET "http://127.0.0.1:$pe_port/readyz" | cut -d' ' -f1)"
check "Pod: posenc's HEALTHCHECK command (posenc-server --check) passes inside the Pod" \
    podman exec "$POD-posenc" /usr/local/bin/posenc-server --check
check "Pod: tokenizer's HEALTHCHECK command passes inside the Pod" \
    podman exec "$POD-tokenizer" python3 /opt/tokenizer/tokenizer.py --check
expect "Pod: tokenizer turns text into ids" 200 \
    "$(http POST "http://127.0.0.1:$tok_port/tokenize" '{"text": "The dog bites the man."}' | cut -d' ' -f1)"
if podman exec "$POD-tokenizer" python3 /opt/tokenizer/client.py >"$LOG/client.log" 2>&1 &&
    grep -q '^ok: text -> tokenizer -> token_ids -> posenc /apply -> Q, K, V$' "$LOG/client.log"; then
    ok "Pod: text -> tokenizer -> token_ids -> /apply -> Q, K, V over the Pod's localhost, checked against a reference"
    sed 's/^/#   /' "$LOG/client.log"
else
    fail "Pod: client flow"; show_log "$LOG/client.log"
fi
cpu_limit=$(/usr/bin/python3 -c '
import math, sys, yaml
pod = yaml.safe_load(open(sys.argv[1]))
c = [c for c in pod["spec"]["containers"] if c["name"] == "posenc"][0]
v = str(c["resources"]["limits"]["cpu"])
print(math.ceil(float(v[:-1]) / 1000 if v.endswith("m") else float(v)))' "$POD_YAML")
check "Pod: OpenMP threads = the CPU limit in the manifest ($cpu_limit)" \
    sh -c "podman logs $POD-posenc 2>&1 | grep -q 'omp_threads=$cpu_limit '"
expect "Pod: posenc runs as uid 10001" 10001 "$(uid_of_pid1 "$POD-posenc")"
expect "Pod: tokenizer runs as uid 10002" 10002 "$(uid_of_pid1 "$POD-tokenizer")"
podman pod stop -t 40 "$POD" >"$LOG/pod-stop.log" 2>&1
expect "Pod: SIGTERM, posenc exits 0" 0 "$(podman inspect -f '{{.State.ExitCode}}' "$POD-posenc" 2>&1)"
expect "Pod: SIGTERM, tokenizer exits 0" 0 "$(podman inspect -f '{{.State.ExitCode}}' "$POD-tokenizer" 2>&1)"
check "Pod: torn down (podman play kube --down)" sh -c "podman play kube --down $POD_YAML >/dev/null 2>&1 && ! podman pod exists $POD"

# --- 4b. the Deployment as shipped (podman kube play docker/k8s/posenc.yaml) --
# podman 4.3 plays the Deployment as one Pod, posenc-pod-0 (the replicas are the HPA's),
# publishes nothing (no containerPort), runs the exec liveness probe as its
# healthcheck and stops with its own 10 s; the Pod is reached at its address
# on podman's network, from this machine only.
t0=$(date +%s)
if podman kube play "$DEP_YAML" >"$LOG/kube-dep.log" 2>&1; then
    ok "podman kube play $DEP_YAML, unchanged ($(($(date +%s) - t0)) s)"
else
    fail "podman kube play $DEP_YAML"; show_log "$LOG/kube-dep.log"
fi
expect "Deployment: one Pod, $DEP_POD" "$DEP_POD" "$(podman pod ps --format '{{.Name}}' --filter "name=^$DEP_POD\$")"
expect "Deployment: no port published on the machine" "" \
    "$(podman pod inspect -f '{{range .InfraConfig.PortBindings}}{{.}}{{end}}' "$DEP_POD" 2>&1)"
infra=$(podman pod inspect -f '{{.InfraContainerID}}' "$DEP_POD" 2>/dev/null)
dep_ip=$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$infra" 2>/dev/null)
note "the Deployment's Pod is at ${dep_ip:-?} on podman's network"
check "Deployment: ready (GET /readyz on the probe port 8081)" wait_for 30 curl -sf "http://$dep_ip:8081/readyz"
expect "Deployment: POST /encode on 8080" \
    '200 {"scheme":"sinusoidal","shape":[2,2],"encoded":[[0,1],[0.84147096,0.5403023]]}' \
    "$(http POST "http://$dep_ip:8080/encode" '{"shape": [2, 2]}')"
check "Deployment: the livenessProbe (posenc-server --check) is podman's healthcheck and passes" \
    healthy "$DEP_POD-posenc"
expect "Deployment: /info memory budget = requests.memory (1Gi, POSENC_MAX_MEMORY from the downward API)" \
    1073741824 "$(curl -s -m 10 "http://$dep_ip:8080/info" | jq_py 'd["memory"]["budget_bytes"]' 2>&1)"
expect "Deployment: cgroup memory limit = limits.memory (2Gi)" 2147483648 \
    "$(podman inspect -f '{{.HostConfig.Memory}}' "$DEP_POD-posenc" 2>&1)"
check "Deployment: OpenMP threads = limits.cpu (2)" \
    sh -c "podman logs $DEP_POD-posenc 2>&1 | grep -q 'omp_threads=2 '"
expect "Deployment: posenc runs as uid 10001" 10001 "$(uid_of_pid1 "$DEP_POD-posenc")"
t0=$(date +%s)
podman pod stop "$DEP_POD" >"$LOG/dep-stop.log" 2>&1
elapsed=$(($(date +%s) - t0))
expect "Deployment: podman pod stop (its 10 s), posenc drains and exits 0 in ${elapsed} s" 0 \
    "$(podman inspect -f '{{.State.ExitCode}}' "$DEP_POD-posenc" 2>&1)"
check "Deployment: torn down (podman kube down)" \
    sh -c "podman kube down $DEP_YAML >/dev/null 2>&1 && ! podman pod exists $DEP_POD"

# --- 5. compose (podman-compose) ---------------------------------------------
# podman-compose 1.0.3 ignores depends_on conditions (the client waits for
# the services itself) and cannot share localhost between services (the Pod
# above covers that); service names resolve through the dnsname plugin.
export POSENC_HOST_PORT TOKENIZER_HOST_PORT
POSENC_HOST_PORT=$(free_port)
TOKENIZER_HOST_PORT=$(free_port)
if timeout 300 podman-compose -p "$PROJECT" -f "$COMPOSE" up -d >"$LOG/compose.log" 2>&1; then
    ok "podman-compose -f $COMPOSE up -d"
else
    fail "podman-compose up"; show_log "$LOG/compose.log"
fi
check "compose: client container finished" \
    wait_for 90 sh -c "[ \"\$(podman inspect -f '{{.State.Status}}' ${PROJECT}_client_1)\" = exited ]"
podman logs "${PROJECT}_client_1" >"$LOG/compose-client.log" 2>&1
expect "compose: client exit status" 0 "$(podman inspect -f '{{.State.ExitCode}}' "${PROJECT}_client_1" 2>&1)"
check "compose: text -> tokenizer -> /apply flow across services by name" \
    grep -q '^ok: text -> tokenizer' "$LOG/compose-client.log" || show_log "$LOG/compose-client.log"
check "compose: posenc HEALTHCHECK passes" healthy "${PROJECT}_posenc_1"
check "compose: tokenizer HEALTHCHECK passes" healthy "${PROJECT}_tokenizer_1"
expect "compose: posenc published on 127.0.0.1:$POSENC_HOST_PORT" '200 {"status":"ready"}' \
    "$(http GET "http://127.0.0.1:$POSENC_HOST_PORT/readyz")"
podman-compose -p "$PROJECT" -f "$COMPOSE" stop >"$LOG/compose-stop.log" 2>&1
expect "compose: posenc exits 0 on stop (SIGTERM)" 0 \
    "$(podman inspect -f '{{.State.ExitCode}}' "${PROJECT}_posenc_1" 2>&1)"
podman-compose -p "$PROJECT" -f "$COMPOSE" down -v >"$LOG/compose-down.log" 2>&1
podman network rm -f "${PROJECT}_default" >/dev/null 2>&1
check "compose: torn down" sh -c "[ -z \"\$(podman ps -a -q --filter label=io.podman.compose.project=$PROJECT)\" ]"

# --- 6. static checks of the manifests -----------------------------------------
if /usr/bin/python3 tests/docker/check_manifests.py >"$LOG/manifests.log" 2>&1; then
    while read -r line; do ok "$line"; done <"$LOG/manifests.log"
elif grep -q '^FAIL ' "$LOG/manifests.log"; then
    while read -r line; do
        case $line in FAIL*) fail "${line#FAIL }" ;; *) ok "$line" ;; esac
    done <"$LOG/manifests.log"
else
    fail "tests/docker/check_manifests.py stopped"; show_log "$LOG/manifests.log"
fi

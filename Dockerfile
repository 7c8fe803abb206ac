# posenc server image (docs/deployment.md):
#
#   docker build -t posenc:1.3.0 .
#   podman build --format docker -t posenc:1.3.0 .   (OCI, podman's default,
#                                                    has no HEALTHCHECK)
#
# Two stages on Debian 13 (trixie): its libmicrohttpd 1.0.1 refuses
# malformed header sections itself, where Debian 12's 0.9.75 sends the
# header block of its own 400 twice. The build stage installs the -dev
# packages with the project's own tools/install-deps.sh (one list for the
# machine and the image) and runs make; the runtime stage gets only the
# shared libraries the binary links against, the binary, and a non-root
# user. Nothing is downloaded but Debian packages, and no downloaded .deb
# stays in a layer (a base made by debootstrap keeps them otherwise).

# The release, in the labels; the build fails unless the binary says the
# same (include/posenc.h PE_VERSION_STRING; tests/docker/check_manifests.py checks
# the tags in docker/ against it).
ARG POSENC_VERSION=1.3.0

FROM debian:trixie AS build
ARG POSENC_VERSION
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY tools/install-deps.sh tools/
RUN tools/install-deps.sh build && apt-get clean && rm -rf /var/lib/apt/lists/*
# The sources make reads (Makefile, lib/, api/, server/, web/, tools/; see
# .dockerignore for what stays out).
COPY . .
RUN make -j"$(nproc)" build/posenc-server && strip build/posenc-server \
    && test "$(build/posenc-server --version)" = "posenc $POSENC_VERSION"

FROM debian:trixie
ARG POSENC_VERSION
LABEL org.opencontainers.image.title="posenc" \
      org.opencontainers.image.description="Transformer positional encodings and position-aware Q/K/V projections over HTTP/JSON" \
      org.opencontainers.image.version="$POSENC_VERSION" \
      org.opencontainers.image.base.name="debian:trixie"
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       libmicrohttpd12t64 libjansson4 libgomp1 libstdc++6 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
    && useradd --system --uid 10001 --user-group --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin posenc \
    && mkdir -p /models
COPY --from=build /src/build/posenc-server /usr/local/bin/posenc-server
# Fails the build if a runtime library is missing.
RUN /usr/local/bin/posenc-server --version

# Every flag has a POSENC_* variable (posenc-server --help); set them with
# `docker run -e`. Change the port with POSENC_PORT, not --port, so that the
# HEALTHCHECK below probes the port the server listens on.
# OMP_WAIT_POLICY=passive: OpenMP threads sleep between the parallel
# regions of a request instead of spinning (libgomp reads it before main, so
# the server cannot set it itself); measured here it saves about a quarter of
# the CPU per /apply and is no slower (README, Performance).
ENV POSENC_HOST=0.0.0.0 \
    POSENC_PORT=8080 \
    OMP_WAIT_POLICY=passive
EXPOSE 8080
# Model directories (--model NAME=/models/NAME) are mounted here.
VOLUME ["/models"]
USER 10001:10001
# The binary probes its own /healthz: no curl in the image.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/posenc-server", "--check"]
# Exec form, no shell in between: SIGTERM from `docker stop` reaches the
# server, which drains and exits 0 (keep POSENC_DRAIN_TIMEOUT plus
# POSENC_DRAIN_SEND_TIMEOUT, by default 6 + 3 s, under the stop timeout,
# 10 s in Docker).
ENTRYPOINT ["/usr/local/bin/posenc-server"]

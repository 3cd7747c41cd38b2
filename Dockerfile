# multikueue-adapter container image.
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t multikueue-adapter:latest .
# (the build context has no .git: without VERSION the binary reports the project version)
# Build stage: Debian bookworm with the project's own dependency script; runtime stage:
# bookworm-slim with only the shared libraries the binary links against.

FROM debian:bookworm AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# The dependency layer only changes when the script does.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
ARG VERSION=""
# The same script scripts/test.sh builds with, so the tests check this very build; stripped on
# install.
RUN bash scripts/build-image-binary.sh /build "${VERSION}" \
 && install -D -m 0755 -s /build/multikueue-adapter /out/multikueue-adapter

FROM debian:bookworm-slim
# Runtime libraries of the -dev packages used at build time (bookworm names):
#   libssl-dev -> libssl3, libcpp-httplib-dev -> libcpp-httplib0.11 (pulls libbrotli1, zlib1g),
#   libspdlog-dev -> libspdlog1.10, libfmt-dev -> libfmt9, libyaml-dev -> libyaml-0-2,
#   prometheus-cpp-dev -> libprometheus-cpp-core1.0, libjemalloc-dev -> libjemalloc2,
#   libsimdjson-dev -> libsimdjson14.
#   nlohmann-json and CLI11 are header-only. scripts/check-image-libraries.sh (run by the
#   tests) fails when the binary needs a library this list does not bring.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
      libssl3 \
      libcpp-httplib0.11 \
      libspdlog1.10 \
      libfmt9 \
      libyaml-0-2 \
      libprometheus-cpp-core1.0 \
      libjemalloc2 \
      libsimdjson14 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home --shell /usr/sbin/nologin nonroot
COPY --from=build /out/multikueue-adapter /usr/local/bin/multikueue-adapter
# Fail the build, not the pod, when a runtime library is missing.
RUN missing="$(ldd /usr/local/bin/multikueue-adapter | grep -F 'not found' || true)"; \
    if [ -n "$missing" ]; then echo "missing runtime libraries:" >&2; echo "$missing" >&2; exit 1; fi; \
    /usr/local/bin/multikueue-adapter version
USER 65532:65532
# webhook (TLS), probes (/healthz, /readyz), metrics (/metrics)
EXPOSE 9443 8081 8080
ENTRYPOINT ["/usr/local/bin/multikueue-adapter"]
CMD ["serve"]

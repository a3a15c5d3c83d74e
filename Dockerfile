# syntax=docker/dockerfile:1
# seal: `seal serve` in a container (docs/DEPLOYING.md). Three stages: the release build, whose
# binary is split into a stripped executable and its debug info; `debuginfo`, that debug info
# alone (export it, keep it with the image tag); and the slim runtime with the stripped binary,
# CA certificates and the deployment config, run as a fixed non-root user. Build:
#   docker build --build-arg SEAL_GIT_COMMIT=$(git rev-parse HEAD) -t seal:$(git rev-parse --short HEAD) .
#   docker build --build-arg SEAL_GIT_COMMIT=$(git rev-parse HEAD) --target debuginfo -o type=local,dest=dist .

FROM rust:1-bookworm AS build
# The commit the binary is built from, for `seal --version` and the build-info metric. The build
# context has no .git (.dockerignore), so it cannot be read here: it must be passed.
ARG SEAL_GIT_COMMIT
WORKDIR /src
# The whole workspace (see .dockerignore): Cargo resolves every member and bench target, and the
# binary embeds config/, prompts/ and crates/seal-core/src/contracts/ at compile time.
COPY . .
# Cache mounts keep the registry and target folder between builds; the binary is copied out of
# the cached target folder, which is not part of the image layer. The split: --only-keep-debug
# keeps the DWARF line tables (profile.release.debug) in seal.debug; --strip-debug drops them
# from the executable but keeps its symbol table, so a panic backtrace still names functions;
# the debuglink and the linker's build id tie the two together for gdb, addr2line, debuginfod.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    case "${SEAL_GIT_COMMIT:-}" in \
      *[!0-9a-f]* | "") commit=bad ;; \
      *) if [ "${#SEAL_GIT_COMMIT}" -eq 40 ]; then commit=ok; else commit=bad; fi ;; \
    esac \
    && if [ "$commit" != ok ]; then \
         echo "pass --build-arg SEAL_GIT_COMMIT=\$(git rev-parse HEAD) (40 hex digits)" >&2; exit 1; \
       fi \
    && cargo build --release --locked --bin seal \
    && mkdir -p /out \
    && objcopy --only-keep-debug target/release/seal /out/seal.debug \
    && objcopy --strip-debug --add-gnu-debuglink=/out/seal.debug target/release/seal /out/seal \
    && readelf --notes /out/seal >/tmp/notes && grep -q 'Build ID' /tmp/notes \
    && /out/seal --version

# The debug info of exactly the binary in the image (matched by its build id).
FROM scratch AS debuginfo
COPY --from=build /out/seal.debug /seal.debug

FROM debian:bookworm-slim AS runtime
ARG SEAL_GIT_COMMIT
LABEL org.opencontainers.image.revision="${SEAL_GIT_COMMIT}"
# CA certificates only: the judges and S3 are reached over https (rustls with the system roots).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# A fixed uid/gid so that runAsUser, file ownership and fsGroup can name it.
RUN groupadd --system --gid 10001 seal \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin seal \
    && install -d -o 10001 -g 10001 -m 0700 /run/seal /run/seal/keys
COPY --from=build /out/seal /usr/local/bin/seal
# The deployment config (listen 0.0.0.0:7878, S3 store, key at /run/seal/keys/seal.key.pem), the
# same file the kustomize base generates its ConfigMap from; Kubernetes mounts that ConfigMap over
# this path. seal takes its config only from --config.
COPY deploy/kubernetes/base/seal.toml /etc/seal/seal.toml
USER 10001:10001
WORKDIR /run/seal
EXPOSE 7878
# `docker run IMAGE verify --all --trust PEM` etc. run the other commands on the same config.
ENTRYPOINT ["/usr/local/bin/seal", "--config", "/etc/seal/seal.toml"]
CMD ["serve", "--log-format", "json"]

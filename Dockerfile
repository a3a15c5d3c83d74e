# syntax=docker/dockerfile:1
# seal: `seal serve` in a container (docs/DEPLOYING.md). Two stages: the release build, then a
# slim runtime with the binary, CA certificates and the deployment config, run as a fixed
# non-root user. Build: docker build -t seal:$(git rev-parse --short HEAD) .

FROM rust:1-bookworm AS build
WORKDIR /src
# The whole workspace (see .dockerignore): Cargo resolves every member and bench target, and the
# binary embeds config/, prompts/ and crates/seal-core/src/contracts/ at compile time.
COPY . .
# Cache mounts keep the registry and target folder between builds; the binary is copied out of
# the cached target folder, which is not part of the image layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin seal \
    && install -D -m 0755 target/release/seal /out/seal

FROM debian:bookworm-slim AS runtime
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
# The deployment config (listen 0.0.0.0:7878, S3 store, key at /run/seal/keys/seal.key.pem);
# Kubernetes mounts its ConfigMap over this path. seal takes its config only from --config.
COPY deploy/seal.toml /etc/seal/seal.toml
USER 10001:10001
WORKDIR /run/seal
EXPOSE 7878
# `docker run IMAGE verify --all --trust PEM` etc. run the other commands on the same config.
ENTRYPOINT ["/usr/local/bin/seal", "--config", "/etc/seal/seal.toml"]
CMD ["serve", "--log-format", "json"]

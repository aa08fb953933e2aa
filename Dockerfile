# agenticos: one static-ish binary plus the files it reads at run time.
#
#   docker build -t agenticos .
#   docker run --rm -p 8000:8000 -v agenticos-data:/app/data agenticos
#
# Everything the console writes is under /app/data (a volume: local snapshots, the vault key file,
# the default SQLite file) and /tmp (snapshot archives while they are assembled), so the root
# filesystem may be read-only (`--read-only --tmpfs /tmp`, as docker-compose.yml runs it).
#
# Works with BuildKit and the classic builder alike (no RUN --mount).
#
# Both base images are build arguments (defaults below), for a machine that builds its own bases
# instead of pulling them, e.g. the Docker tests' local one:
#   docker build --build-arg BASE_IMAGE=agenticos-test/base:<hash> --build-arg RUST_IMAGE=... .
# The run stage needs only ca-certificates and the `groupadd`/`useradd` tools on its base.
ARG RUST_IMAGE=rust:1.95-bookworm
ARG BASE_IMAGE=debian:bookworm-slim

# ---- build ------------------------------------------------------------------
# Pinned toolchain (Cargo.toml's rust-version is the floor; this is what we ship with).
FROM ${RUST_IMAGE} AS build
WORKDIR /src

# Build the dependencies in their own layer, so that a source change compiles only this crate.
# Cargo reads the manifest's targets before the source exists: each path it names gets an empty
# stand-in. The tests and benches stay stand-ins (.dockerignore keeps them, and the docs, out of
# the context, so that editing them does not rebuild the image); the sources replace the rest.
COPY Cargo.toml Cargo.lock ./
# The build's settings (.cargo/config.toml: how the bundled SQLite is compiled) before the first build.
COPY .cargo/ .cargo/
RUN sed -n 's/^path = "\(.*\)"$/\1/p' Cargo.toml | while read -r target; do \
      mkdir -p "$(dirname "$target")" && echo 'fn main() {}' > "$target"; \
    done \
 && cargo build --release --locked --bin agenticos

COPY . .
# Templates (askama) and migrations are compiled into the binary. The stand-ins' build is older
# than the copied sources only by its own clock: touch the crate roots so cargo rebuilds them.
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked --bin agenticos \
 && install -m 0755 target/release/agenticos /usr/local/bin/agenticos

# ---- run --------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 agenticos \
 && useradd --system --uid 10001 --gid agenticos --home-dir /app --no-create-home \
      --shell /usr/sbin/nologin agenticos

WORKDIR /app
COPY --from=build /usr/local/bin/agenticos /usr/local/bin/agenticos
COPY static/ /app/static/
COPY catalog/ /app/catalog/
# ./data holds the default SQLite file and the generated vault key file: mount a volume here.
RUN mkdir -p /app/data && chown agenticos:agenticos /app/data

USER agenticos:agenticos
ENV AGENTICOS_BIND=0.0.0.0:8000
EXPOSE 8000
# GET /readyz on loopback (AGENTICOS_BIND's port): healthy while the console serves and its database
# answers. The image has no curl: the binary asks.
HEALTHCHECK --interval=5s --timeout=10s --start-period=30s --retries=3 CMD ["agenticos", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/agenticos"]
CMD ["serve"]

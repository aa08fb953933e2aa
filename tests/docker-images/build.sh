#!/usr/bin/env bash
# Build the images the Docker tests need, here, without any registry (none is reachable):
#
#   build.sh              base, sandboxd, python, workbench (each only when missing)
#   build.sh deployment   the same, then rust, postgres and console (the compose stack's test)
#
# - base:      `agenticos-test/base:<hash>`, a Debian bookworm rootfs made by mmdebstrap
#              (python3, python3-venv, ca-certificates) and loaded with `docker import`.
# - sandboxd:  `ghcr.io/vstorm-co/sandboxd:<catalog/sandboxd.version>`, the tag
#              docker-compose.yml names: the pinned pydantic-ai-backend[server] of
#              tests/peer/requirements.txt in a venv on the base (pip reaches PyPI).
# - python:    `agenticos-test/python:<hash>`, the reduced stand-in for the catalog's `python`
#              runtime image: the base plus a `python` command (Debian's Python 3.11, not 3.12).
# - workbench: `agenticos-test/workbench:<hash>`, the reduced stand-in for the catalog's
#              `workbench` build: the base plus curl, git, jq, procps (no Node, LibreOffice,
#              pandoc or Python packages).
# - rust:      `agenticos-test/rust:<hash>`, the stand-in for the Dockerfile's RUST_IMAGE: the
#              base plus gcc and this machine's own Rust toolchain (rustc, cargo).
# - postgres:  `agenticos-test/postgres:<hash>`, the stand-in for docker-compose.yml's PostgreSQL
#              image: Debian's PostgreSQL 15 with the official image's POSTGRES_* contract.
# - console:   `agenticos-test/console:local`, the repository's own Dockerfile built with
#              RUST_IMAGE=rust and BASE_IMAGE=base. Docker's layer cache decides what to rebuild
#              (the dependencies have their own layer); a replaced image is removed.
#
# Each image carries `agenticos.test.image-hash=<hash>`: a sha256 over this script and the
# image's inputs (its Dockerfile, requirements.txt, the pin), so a changed input builds again
# and an unchanged one is skipped. All of it runs under an exclusive lock
# (${AGENTICOS_IMAGE_LOCK:-/tmp/agenticos-test-images.lock}), so parallel tests build once.
# Prints one `<name>=<image>` line per image on stdout, and `built <name> in <s> s` on stderr
# for each image it had to build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
label=agenticos.test=docker-images

exec 9>"${AGENTICOS_IMAGE_LOCK:-/tmp/agenticos-test-images.lock}"
flock 9

hash_of() { cat "$here/build.sh" "$@" | sha256sum | cut -c1-16; }

current_hash() {
    docker image inspect --format '{{ index .Config.Labels "agenticos.test.image-hash" }}' "$1" 2>/dev/null || true
}

timed() {
    local name="$1"
    shift
    local start=$SECONDS
    "$@"
    echo "built $name in $((SECONDS - start)) s" >&2
}

# retire IMAGE…: removes the other tags of each IMAGE's repository that this script built (an
# input changed, so the hash in the tag did). An image rebuilt under the same tag (sandboxd, console)
# is removed by its build step instead, by id. Untagged images in general are left alone: the
# console build stage's layers are untagged and inherit the rust image's labels, and they are
# Docker's build cache.
retire() {
    local image old
    for image in "$@"; do
        for old in $(docker images --filter "label=$label" --filter "reference=${image%:*}" --format '{{.Repository}}:{{.Tag}}'); do
            [ "$old" = "$image" ] || docker rmi "$old" >/dev/null 2>&1 || true
        done
    done
}

# image_id TAG: the id of TAG, or nothing.
image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

# replaced OLD_ID TAG: removes OLD_ID when TAG now names another image.
replaced() {
    if [ -n "$1" ] && [ "$1" != "$(image_id "$2")" ]; then docker rmi "$1" >/dev/null 2>&1 || true; fi
}

# --- base ------------------------------------------------------------------------------------
base_packages=python3,python3-venv,ca-certificates
base_hash="$(printf '%s\n' "$base_packages" | hash_of -)"
base="agenticos-test/base:$base_hash"
build_base() {
    local work
    work="$(mktemp -d)"
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" RETURN
    mmdebstrap --quiet --variant=minbase --include="$base_packages" --format=tar bookworm "$work/rootfs.tar" \
        >&2
    docker import \
        --change "LABEL $label agenticos.test.image-hash=$base_hash" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        "$work/rootfs.tar" "$base" >/dev/null
}
if [ "$(current_hash "$base")" != "$base_hash" ]; then timed base build_base; fi
echo "base=$base"

# --- images on the base ------------------------------------------------------------------------
# build_on NAME TAG HASH DIR: docker build DIR (its Dockerfile takes BASE), labelled with HASH.
build_on() {
    local name="$1" tag="$2" hash="$3" dir="$4"
    shift 4
    docker build --quiet --build-arg "BASE=$base" --label "$label" \
        --label "agenticos.test.image-hash=$hash" "$@" -t "$tag" "$dir" >/dev/null
}

version="$(tr -d '[:space:]' <"$repo/catalog/sandboxd.version")"
sandboxd="ghcr.io/vstorm-co/sandboxd:$version"
sandboxd_hash="$(printf '%s\n' "$base_hash" "$version" | hash_of - "$here/sandboxd/Dockerfile" "$repo/tests/peer/requirements.txt")"
if [ "$(current_hash "$sandboxd")" != "$sandboxd_hash" ]; then
    previous="$(image_id "$sandboxd")"
    context="$(mktemp -d)"
    cp "$here/sandboxd/Dockerfile" "$repo/tests/peer/requirements.txt" "$context/"
    # pip inside the build checks PyPI's certificate against the host's bundle.
    cp /etc/ssl/certs/ca-certificates.crt "$context/host-ca.crt"
    timed sandboxd build_on sandboxd "$sandboxd" "$sandboxd_hash" "$context"
    rm -rf "$context"
    replaced "$previous" "$sandboxd"
fi
echo "sandboxd=$sandboxd"

built=()
for runtime in python workbench; do
    hash="$(printf '%s\n' "$base_hash" | hash_of - "$here/$runtime/Dockerfile")"
    tag="agenticos-test/$runtime:$hash"
    if [ "$(current_hash "$tag")" != "$hash" ]; then
        timed "$runtime" build_on "$runtime" "$tag" "$hash" "$here/$runtime"
    fi
    echo "$runtime=$tag"
    built+=("$tag")
done
# Children before their parents: an image another one is built on cannot be removed first.
retire "${built[@]}" "$sandboxd" "$base"

[ "${1:-}" = deployment ] || exit 0

# --- the deployment's images -------------------------------------------------------------------
sysroot="$(rustc --print sysroot)"
rust_hash="$(printf '%s\n' "$base_hash" "$(rustc -vV)" "$(cargo -V)" | hash_of - "$here/rust/Dockerfile")"
rust="agenticos-test/rust:$rust_hash"
if [ "$(current_hash "$rust")" != "$rust_hash" ]; then
    context="$(mktemp -d)"
    cp "$here/rust/Dockerfile" "$context/"
    cp /etc/ssl/certs/ca-certificates.crt "$context/host-ca.crt"
    mkdir -p "$context/toolchain/bin" "$context/toolchain/lib/rustlib"
    cp "$sysroot/bin/rustc" "$sysroot/bin/cargo" "$context/toolchain/bin/"
    cp -a "$sysroot"/lib/lib* "$context/toolchain/lib/"
    cp -a "$sysroot/lib/rustlib/x86_64-unknown-linux-gnu" "$context/toolchain/lib/rustlib/"
    timed rust build_on rust "$rust" "$rust_hash" "$context"
    rm -rf "$context"
fi
echo "rust=$rust"

postgres_hash="$(printf '%s\n' "$base_hash" | hash_of - "$here/postgres/Dockerfile" "$here/postgres/entrypoint.sh")"
postgres="agenticos-test/postgres:$postgres_hash"
if [ "$(current_hash "$postgres")" != "$postgres_hash" ]; then
    timed postgres build_on postgres "$postgres" "$postgres_hash" "$here/postgres"
fi
echo "postgres=$postgres"
retire "$rust" "$postgres"

console=agenticos-test/console:local
previous="$(image_id "$console")"
start=$SECONDS
docker build --quiet --build-arg "RUST_IMAGE=$rust" --build-arg "BASE_IMAGE=$base" --label "$label" \
    -t "$console" "$repo" >/dev/null
if [ "$(image_id "$console")" != "$previous" ]; then
    echo "built console in $((SECONDS - start)) s" >&2
    replaced "$previous" "$console"
fi
# The build stage's last layer (untagged, with the rust image's labels) is the build cache of the
# next build: keep the newest on the current rust image, remove older ones (a source change left
# them; the dependency layer they share with the newest stays) and those on an older rust image.
for old in $(docker images --quiet --filter dangling=true --filter "label=$label"); do
    if [ "$(docker image inspect --format '{{ index .Config.Labels "agenticos.test.image-hash" }}' "$old")" = "$rust_hash" ]; then
        if [ -z "${kept:-}" ]; then kept="$old"; continue; fi
    fi
    docker rmi "$old" >/dev/null 2>&1 || true
done
echo "console=$console"

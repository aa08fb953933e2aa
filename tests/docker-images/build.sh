#!/usr/bin/env bash
# Build the images the Docker tests need, here, without any registry (none is reachable):
#
#   build.sh            base, sandboxd, python, workbench (each only when missing)
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
    context="$(mktemp -d)"
    cp "$here/sandboxd/Dockerfile" "$repo/tests/peer/requirements.txt" "$context/"
    # pip inside the build checks PyPI's certificate against the host's bundle.
    cp /etc/ssl/certs/ca-certificates.crt "$context/host-ca.crt"
    timed sandboxd build_on sandboxd "$sandboxd" "$sandboxd_hash" "$context"
    rm -rf "$context"
fi
echo "sandboxd=$sandboxd"

for runtime in python workbench; do
    hash="$(printf '%s\n' "$base_hash" | hash_of - "$here/$runtime/Dockerfile")"
    tag="agenticos-test/$runtime:$hash"
    if [ "$(current_hash "$tag")" != "$hash" ]; then
        timed "$runtime" build_on "$runtime" "$tag" "$hash" "$here/$runtime"
    fi
    echo "$runtime=$tag"
done

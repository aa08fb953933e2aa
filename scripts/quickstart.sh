#!/usr/bin/env bash
# Install agenticos on this host without a checkout (docs/operating.md "Installing"):
#
#   scripts/quickstart.sh [--release-url URL] [--dir DIR] [-- DEPLOY_OPTIONS…]
#   scripts/quickstart.sh --env-only
#
# 1. Fetches this release's files from URL (default: the release's download address below, or
#    AGENTICOS_RELEASE_URL) into DIR (default ./agenticos): `docker-compose.yml`, `env.example`
#    (the `.env` template), `sandboxd.version` (the sandboxd pin) and `deploy.sh`.
# 2. Checks that the compose file runs the sandboxd image of the release's pin
#    (ghcr.io/vstorm-co/sandboxd:<sandboxd.version>), so the pair that was tested is the pair
#    that runs.
# 3. Makes `.env` from the template, once (an existing `.env` is kept: it holds the secrets):
#    a new vault key, PostgreSQL password and sandboxd token, the Docker socket's group, and the
#    console image of this release (AGENTICOS_IMAGE). A variable of the template set in the
#    environment (AGENTICOS_PORT, AGENTICOS_PUBLIC_URL, SANDBOXD_WORKSPACE_ROOT, …) is written
#    with that value instead; AGENTICOS_PUBLIC_URL follows AGENTICOS_PORT unless set.
# 4. Starts the stack with `deploy.sh --no-build DEPLOY_OPTIONS…` (the images are pulled: the
#    console's is the release's, nothing is built), sandboxd included.
#
# --env-only does step 3 alone, in the current directory from its `.env.example` (a checkout:
# `make dev` and `make prod` use it). Needs bash, curl (not for --env-only), od, base64, stat.
set -euo pipefail

version=0.1.0
release_url="${AGENTICOS_RELEASE_URL:-https://github.com/vstorm-co/agenticos-sandbox/releases/download/v$version}"
dir=agenticos
env_only=false
deploy_options=()
while [ $# -gt 0 ]; do
    case "$1" in
        --release-url)
            release_url="${2:?--release-url needs a URL}"
            shift
            ;;
        --dir)
            dir="${2:?--dir needs a directory}"
            shift
            ;;
        --env-only) env_only=true ;;
        --)
            shift
            deploy_options=("$@")
            break
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "quickstart: unknown option $1 (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done

log() { echo "quickstart: $*" >&2; }

random_hex() { od -An -vtx1 -N"$1" /dev/urandom | tr -d ' \n'; }
# 32 random bytes as unpadded base64url (43 characters), as `agenticos sandbox-token` makes them.
random_token() { head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '='; }

# make_env TEMPLATE: writes ./.env from TEMPLATE (mode 0600) unless it exists.
make_env() {
    if [ -f .env ]; then
        log "keeping the existing .env (it holds this deployment's secrets)"
        return
    fi
    local generated name value line
    generated="$(mktemp)"
    # shellcheck disable=SC2064
    trap "rm -f '$generated'" RETURN
    declare -A chosen=(
        [AGENTICOS_VAULT_KEY]="$(random_hex 32)"
        [POSTGRES_PASSWORD]="$(random_hex 16)"
        [SANDBOXD_TOKEN]="$(random_token)"
        [DOCKER_GID]="$(stat -c %g /var/run/docker.sock 2>/dev/null || true)"
    )
    if ! $env_only; then chosen[AGENTICOS_IMAGE]="ghcr.io/vstorm-co/agenticos:$version"; fi
    if [ -z "${AGENTICOS_PUBLIC_URL:-}" ] && [ -n "${AGENTICOS_PORT:-}" ]; then
        chosen[AGENTICOS_PUBLIC_URL]="http://localhost:$AGENTICOS_PORT"
    fi
    while IFS= read -r line || [ -n "$line" ]; do
        name="${line%%=*}"
        if [[ "$line" =~ ^[A-Z_][A-Z0-9_]*= ]]; then
            if [ -n "${!name:-}" ]; then
                value="${!name}"
            elif [ -n "${chosen[$name]:-}" ]; then
                value="${chosen[$name]}"
            else
                value="${line#*=}"
            fi
            printf '%s=%s\n' "$name" "$value"
        else
            printf '%s\n' "$line"
        fi
    done <"$1" >"$generated"
    (
        umask 077
        cp "$generated" .env
    )
    chmod 600 .env
    log "wrote .env (mode 0600) with a new vault key, PostgreSQL password and sandboxd token; back it up"
}

if $env_only; then
    [ -f .env.example ] || {
        log "no .env.example in $(pwd): run --env-only in the checkout"
        exit 1
    }
    make_env .env.example
    exit 0
fi

mkdir -p "$dir"
cd "$dir"
log "fetching the release's files from $release_url into $(pwd)"
for file in docker-compose.yml env.example sandboxd.version deploy.sh; do
    curl --fail --silent --show-error --location --output "$file.part" "$release_url/$file"
    mv "$file.part" "$file"
done
chmod +x deploy.sh

pin="$(tr -d '[:space:]' <sandboxd.version)"
if ! grep -Eq "^[[:space:]]*image:[[:space:]]*ghcr\.io/vstorm-co/sandboxd:${pin//./\\.}[[:space:]]*$" docker-compose.yml; then
    log "docker-compose.yml does not run ghcr.io/vstorm-co/sandboxd:$pin, the release's sandboxd: not started"
    exit 1
fi
log "sandboxd is pinned to ghcr.io/vstorm-co/sandboxd:$pin"

make_env env.example

log "starting the stack"
./deploy.sh --no-build "${deploy_options[@]}"
log "done: create the first owner with"
log "  docker-compose exec app agenticos admin create-owner --email you@example.com --organization \"Your org\""

#!/usr/bin/env bash
# Deploy (or redeploy) the stack of docker-compose.yml on this host, in the order that keeps it
# serving (docs/operating.md "Deployment"):
#
#   scripts/deploy.sh [--no-pull] [--no-build]
#
# Run it in the directory holding docker-compose.yml and its .env (the checkout). It calls
# `docker-compose` (or `docker compose`), so COMPOSE_FILE and COMPOSE_PROJECT_NAME work as
# compose documents them.
#
#  1. Pull the pinned images and build the console image (--no-pull and --no-build skip these,
#     for a host that gets its images another way).
#  2. With SANDBOXD_TOKEN set (in the environment or .env), the sandbox service is part of the
#     deployment (the compose profile `sandbox`; without the token it is neither prepared nor
#     started):
#     - the workspace root (SANDBOXD_WORKSPACE_ROOT) exists and belongs to uid 10001, the uid
#       sandboxd and its sandboxes run as; DOCKER_GID is the engine socket's group;
#     - the library's own `python -m pydantic_ai_backends.remote.prepare` runs in a one-off
#       container of the NEW sandboxd image, with the new configuration, while the running
#       sandboxd keeps serving: every runtime's image is pulled or built now, not in the first
#       session after the swap. A failed build is tried three times (the library's ATTEMPTS);
#       every runtime still not prepared is named in this log (sandboxd builds it when a
#       session asks). An invalid configuration stops the deploy before anything is replaced.
#  3. PostgreSQL is up and healthy, and `agenticos migrate` of the NEW console image applies the
#     migrations before the new console serves.
#  4. sandboxd is replaced (it finds its runtimes built), then the console.
#
# Every line it prints starts with `deploy: `, or is the output of the command it names.
set -euo pipefail

pull=true
build=true
for arg in "$@"; do
    case "$arg" in
        --no-pull) pull=false ;;
        --no-build) build=false ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "deploy: unknown option $arg (see --help)" >&2
            exit 2
            ;;
    esac
done

log() { echo "deploy: $*" >&2; }

if docker-compose version >/dev/null 2>&1; then
    compose=(docker-compose)
elif docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
else
    log "neither docker-compose nor docker compose is installed"
    exit 1
fi
if [ -z "${COMPOSE_FILE:-}" ] && [ ! -f docker-compose.yml ]; then
    log "no docker-compose.yml in $(pwd): run this in the directory that holds it"
    exit 1
fi

# env_value NAME: NAME from the environment, else from ./.env (the last assignment), else empty.
env_value() {
    if [ -n "${!1:-}" ]; then
        printf '%s' "${!1}"
    elif [ -f .env ]; then
        sed -n "s/^$1=//p" .env | tail -1 | sed -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'$/\1/"
    fi
}

# The compose file needs DOCKER_GID (sandboxd's group_add) even where sandboxd is not started.
if [ -z "$(env_value DOCKER_GID)" ]; then
    DOCKER_GID="$(stat -c %g /var/run/docker.sock)"
    export DOCKER_GID
    log "DOCKER_GID=$DOCKER_GID (the group of /var/run/docker.sock)"
fi
sandbox=false
if [ -n "$(env_value SANDBOXD_TOKEN)" ]; then
    sandbox=true
    export COMPOSE_PROFILES=sandbox
else
    log "SANDBOXD_TOKEN is not set: the sandbox service (profile sandbox) is not prepared or started"
fi

# --- 1. images ----------------------------------------------------------------------------------
if $pull; then
    services=(postgres)
    if $sandbox; then services+=(sandboxd); fi
    log "pulling ${services[*]}"
    "${compose[@]}" pull "${services[@]}"
fi
if $build; then
    log "building the console image"
    "${compose[@]}" build app
fi

# --- 2. runtimes, before the running sandboxd is replaced ---------------------------------------
if $sandbox; then
    root="$(env_value SANDBOXD_WORKSPACE_ROOT)"
    root="${root:-/var/lib/agenticos/sandboxd-workspaces}"
    mkdir -p "$root"
    chown 10001:10001 "$root"
    log "workspace root $root belongs to uid 10001"

    log "preparing the runtimes in a one-off container of the new sandboxd image"
    output="$(mktemp)"
    trap 'rm -f "$output"' EXIT
    set +e
    "${compose[@]}" run --rm --no-deps -T sandboxd python -m pydantic_ai_backends.remote.prepare 2>&1 \
        | tee "$output" >&2
    status=${PIPESTATUS[0]}
    set -e
    case "$status" in
        0) log "every runtime is prepared" ;;
        1)
            missing="$(sed -n 's/^Not prepared: \(.*\)\. sandboxd will build.*/\1/p' "$output")"
            # shellcheck disable=SC2086 # one word per alias
            for alias in ${missing//,/ }; do
                log "runtime not prepared: $alias (sandboxd builds it when a session asks, and that session waits)"
            done
            [ -n "$missing" ] || log "a runtime was not prepared (see above)"
            ;;
        2)
            log "sandboxd refused its configuration (see above): nothing was replaced"
            exit 1
            ;;
        *)
            log "preparing the runtimes failed with status $status (see above): nothing was replaced"
            exit 1
            ;;
    esac
fi

# --- 3. the database and its migrations, before the new console serves --------------------------
log "starting postgres"
"${compose[@]}" up -d --no-deps --no-build postgres
postgres="$("${compose[@]}" ps -q postgres)"
for _ in $(seq 1 120); do
    health="$(docker inspect --format '{{.State.Health.Status}}' "$postgres")"
    [ "$health" = healthy ] && break
    sleep 1
done
if [ "$health" != healthy ]; then
    log "postgres is not healthy after 120 s ($health)"
    exit 1
fi
log "applying migrations with the new console image"
"${compose[@]}" run --rm --no-deps -T app migrate
log "migrations applied"

# --- 4. the swap --------------------------------------------------------------------------------
if $sandbox; then
    log "replacing sandboxd"
    "${compose[@]}" up -d --no-deps --no-build sandboxd
    # The console is replaced only once the new sandboxd answers, so that no session of the new
    # console meets a sandboxd still starting (uvicorn takes seconds to listen).
    answered=false
    for _ in $(seq 1 120); do
        if "${compose[@]}" exec -T sandboxd python -c 'import os, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/healthz" % os.environ.get("SANDBOXD_PORT", "8080"), timeout=2)' >/dev/null 2>&1; then
            answered=true
            break
        fi
        sleep 1
    done
    if ! $answered; then
        log "the new sandboxd did not answer /healthz within 120 s: the console was not replaced"
        exit 1
    fi
    log "sandboxd answers"
fi
log "replacing the console"
"${compose[@]}" up -d --no-deps --no-build app
log "done"

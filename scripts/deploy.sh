#!/usr/bin/env bash
# Deploy (or redeploy) the stack of docker-compose.yml on this host, in the order that keeps it
# serving (docs/operating.md "Deployment"):
#
#   scripts/deploy.sh [--no-pull] [--no-build] [--no-sandbox]
#
# Run it in the directory holding docker-compose.yml and its .env (the checkout, or the folder
# scripts/quickstart.sh made). It calls `docker-compose` (or `docker compose`), so COMPOSE_FILE
# and COMPOSE_PROJECT_NAME work as compose documents them.
#
#  1. Pull the pinned images and build the console image (--no-pull and --no-build skip these,
#     for a host that gets its images another way; with --no-build the console image AGENTICOS_IMAGE
#     names is pulled instead, as an install without a checkout does).
#  2. With SANDBOXD_TOKEN set (in the environment or .env), the sandbox service is part of the
#     deployment (the compose profile `sandbox`; without the token it is neither prepared nor
#     started; --no-sandbox leaves it out even with the token, for a console whose sandboxes run
#     on other hosts):
#     - the workspace root (SANDBOXD_WORKSPACE_ROOT) exists and belongs to uid 10001, the uid
#       sandboxd and its sandboxes run as; DOCKER_GID is the engine socket's group;
#     - the library's own `python -m pydantic_ai_backends.remote.prepare` runs in a one-off
#       container of the NEW sandboxd image, with the new configuration, while the running
#       sandboxd keeps serving: every runtime's image is pulled or built now, not in the first
#       session after the swap. A failed build is tried three times (the library's ATTEMPTS);
#       a runtime still not prepared after that fails the deploy, named, before anything is
#       replaced (as does an invalid configuration).
#     With AGENTICOS_DOCKER_HOST=tcp://docker-proxy:2375 the Docker proxy (the profile
#     `docker-proxy`) is started too, before the console.
#  3. PostgreSQL is up and healthy, and `agenticos migrate` of the NEW console image applies the
#     migrations before the new console serves.
#  4. sandboxd is replaced and the deploy waits until it is healthy (its compose healthcheck),
#     then the console is replaced and the deploy waits until it is healthy (`/readyz`). A
#     service that does not become healthy within 120 s fails the deploy, named.
#
# Every line it prints starts with `deploy: `, or is the output of the command it names.
set -euo pipefail

pull=true
build=true
no_sandbox=false
for arg in "$@"; do
    case "$arg" in
        --no-pull) pull=false ;;
        --no-build) build=false ;;
        --no-sandbox) no_sandbox=true ;;
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
# Links in mails name AGENTICOS_PUBLIC_URL: unset, it follows the published port.
if [ -z "$(env_value AGENTICOS_PUBLIC_URL)" ]; then
    port="$(env_value AGENTICOS_PORT)"
    AGENTICOS_PUBLIC_URL="http://localhost:${port:-8000}"
    export AGENTICOS_PUBLIC_URL
    log "AGENTICOS_PUBLIC_URL=$AGENTICOS_PUBLIC_URL (set it in .env for another address, or https)"
fi
profiles=()
sandbox=false
if $no_sandbox; then
    log "--no-sandbox: the sandbox service (profile sandbox) is not prepared or started"
elif [ -n "$(env_value SANDBOXD_TOKEN)" ]; then
    sandbox=true
    profiles+=(sandbox)
else
    log "SANDBOXD_TOKEN is not set: the sandbox service (profile sandbox) is not prepared or started"
fi
proxy=false
case "$(env_value AGENTICOS_DOCKER_HOST)" in
    tcp://docker-proxy:* | http://docker-proxy:*)
        proxy=true
        profiles+=(docker-proxy)
        ;;
esac
if [ "${#profiles[@]}" -gt 0 ]; then
    COMPOSE_PROFILES="$(
        IFS=,
        echo "${profiles[*]}"
    )"
    export COMPOSE_PROFILES
fi

# wait_healthy SERVICE: waits until the service's container is healthy (its compose healthcheck),
# at most 120 s; otherwise names it with its last health output and returns 1.
wait_healthy() {
    local service="$1" container health=""
    container="$("${compose[@]}" ps -q "$service")"
    for _ in $(seq 1 120); do
        health="$(docker inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}no healthcheck{{end}}' "$container" 2>/dev/null || echo "no container")"
        [ "$health" = healthy ] && return 0
        sleep 1
    done
    log "$service is not healthy after 120 s ($health); its last checks said:"
    docker inspect --format '{{if .State.Health}}{{range .State.Health.Log}}{{.Output}}{{end}}{{end}}' "$container" 2>/dev/null | tail -5 >&2 || true
    return 1
}

# --- 1. images ----------------------------------------------------------------------------------
if $pull; then
    services=(postgres)
    if $sandbox; then services+=(sandboxd); fi
    if ! $build; then services+=(app); fi
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
                log "runtime not prepared: $alias (see its build above)"
            done
            [ -n "$missing" ] || log "a runtime was not prepared (see above)"
            log "a runtime could not be prepared: nothing was replaced (fix it, or remove it from the catalog, and deploy again)"
            exit 1
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
wait_healthy postgres || exit 1
log "applying migrations with the new console image"
"${compose[@]}" run --rm --no-deps -T app migrate
log "migrations applied"

# --- 4. the swap --------------------------------------------------------------------------------
# The console is replaced only once the new sandboxd is healthy, so that no session of the new
# console meets a sandboxd still starting (uvicorn takes seconds to listen).
if $sandbox; then
    log "replacing sandboxd"
    "${compose[@]}" up -d --no-deps --no-build sandboxd
    if ! wait_healthy sandboxd; then
        log "the new sandboxd is not healthy: the console was not replaced"
        exit 1
    fi
    log "sandboxd is healthy"
fi
if $proxy; then
    log "starting the Docker proxy"
    "${compose[@]}" up -d --no-deps --no-build docker-proxy
fi
# The old console stops before the new one listens on the published port: connections in that gap
# (a second or more) are refused (docs/operating.md "Deploying").
log "replacing the console"
"${compose[@]}" up -d --no-deps --no-build app
wait_healthy app || exit 1
log "the console is healthy"
log "done"

#!/usr/bin/env bash
# Start the real sandboxd (pydantic-ai-backend, pinned in requirements.txt) as a
# local test peer, no Docker.
#
#   run.sh [VENV_DIR]
#
# VENV_DIR (or $SANDBOXD_PEER_VENV; default ${TMPDIR:-/tmp}/sandboxd-peer-venv) is
# created if missing and given requirements.txt; reinstalled only when that file
# changes. Creating and installing hold an exclusive lock on VENV_DIR.lock, so
# parallel first starts (tests) share one venv instead of racing on it. Then the
# service listens on 127.0.0.1:${PORT:-18080}.
#
# Environment (all optional; every other SANDBOXD_* variable passes through to
# the library's own parser, e.g. SANDBOXD_MAX_SESSIONS_PER_TENANT=2):
#   PORT                     default 18080
#   SANDBOXD_TOKEN           default: a random token, printed as SANDBOXD_TOKEN=...
#   SANDBOXD_WORKSPACE_ROOT  default ${TMPDIR:-/tmp}/sandboxd-peer-workspaces; set it
#                            empty for a service that keeps no workspaces on disk
#   SANDBOXD_RUNTIMES        default: aliases `workbench` (the default) and `python`
#   PEER_MOUNT_NS            auto|on|off (see sandboxd_peer.py)
#   PEER_DROP_ROUTES         comma-separated route paths to remove from the app
#                            before serving, e.g. /workspaces/trees (see
#                            sandboxd_peer.py): an older service, simulated
#   PEER_PACKAGE_VERSION     run another pydantic-ai-backend release, e.g. 0.2.36:
#                            requirements.txt with only that pin changed, in a
#                            venv of its own (VENV_DIR-<version>)
#   PEER_BUILD_DELAY_SECONDS N: starting a sandbox of a runtime the service builds
#                            (e.g. `slow=@coding`) takes N seconds, as an image
#                            build would (see sandboxd_peer.py)
#   PEER_BUILD_FAIL          comma-separated runtime aliases whose build fails
#                            (502 Could not start sandbox)
#   PEER_STOP_ON_STDIN_EOF   1: stop the service when standard input reaches end of
#                            file, i.e. when the process holding its other end
#                            (a test binary) exits, however it exits
#   PYTHON                   interpreter for the venv, default python3
#
# Prints SANDBOXD_URL=... (and SANDBOXD_TOKEN=... when generated), then execs the
# service, so SIGTERM/SIGINT reach uvicorn directly: it stops every sandbox and
# exits 0. A SIGTERM during setup (or while waiting for the lock) also exits 0.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${SANDBOXD_PEER_VENV:-${TMPDIR:-/tmp}/sandboxd-peer-venv}}"
python="${PYTHON:-python3}"
pin_line="$(grep -E '^pydantic-ai-backend\[server\]==' "$here/requirements.txt")"
pinned="${pin_line##*==}"

# The requirements this run installs: the file itself, or (PEER_PACKAGE_VERSION)
# the same file with only the library's pin changed, so the framework pins that
# keep FastAPI's own error bodies stable stay the same for every release.
requirements="$(cat "$here/requirements.txt")"
package_version="${PEER_PACKAGE_VERSION:-$pinned}"
if [ "$package_version" != "$pinned" ]; then
    if ! [[ "$package_version" =~ ^[0-9]+(\.[0-9]+)*$ ]]; then
        echo "sandboxd peer: PEER_PACKAGE_VERSION must be a release number like 0.2.36, not '$package_version'" >&2
        exit 2
    fi
    venv="$venv-$package_version"
    requirements="$(sed -E "s/^pydantic-ai-backend\[server\]==.*/pydantic-ai-backend[server]==$package_version/" "$here/requirements.txt")"
fi

child=""
on_signal() {
    if [ -n "$child" ]; then
        # The step runs in a process group of its own (set -m), so this reaches
        # what it started too (venv's ensurepip, pip's build subprocesses).
        kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    echo "sandboxd peer: stopped during setup" >&2
    exit 0
}
trap on_signal TERM INT

# Setup steps run as background jobs in their own process group and are waited
# for, so a signal is handled at once rather than after pip finishes.
step() {
    set -m
    "$@" &
    child=$!
    set +m
    local status=0
    wait "$child" || status=$?
    child=""
    return "$status"
}

# One setup at a time per venv. flock(2) locks belong to the open file, which
# fd 9 shares with the `flock` step, so the lock stays held after that step
# exits, until fd 9 is closed below (or this script dies).
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
step flock 9

if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    # Missing, or left half-made by an interrupted run: (re)create it in place.
    echo "sandboxd peer: creating venv $venv" >&2
    step "$python" -m venv "$venv"
fi
stamp="$venv/.sandboxd-peer-requirements.sha256"
want="$(printf '%s\n' "$requirements" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "sandboxd peer: installing pydantic-ai-backend $package_version into $venv" >&2
    printf '%s\n' "$requirements" >"$venv/sandboxd-peer-requirements.txt"
    step "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$venv/sandboxd-peer-requirements.txt"
    echo "$want" >"$stamp"
fi
exec 9>&-

export SANDBOXD_HOST=127.0.0.1
export SANDBOXD_PORT="${PORT:-18080}"
if [ -z "${SANDBOXD_TOKEN:-}" ]; then
    SANDBOXD_TOKEN="$("$venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))')"
    echo "SANDBOXD_TOKEN=$SANDBOXD_TOKEN"
fi
export SANDBOXD_TOKEN
# Unset -> a default directory. Set but empty -> the library's "none": no
# workspace on disk, files die with the sandbox, native file routes answer 409.
export SANDBOXD_WORKSPACE_ROOT="${SANDBOXD_WORKSPACE_ROOT-${TMPDIR:-/tmp}/sandboxd-peer-workspaces}"
if [ -n "$SANDBOXD_WORKSPACE_ROOT" ]; then mkdir -p "$SANDBOXD_WORKSPACE_ROOT"; fi
# Images are labels only here: the custom builder never pulls or builds them.
export SANDBOXD_RUNTIMES="${SANDBOXD_RUNTIMES:-workbench=local/workbench;description=host shell in the session workspace,python=local/python;description=host python3 in the session workspace}"

if [ "${PEER_STOP_ON_STDIN_EOF:-}" = 1 ]; then
    # A watcher in this process group: `cat` returns when the other end of stdin
    # is closed, and the service (this PID, after the exec below) is then sent
    # SIGTERM, unless it already ended and this watcher was re-parented.
    # (A background job's stdin would be /dev/null, so it reads a copy: fd 8.)
    service=$$
    exec 8<&0
    (
        cat <&8 >/dev/null || true
        watcher=$BASHPID # read here: inside $(...) it would name that subshell
        parent="$(awk '{print $4}' "/proc/$watcher/stat" 2>/dev/null || true)"
        if [ "$parent" = "$service" ]; then kill -TERM "$service" 2>/dev/null || true; fi
    ) &
    exec 8<&-
fi
exec </dev/null

echo "SANDBOXD_URL=http://$SANDBOXD_HOST:$SANDBOXD_PORT"
trap - TERM INT
exec "$venv/bin/python" "$here/sandboxd_peer.py"

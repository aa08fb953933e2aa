# Sourced by the peer launchers (s3.sh, daytona.sh): their options, and one venv per peer, made
# and filled once.
#
#   peer_options [--install-only] [VENV_DIR]
#
# Sets install_only (true or false) and venv_arg (VENV_DIR, or empty).
peer_options() {
    install_only=false
    if [ "${1:-}" = "--install-only" ]; then
        install_only=true
        shift
    fi
    venv_arg="${1:-}"
}

#
#   prepare_venv LABEL VENV_DIR PYTHON REQUIREMENTS [EXECUTABLE]
#
# VENV_DIR is created if missing (or left half-made by an interrupted run) and given
# REQUIREMENTS; reinstalled only when that file changes (or VENV_DIR/bin/EXECUTABLE is missing).
# Creating and installing hold an exclusive lock on VENV_DIR.lock, so a test that starts while
# .ci/run still installs waits for that one install. LABEL names the peer in what it prints.
prepare_venv() {
    local label="$1" venv="$2" python="$3" requirements="$4" executable="${5:-}"
    mkdir -p "$(dirname "$venv")"
    exec 9>"$venv.lock"
    flock 9
    if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        echo "$label: creating venv $venv" >&2
        "$python" -m venv "$venv"
    fi
    if { [ -n "$executable" ] && [ ! -x "$venv/bin/$executable" ]; } || ! cmp -s "$requirements" "$venv/.requirements"; then
        echo "$label: installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv" >&2
        "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$requirements"
        cp "$requirements" "$venv/.requirements"
    fi
    exec 9>&-
}

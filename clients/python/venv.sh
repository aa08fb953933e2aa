#!/usr/bin/env bash
# The venv the Python providers' tests run in (tests/api/agents_python.rs): the frameworks, the
# conformance suite and pytest, pinned in requirements-test.txt.
#
#   venv.sh [--install-only] [VENV_DIR] [PYTEST_ARGS...]
#
# VENV_DIR (or $AGENTS_VENV; default ${TMPDIR:-/tmp}/agents-venv) is created if missing and given
# requirements-test.txt; reinstalled only when that file changes; creating and installing hold an
# exclusive lock on VENV_DIR.lock (tests/peer/venv.sh), so tests that start while .ci/run still
# installs wait for that one install. `--install-only` stops there (.ci/run prepares the venv
# before the tests). Otherwise pytest runs this package's tests with the package on PYTHONPATH.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../../tests/peer/venv.sh"
peer_options "$@"
[ "$#" -gt 0 ] && [ "$1" = "--install-only" ] && shift
[ "$#" -gt 0 ] && shift
venv="${venv_arg:-${AGENTS_VENV:-${TMPDIR:-/tmp}/agents-venv}}"
python="${PYTHON:-python3}"

prepare_venv "agents venv" "$venv" "$python" "$here/requirements-test.txt"
if [ "$install_only" = true ]; then
    exit 0
fi

cd "$here"
PYTHONPATH="$here/src" exec "$venv/bin/python" -m pytest "$@"

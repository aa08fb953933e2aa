#!/usr/bin/env bash
# Start the FAKE Daytona (tests/peer/daytona/fake_daytona.py; not Daytona) for the Daytona tests,
# in a venv that also holds what checks it: Daytona's official Python SDK and jsonschema, pinned in
# daytona-requirements.txt.
#
#   daytona.sh [--install-only] [VENV_DIR]
#
# VENV_DIR (or $DAYTONA_PEER_VENV; default ${TMPDIR:-/tmp}/daytona-peer-venv) is created if missing
# and given daytona-requirements.txt; reinstalled only when that file changes; creating and
# installing hold an exclusive lock on VENV_DIR.lock, so tests that start while .ci/run still
# installs wait for that one install. `--install-only` stops there (.ci/run prepares the venv
# before the tests). Otherwise the fake listens on 127.0.0.1:${PORT:-0} (0: a free port), prints
# DAYTONA_URL=..., DAYTONA_API_URL=... and DAYTONA_API_KEY=... on standard output, and serves until
# standard input reaches end of file (the test binary holding its other end exits). Its other
# settings (DAYTONA_FAKE_LOG, DAYTONA_FAKE_API_KEY, ...) are described in fake_daytona.py. The
# fake is checked against Daytona's OpenAPI documents vendored in daytona/specs/ (Apache-2.0, with
# their licence, source commit and sha256 pin; daytona/contract.py reads them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/venv.sh"
peer_options "$@"
venv="${venv_arg:-${DAYTONA_PEER_VENV:-${TMPDIR:-/tmp}/daytona-peer-venv}}"
python="${PYTHON:-python3}"
requirements="$here/daytona-requirements.txt"

prepare_venv "daytona fake" "$venv" "$python" "$requirements"
if [ "$install_only" = true ]; then
    exit 0
fi

exec "$venv/bin/python" "$here/daytona/fake_daytona.py" "${PORT:-0}"

#!/usr/bin/env bash
# Start moto's S3-compatible server (moto[s3] and its server, pinned in s3-requirements.txt) as the object
# store of the snapshot tests, no Docker.
#
#   s3.sh [--install-only] [VENV_DIR]
#
# VENV_DIR (or $S3_PEER_VENV; default ${TMPDIR:-/tmp}/s3-peer-venv) is created if missing and
# given s3-requirements.txt; reinstalled only when that file changes; creating and installing hold
# an exclusive lock on VENV_DIR.lock, so a test that starts while .ci/run still installs waits
# for that one install. `--install-only` stops there (.ci/run prepares the venv before the tests,
# so the tests' wait for the server is not spent in pip). Otherwise the server listens on
# 127.0.0.1:${PORT:-19000} until standard input reaches end of file (the test binary holding its
# other end exits), then stops.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/venv.sh"
peer_options "$@"
venv="${venv_arg:-${S3_PEER_VENV:-${TMPDIR:-/tmp}/s3-peer-venv}}"
python="${PYTHON:-python3}"
port="${PORT:-19000}"
requirements="$here/s3-requirements.txt"

prepare_venv "s3 peer" "$venv" "$python" "$requirements" moto_server
if [ "$install_only" = true ]; then
    exit 0
fi

"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"${S3_PEER_LOG:-/dev/null}" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT TERM INT
echo "S3_URL=http://127.0.0.1:$port"
cat >/dev/null || true

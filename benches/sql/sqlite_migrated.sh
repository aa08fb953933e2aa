# Sourced by the SQLite cost scripts of this folder: builds target/release/agenticos if missing,
# a venv with SQLite 3.50 from PyPI (`sqlean.py`) under the target directory, and a file migrated
# by this build at "$dir/migrated.db" ($dir is removed on exit). Then "$venv/bin/python" runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
[ -x "$target/release/agenticos" ] || cargo build --release --bin agenticos
venv="$target/sqlean-venv"
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q 'sqlean.py==3.50.4.2'; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
DATABASE_URL="sqlite://$dir/migrated.db?mode=rwc" AGENTICOS_VAULT_KEY_FILE="$dir/vault.key" AGENTICOS_LOG=warn \
    "$target/release/agenticos" migrate >/dev/null

#!/usr/bin/env bash
# The operation log's searches on PostgreSQL in the layouts issue 50 asks to compare, at two
# sizes of the same log: today's table (`plain`, the indexes of the migrations) against the log
# partitioned by day (`parted`, the same indexes on each day), and one session's B-tree on
# today's table. Each page statement is run as the store would run it (EXECUTE: planned with its
# values every time, as the store's unnamed statements are) and timed inside the server: p50 /
# p95 in ms over REQUESTS runs, with the rows it returned, the statements a page ran and the
# shared buffers its execution touched (the pages it read: the work, whatever the load); then bytes
# a row (table + indexes) and the fill's rows/s.
#
# Rows as benches/operations_log.rs `fill` writes them: ROWS of one organization over 30 days
# and as many of noise in 20 others, interleaved row by row in time order (2,000 sessions, 50
# agents, ~3 % failures, the same targets and details), then grown to ROWS2 (+ as many of noise)
# by a second time-ordered run over the same 30 days (the bench's growth; ROWS2 of 0: none). The statements are the
# store's page statements (`postgres_store::page_sql`) without the two name joins (a host's and an
# agent's name, two index probes a row returned, the same in every layout).
#
#   benches/sql/operation_log_layouts.sh [URL] [ROWS] [ROWS2] [REQUESTS]
#   benches/sql/operation_log_layouts.sh postgres://postgres@127.0.0.1:5432/test 1000000 10000000 30
#
# The database (NAME, default oplog_layouts_$$) is dropped afterwards unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
base="${1:-postgres://postgres@127.0.0.1:5432/test}"
rows="${2:-1000000}"
rows2="${3:-10000000}"
requests="${4:-30}"
name="${NAME:-oplog_layouts_$$}"
psql -qX "$base" -c "CREATE DATABASE $name" >/dev/null
if [ "${KEEP:-0}" != 1 ]; then
    trap 'psql -qX "$base" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null' EXIT
fi
url="${base%/*}/$name"
sql() { psql -qX -v ON_ERROR_STOP=1 "$url" "$@"; }

sql -f benches/sql/operation_log_layouts.sql >/dev/null

fill() { # $1 rows of the organization, $2 the run (salt)
    for layout in plain parted; do
        started=$(date +%s.%N)
        sql -c "CALL fill('$layout', $1, $2)"
        took=$(echo "$(date +%s.%N) - $started" | bc)
        printf 'filled %s: %s + %s rows in %.1f s (%.0f rows/s)\n' "$layout" "$1" "$1" "$took" \
            "$(echo "2 * $1 / $took" | bc -l)"
    done
    sql -c "VACUUM ANALYZE plain" -c "VACUUM ANALYZE parted"
}

measure() { # $1 rows of the organization
    echo "== $1 rows of the organization (+ as many of noise); $(uptime | sed 's/.*load/load/')"
    sql -c "SELECT * FROM sizes()"
    sql -c "SELECT * FROM cases($requests)"
}

fill "$rows" 1
measure "$rows"
if [ "$rows2" -gt "$rows" ]; then
    fill "$((rows2 - rows))" 2
    measure "$rows2"
fi

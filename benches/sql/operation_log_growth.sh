#!/usr/bin/env bash
# The operation log's bytes a row on PostgreSQL as the application grows it (issue 26): a fresh
# database migrated up to and including migration UNTIL (default: all), then ROWS (default
# 200,000) rows written the way the recorder writes them — in time order, 500 a statement, 21
# organizations interleaved row by row (half the rows one organization's, half 20 others'), new
# ids UUIDv7 (time first) once migration 20270102090000 is in, random UUIDs before — and the
# table's and each index's bytes a row. The database is dropped afterwards.
#
#   benches/sql/operation_log_growth.sh [postgres://postgres@127.0.0.1:5432/test] [UNTIL] [ROWS]
#   benches/sql/operation_log_growth.sh postgres://postgres@127.0.0.1:5432/test 20261231090000   # before
set -euo pipefail
cd "$(dirname "$0")/../.."
base="${1:-postgres://postgres@127.0.0.1:5432/test}"
until="${2:-99999999999999}"
rows="${3:-200000}"
name="oplog_growth_$$"
psql -qX "$base" -c "CREATE DATABASE $name" >/dev/null
trap 'psql -qX "$base" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null' EXIT
url="${base%/*}/$name"
for f in migrations/postgres/*.sql; do
    version="$(basename "$f" | cut -d_ -f1)"
    [ "$version" -le "$until" ] || break
    psql -qX -v ON_ERROR_STOP=1 "$url" -f "$f" >/dev/null 2>&1
done
idkind=v4
[ "$until" -ge 20270102090000 ] && idkind=v7
psql -qX -v ON_ERROR_STOP=1 "$url" <<SQL
-- The rows name organizations and agents that are not there: the sizes do not depend on them.
-- Their ids are UUIDs (36 characters as text; a uuid after 20270121090000_operation_log_uuid_ids).
ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_agent_id_fkey,
    DROP CONSTRAINT IF EXISTS sandbox_operations_organization_id_fkey;
CREATE PROCEDURE fill(n int) LANGUAGE plpgsql AS \$\$
DECLARE b int; t0 bigint := 1700000000000;
BEGIN
  FOR b IN 0 .. (n / 500 - 1) LOOP
    INSERT INTO sandbox_operations (id, organization_id, workspace_id, session_key, connection_id, agent_id,
        run_id, operation, target, ok, detail, duration_ms, created_at, seq)
    SELECT CASE WHEN '$idkind' = 'v7'
        THEN (lpad(to_hex(t0 + (b * 500 + i) * 5), 12, '0') || '7' || substr(md5(random()::text), 1, 3) || '8'
              || substr(md5(random()::text), 1, 15))::uuid
        ELSE gen_random_uuid() END,
      (CASE WHEN r % 2 = 0 THEN '00000000-0000-4000-8000-000000000000'
            ELSE '00000000-0000-4000-8000-' || lpad((1 + r % 20)::text, 12, '0') END)::uuid,
      NULL, 'session-' || (r % 2000), NULL, ('00000000-0000-4000-9000-' || lpad((r % 50)::text, 12, '0'))::uuid, NULL,
      (ARRAY['read', 'write', 'ls', 'mkdir', 'remove', 'execute'])[1 + r % 6],
      CASE WHEN r % 6 = 5 THEN 'cargo test --package crate' || (r % 997)
           ELSE '/workspace/src/module' || (r % 89) || '/file' || (r % 1009) || '.rs' END,
      CASE WHEN r % 33 = 0 THEN 0 ELSE 1 END,
      CASE WHEN r % 6 = 5 THEN 'exit ' || (CASE WHEN r % 33 = 0 THEN 1 ELSE 0 END) ELSE (r % 5000) || ' bytes' END,
      r % 200, t0 + (b * 500 + i) * 5, i
    FROM (SELECT i, (random() * 2147483647)::bigint AS r FROM generate_series(0, 499) AS i) AS s;
    IF b % 20 = 19 THEN COMMIT; END IF;
  END LOOP;
  COMMIT;
END \$\$;
SQL
started=$(date +%s.%N)
psql -qX -v ON_ERROR_STOP=1 "$url" -c "CALL fill($rows)"
took=$(echo "$(date +%s.%N) - $started" | bc)
echo "migrated until $until, $rows rows ($idkind ids) written in ${took} s"
psql -qX "$url" <<'SQL'
SELECT c.relname AS relation, pg_relation_size(c.oid) / (SELECT count(*) FROM sandbox_operations) AS bytes_a_row
FROM pg_class c WHERE c.relname LIKE 'sandbox_operations%' AND c.relkind IN ('r', 'i') ORDER BY 1;
SELECT pg_total_relation_size('sandbox_operations') / (SELECT count(*) FROM sandbox_operations) AS total_bytes_a_row;
SQL

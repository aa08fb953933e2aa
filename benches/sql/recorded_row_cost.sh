#!/usr/bin/env bash
# What one recorded row costs SQLite (issue 26), apart from the console: a file migrated by this
# build (`agenticos migrate`), 20,000 rows in, then rounds of 3,000 single-row inserts in
# autocommit (as the recorder writes a batch of one), process CPU a row, for the schema as it is
# and without the search index's trigger, without the seven filter indexes, without either; then
# batches of 1, 2, 4 and 16 rows a commit. SQLite 3.50 from PyPI (`sqlean.py`, in a venv under
# the target directory), WAL, synchronous=NORMAL, foreign keys off (the rows name no real
# workspace or run), 50 clients' sessions, workspaces, runs and conversations in turn.
#
#   benches/sql/recorded_row_cost.sh            # builds target/release/agenticos if missing
source "$(dirname "$0")/sqlite_migrated.sh"
"$venv/bin/python" - "$dir/migrated.db" <<'PY'
import shutil, sys, time, uuid
import sqlean as sqlite3

migrated = sys.argv[1]
# The migrations' pages into the file itself, so that a copy of the file holds them.
sqlite3.connect(migrated).execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
COLS = ("id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, operation, "
        "target, ok, detail, duration_ms, created_at, seq, conversation_id")
FILTERS = ["agent", "run", "connection", "workspace", "conversation", "org_session", "org_operation"]

def measure(label, setup, batches=(1,)):
    copy = migrated + ".copy"
    shutil.copy(migrated, copy)
    c = sqlite3.connect(copy, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=OFF"):
        c.execute("PRAGMA " + pragma)
    for statement in setup:
        c.execute(statement)
    c.execute("INSERT INTO organizations (id, name, created_at) VALUES ('org-1', 'o', 1)")
    clock = [1_700_000_000_000]

    def row(i):
        k = i % 50
        clock[0] += 1
        return [clock[0] * 1048576, str(uuid.uuid4()), "org-1", f"ws-{k:032d}", f"session-key-{k:040d}",
                f"conn-{0:032d}", f"agent-{0:032d}", f"run-{k:032d}", ["read", "write", "ls", "execute"][i % 4],
                f"/workspace/src/module{i % 89}/file{i % 1009}.rs", 1, f"{i % 5000} bytes", 3, clock[0], 0,
                f"conv-{k:032d}"]

    def insert(rows):
        values = ", ".join(["(" + ", ".join(["?"] * 16) + ")"] * len(rows))
        c.execute(f"INSERT INTO sandbox_operations (rowid, {COLS}) VALUES {values}", [v for r in rows for v in r])

    for i in range(20_000):
        insert([row(i)])
    for b in batches:
        rounds = []
        for _ in range(3):
            started, n = time.process_time(), 0
            while n < 3_000:
                insert([row(n + j) for j in range(b)])
                n += b
            rounds.append((time.process_time() - started) / n * 1e6)
        name = label if len(batches) == 1 else f"{label}, {b} a commit"
        print(f"{name:55s} {' '.join(f'{x:4.0f}' for x in rounds)} µs of CPU a row", flush=True)
    c.close()

no_search = ["DROP TRIGGER sandbox_operations_search_insert"]
no_filters = [f"DROP INDEX sandbox_operations_{i}" for i in FILTERS]
print(f"SQLite {sqlite3.sqlite_version}, three rounds of 3,000 rows each", flush=True)
measure("as the schema is", [])
measure("without the search index's trigger", no_search)
measure("without the seven filter indexes", no_filters)
measure("without either", no_search + no_filters)
measure("as the schema is", [], batches=(1, 2, 4, 16))
PY

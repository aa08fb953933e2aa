#!/usr/bin/env bash
# What a recorded row costs SQLite on its way through the recorder's inbox into the operation log
# (issue 26): a file migrated by this build (`agenticos migrate`), 20,000 rows in, then three
# rounds of 6,000 rows written as the recorder does: batches of 2 rows committed into
# `sandbox_operations_inbox`, and every N rows one `BEGIN IMMEDIATE` transaction that moves the
# inbox into `sandbox_operations` (the statement shape of `recording/store.rs`: references looked
# up, time keys given) and indexes the search queue. Process CPU a row, inbox + move, for moves of
# 100 to 2,000 rows, and for 100 without the filter indexes or the search index (where the cost
# is). Rows name 50 workspaces, runs, sessions and conversations in turn, as 50 agent runtimes do.
# SQLite 3.50 from PyPI (`sqlean.py`, in a venv under the target directory), WAL,
# synchronous=NORMAL, temp_store=MEMORY, foreign keys on.
#
#   benches/sql/moved_row_cost.sh            # builds target/release/agenticos if missing
source "$(dirname "$0")/sqlite_migrated.sh"
"$venv/bin/python" - "$dir/migrated.db" <<'PY'
import os, shutil, sys, time, uuid
import sqlean as sqlite3

base = sys.argv[1]
c = sqlite3.connect(base, isolation_level=None)
# Parents for the references: only their required columns, their checks not the point here.
c.execute("PRAGMA foreign_keys=OFF")
c.execute("PRAGMA ignore_check_constraints=ON")

def parent(table, id_):
    names, values = [], []
    for _, name, kind, notnull, default, _ in c.execute(f"PRAGMA table_info({table})").fetchall():
        if name in ("id", "organization_id"):
            names.append(name); values.append(id_ if name == "id" else "org-1")
        elif notnull and default is None:
            names.append(name); values.append(0 if "INT" in kind.upper() or "BOOL" in kind.upper() else f"x-{id_}")
    c.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(values))})", values)

parent("organizations", "org-1")
parent("sandbox_connections", "conn-0")
parent("agents", "agent-0")
for k in range(50):
    for table, prefix in (("sandbox_workspaces", "ws"), ("runs", "run"), ("conversations", "conv")):
        parent(table, f"{prefix}-{k}")
c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
c.close()

COLS = ("id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, operation, "
        "target, ok, detail, duration_ms, created_at, seq, conversation_id")
KEY = ("COALESCE((SELECT MAX(s.rowid) + 1 FROM sandbox_operations s WHERE s.rowid >= v.created_at * 1048576 "
       "AND s.rowid < (v.created_at + 1) * 1048576), v.created_at * 1048576)")
MOVE = (f"WITH v ({COLS}) AS (SELECT {COLS} FROM sandbox_operations_inbox WHERE rowid <= ?) "
        f"INSERT INTO sandbox_operations (rowid, {COLS}) SELECT {KEY} + ROW_NUMBER() OVER "
        "(PARTITION BY v.created_at ORDER BY v.id) - 1, v.id, v.organization_id, "
        "(SELECT w.id FROM sandbox_workspaces w WHERE w.id = v.workspace_id), v.session_key, "
        "(SELECT c.id FROM sandbox_connections c WHERE c.id = v.connection_id), "
        "(SELECT a.id FROM agents a WHERE a.id = v.agent_id), (SELECT r.id FROM runs r WHERE r.id = v.run_id), "
        "v.operation, v.target, v.ok, v.detail, v.duration_ms, v.created_at, v.seq, "
        "(SELECT cv.id FROM conversations cv WHERE cv.id = v.conversation_id) FROM v "
        "WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = v.organization_id)")
INDEX = ("INSERT INTO sandbox_operations_search (rowid, target, detail) SELECT o.rowid, o.target, o.detail "
         "FROM sandbox_operations_search_queue q CROSS JOIN sandbox_operations o "
         "WHERE o.rowid = q.row AND q.row <= ? ORDER BY q.row")
FILTERS = ["agent", "run", "connection", "workspace", "conversation", "org_session", "org_operation", "org_time",
           "org_failed"]
BATCH = 2

def measure(label, every, setup=()):
    db = base + ".copy"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    shutil.copy(base, db)
    c = sqlite3.connect(db, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "temp_store=MEMORY", "foreign_keys=ON"):
        c.execute("PRAGMA " + pragma)
    for statement in setup:
        c.execute(statement)
    clock = [1_700_000_000_000]

    def row(i):
        k = i % 50
        clock[0] += 1
        return [str(uuid.uuid4()), "org-1", f"ws-{k}", f"session-key-{k:040d}", "conn-0", "agent-0", f"run-{k}",
                ["read", "write", "ls", "execute"][i % 4], f"/workspace/src/module{i % 89}/file{i % 1009}.rs", 1,
                f"{i % 5000} bytes", 3, clock[0], i, f"conv-{k}"]

    batch = f"INSERT INTO sandbox_operations_inbox ({COLS}) VALUES " + ", ".join(["(" + ", ".join("?" * 15) + ")"] * BATCH)
    waiting = [0]

    def write(i):
        c.execute(batch, [v for j in range(BATCH) for v in row(i + j)])
        waiting[0] += BATCH
        if waiting[0] >= every:
            c.execute("BEGIN IMMEDIATE")
            last = c.execute("SELECT MAX(rowid) FROM sandbox_operations_inbox").fetchone()[0]
            c.execute(MOVE, [last])
            c.execute("DELETE FROM sandbox_operations_inbox WHERE rowid <= ?", [last])
            queued = c.execute("SELECT MAX(row) FROM sandbox_operations_search_queue").fetchone()[0]
            if queued is not None:
                c.execute(INDEX, [queued])
                c.execute("DELETE FROM sandbox_operations_search_queue WHERE row <= ?", [queued])
            c.execute("COMMIT")
            waiting[0] = 0

    for i in range(0, 20_000, BATCH):
        write(i)
    rounds = []
    for _ in range(3):
        started = time.process_time()
        for i in range(0, 6_000, BATCH):
            write(i)
        rounds.append((time.process_time() - started) / 6_000 * 1e6)
    print(f"{label:45s} {' '.join(f'{x:5.0f}' for x in rounds)} µs of CPU a row", flush=True)
    c.close()

print(f"SQLite {sqlite3.sqlite_version}, batches of {BATCH} rows, three rounds of 6,000 rows each", flush=True)
for every in (100, 250, 500, 1000, 2000):
    measure(f"moved every {every} rows", every)
measure("moved every 100, without the filter indexes", 100, [f"DROP INDEX sandbox_operations_{i}" for i in FILTERS])
measure("moved every 100, without the search index", 100,
        ["DROP TRIGGER sandbox_operations_search_insert"])
PY

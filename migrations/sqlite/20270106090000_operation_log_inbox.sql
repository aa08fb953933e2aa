-- The operation log written behind the recorder (issue 26, CPU per operation). Committing a row
-- into sandbox_operations before its operation is answered costs the row's six indexes, its time
-- key, its foreign-key checks and its search-queue trigger on the request path: about half of the
-- console's CPU per proxied operation under load (docs/benchmarks.md, "Where the 0.25 ms goes").
--
-- So on SQLite the recorder commits each batch into this bare table (no index, no trigger, no
-- reference), still before the operations are answered, and moves its rows into the log in bulk:
-- after a batch once enough wait, every second while serving, and before anything reads the log
-- (`Recorder::settle`). The move looks the references up and gives each row its time key exactly
-- as a batch written into the log did, and removes the rows it moved in the same transaction, so a
-- row is in this table or in the log, never both and never neither.
CREATE TABLE sandbox_operations_inbox (
    id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    workspace_id TEXT,
    session_key TEXT NOT NULL,
    connection_id TEXT,
    agent_id TEXT,
    run_id TEXT,
    operation TEXT NOT NULL,
    target TEXT NOT NULL,
    ok BIGINT NOT NULL,
    detail TEXT NOT NULL,
    duration_ms BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    conversation_id TEXT
);

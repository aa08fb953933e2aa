-- Snapshots (issue 14): a workspace's contents as one compressed archive in the object store.
-- A row outlives its workspace only as a tombstone for the store: deleting the workspace sets
-- `doomed_at`; the object is deleted, then the row; a store failure counts the attempt and
-- schedules the next one (the `sandbox-destroy-retry` sweep retries it).
CREATE TABLE snapshots (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    -- no foreign key: the row stays (doomed) until its object is gone
    workspace_id TEXT NOT NULL,
    agent_id TEXT,
    created_at BIGINT NOT NULL,
    size_bytes BIGINT NOT NULL,
    file_count BIGINT NOT NULL,
    object_key TEXT NOT NULL,
    -- finish | on_demand
    taken_by TEXT NOT NULL,
    doomed_at BIGINT,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    last_error TEXT
);
CREATE INDEX snapshots_workspace ON snapshots(organization_id, workspace_id, created_at);
CREATE INDEX snapshots_due ON snapshots(next_attempt_at);

-- Per agent: when a run's end takes a snapshot (never | on_finish | on_finish_when_changed) and
-- how many are kept per workspace.
CREATE TABLE agent_snapshot_settings (
    agent_id TEXT PRIMARY KEY NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    mode TEXT NOT NULL,
    keep_last BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Per run: what its workspace starts from (a named snapshot), the workspace a session_state
-- bound it to, and what opening said ("restored from the snapshot of …", "started empty").
CREATE TABLE run_starts (
    run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    snapshot_id TEXT,
    workspace_id TEXT,
    note TEXT,
    created_at BIGINT NOT NULL
);

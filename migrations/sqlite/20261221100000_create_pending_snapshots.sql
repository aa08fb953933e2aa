-- Snapshots taken when a run finished that have not reached the object store yet (issue 25): a
-- finish does not wait on the store. The archive waits in the snapshot folder's `pending/` (when
-- it could be read from the host), an upload is tried at once in the background, and the
-- `sandbox-destroy-retry` sweep retries what failed, the pause doubling; the last error is shown on
-- the workspace's page. The row goes with its workspace.
CREATE TABLE pending_snapshots (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES sandbox_workspaces(id) ON DELETE CASCADE,
    agent_id TEXT,
    run_id TEXT,
    -- when its files were read (the snapshot's time once stored)
    created_at BIGINT NOT NULL,
    -- 1 when the archive waits in `pending/<id>.tar.gz`; 0: the sweep reads the workspace again
    has_archive BIGINT NOT NULL DEFAULT 0 CHECK (has_archive IN (0, 1)),
    size_bytes BIGINT NOT NULL DEFAULT 0,
    file_count BIGINT NOT NULL DEFAULT 0,
    attempts BIGINT NOT NULL DEFAULT 0,
    -- also the claim: an attempt under way pushes it past its own deadline
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT
);
CREATE INDEX pending_snapshots_due ON pending_snapshots(next_attempt_at);
CREATE INDEX pending_snapshots_workspace ON pending_snapshots(organization_id, workspace_id, created_at);

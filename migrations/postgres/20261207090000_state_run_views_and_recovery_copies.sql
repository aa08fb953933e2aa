-- The `state` backend under concurrency (DESIGN.md §11).
-- A recovery copy is a workspace of its own that keeps a run's files when they could not be merged
-- into the shared document; it goes with its source (also when both are deleted at once).
ALTER TABLE sandbox_workspaces ADD COLUMN recovery_of TEXT REFERENCES sandbox_workspaces(id) ON DELETE CASCADE;
CREATE INDEX sandbox_workspaces_recovery_of ON sandbox_workspaces(recovery_of);
-- What a run's finish could not do with its workspace, and the copy that keeps its files.
ALTER TABLE runs ADD COLUMN workspace_error TEXT;
ALTER TABLE runs ADD COLUMN recovery_workspace_id TEXT REFERENCES sandbox_workspaces(id) ON DELETE SET NULL;
-- Each run of a shared `state` workspace works on its own view: the shared document as it was at
-- the run's first operation (its base) and the run's document; `finish` merges the two into the
-- shared document, three-way by path.
CREATE TABLE state_run_views (
    run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES sandbox_workspaces(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    base_document TEXT,
    base_version BIGINT NOT NULL,
    document TEXT,
    -- optimistic concurrency between one run's own requests
    version BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX state_run_views_workspace ON state_run_views(workspace_id);

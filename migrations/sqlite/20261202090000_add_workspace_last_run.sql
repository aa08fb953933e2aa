-- The run whose operation last opened or attached a workspace's session: the Running tab names it
-- and links its conversation. A deleted run leaves NULL, like the workspace's other run column.
ALTER TABLE sandbox_workspaces ADD COLUMN last_run_id TEXT REFERENCES runs(id) ON DELETE SET NULL;

-- The run whose operation last opened or attached a workspace's session: the Running tab names it
-- and links its conversation. A deleted run leaves NULL, like the workspace's other run column.
ALTER TABLE sandbox_workspaces ADD COLUMN last_run_id TEXT REFERENCES runs(id) ON DELETE SET NULL;
-- The Running tab finds a host session's workspace by the reference it was opened by.
CREATE INDEX sandbox_workspaces_session_ref ON sandbox_workspaces(session_ref);

-- The operation log at its size (issue 26). SQLite keeps its ids as TEXT (it has no smaller
-- UUID type that reads back as the same string) and its rowid-keyed FTS5 search; what shrinks is
-- the indexes. A workspace, connection, run, agent or conversation id names one organization's
-- rows, so their indexes need no organization prefix: (column, created_at, id) serves the filter
-- (the organization is checked on the row) and the ON DELETE SET NULL of a deleted parent, which
-- made sandbox_operations_run a second index of the same column.
DROP INDEX IF EXISTS sandbox_operations_run;
DROP INDEX IF EXISTS sandbox_operations_org_agent;
DROP INDEX IF EXISTS sandbox_operations_org_run;
DROP INDEX IF EXISTS sandbox_operations_org_connection;
DROP INDEX IF EXISTS sandbox_operations_org_workspace;
DROP INDEX IF EXISTS sandbox_operations_org_conversation;
CREATE INDEX sandbox_operations_agent ON sandbox_operations(agent_id, created_at, id);
CREATE INDEX sandbox_operations_run ON sandbox_operations(run_id, created_at, id);
CREATE INDEX sandbox_operations_connection ON sandbox_operations(connection_id, created_at, id);
CREATE INDEX sandbox_operations_workspace ON sandbox_operations(workspace_id, created_at, id);
CREATE INDEX sandbox_operations_conversation ON sandbox_operations(conversation_id, created_at, id);

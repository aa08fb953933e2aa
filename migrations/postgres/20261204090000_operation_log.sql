-- The operation log (DESIGN.md §8, issue 10): every row names the conversation its run was a turn
-- of, so the log filters by conversation without joining runs; and the indexes below serve
-- exactly the log's filters. Every listing is one organization's, newest first, paged by keyset
-- on (created_at, id): each index starts with organization_id, holds the filtered column next and
-- ends with (created_at, id), so a page — the first or the 200th — is one short range scan in
-- index order, stopped by LIMIT, never a sort of the organization's rows.
ALTER TABLE sandbox_operations ADD COLUMN conversation_id TEXT REFERENCES conversations(id) ON DELETE SET NULL;
UPDATE sandbox_operations SET conversation_id = (SELECT r.conversation_id FROM runs r WHERE r.id = sandbox_operations.run_id)
WHERE run_id IS NOT NULL;

-- No filter (and `q`, `since`/`until`, several `op`s, which filter rows along this order): the
-- organization's rows newest first. Replaces sandbox_operations_org, which lacked the id tiebreak.
DROP INDEX IF EXISTS sandbox_operations_org;
CREATE INDEX sandbox_operations_org_time ON sandbox_operations(organization_id, created_at, id);
-- `session_key`: one session's rows (the Running tab's and a conversation's link).
CREATE INDEX sandbox_operations_org_session ON sandbox_operations(organization_id, session_key, created_at, id);
-- `agent_id`: one agent's rows.
CREATE INDEX sandbox_operations_org_agent ON sandbox_operations(organization_id, agent_id, created_at, id);
-- `run_id`: one run's rows (sandbox_operations_run stays for the run's own lookups and its foreign key).
CREATE INDEX sandbox_operations_org_run ON sandbox_operations(organization_id, run_id, created_at, id);
-- `connection_id`: one host's rows.
CREATE INDEX sandbox_operations_org_connection ON sandbox_operations(organization_id, connection_id, created_at, id);
-- `workspace_id`: one workspace's rows.
CREATE INDEX sandbox_operations_org_workspace ON sandbox_operations(organization_id, workspace_id, created_at, id);
-- `conversation_id`: one conversation's rows.
CREATE INDEX sandbox_operations_org_conversation ON sandbox_operations(organization_id, conversation_id, created_at, id);
-- `op` (one operation): e.g. only the commands.
CREATE INDEX sandbox_operations_org_operation ON sandbox_operations(organization_id, operation, created_at, id);
-- `failed_only`: failures are few, so a partial index holds only them.
CREATE INDEX sandbox_operations_org_failed ON sandbox_operations(organization_id, created_at, id) WHERE ok = 0;
-- The retention sweep: rows older than the window, across organizations, oldest first.
CREATE INDEX sandbox_operations_created ON sandbox_operations(created_at);

-- The operation log in fewer bytes (issue 50): the ids a row names are kept as `uuid` (16 bytes)
-- instead of 36-character text (37). Every one of them is minted by the console itself
-- (`db::new_id`, a UUIDv4): the organization, the agent, the workspace, the host (connection),
-- the run and the conversation; none is chosen by a client. The session key stays text: a
-- client (an agent runtime) names its session.
--
-- * `operation_log_uuid(text)`: the text as a `uuid` when it is one as the console writes it
--   (lower- or upper-case hex, hyphenated), else NULL. Statements bind ids as text and ask for
--   `operation_log_uuid($n)`: a malformed id in a filter matches no row (an empty page, as
--   before), never an error.
-- * The referenced tables keep their text ids, and a foreign key cannot join `uuid` to `text`:
--   the log's foreign keys become triggers on the referenced tables that do what they did (an
--   organization deleted takes its rows; an agent, workspace, host, run or conversation deleted
--   leaves its rows with that reference empty), through the same indexes as before (the filters'
--   GIN index; the organization's time index). A row is written with each reference looked up in
--   the statement (`record_store::resolved_sql`), so it names only rows that exist as it is
--   written.
-- * The organization's time indexes are keyed on `uuid_hash(organization_id)` (4 bytes, as
--   `hashtext` was).
CREATE FUNCTION operation_log_uuid(t TEXT) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT CASE WHEN t ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN t::uuid END $$;

-- The indexes keyed on `hashtext(organization_id)` go (there is no `hashtext` of a uuid); the
-- others (the filters' GIN index, or where btree_gin is missing their B-trees) are rebuilt by
-- the type change itself, with their options.
DROP INDEX IF EXISTS sandbox_operations_operation;
DROP INDEX IF EXISTS sandbox_operations_org_time;
DROP INDEX IF EXISTS sandbox_operations_org_failed;

ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_organization_id_fkey;
ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_workspace_id_fkey;
ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_connection_id_fkey;
ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_agent_id_fkey;
ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_run_id_fkey;
ALTER TABLE sandbox_operations DROP CONSTRAINT IF EXISTS sandbox_operations_conversation_id_fkey;

-- A row whose organization id is not a UUID cannot be one of the console's: there is none.
DELETE FROM sandbox_operations WHERE operation_log_uuid(organization_id) IS NULL;
ALTER TABLE sandbox_operations
    ALTER COLUMN organization_id TYPE uuid USING operation_log_uuid(organization_id),
    ALTER COLUMN workspace_id TYPE uuid USING operation_log_uuid(workspace_id),
    ALTER COLUMN connection_id TYPE uuid USING operation_log_uuid(connection_id),
    ALTER COLUMN agent_id TYPE uuid USING operation_log_uuid(agent_id),
    ALTER COLUMN run_id TYPE uuid USING operation_log_uuid(run_id),
    ALTER COLUMN conversation_id TYPE uuid USING operation_log_uuid(conversation_id);

CREATE INDEX sandbox_operations_org_time ON sandbox_operations (uuid_hash(organization_id), created_at);
CREATE INDEX sandbox_operations_org_failed ON sandbox_operations (uuid_hash(organization_id), created_at) WHERE ok = 0;

-- Without btree_gin (migration 20261230090000), the operation's own B-tree.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        CREATE INDEX sandbox_operations_operation ON sandbox_operations (uuid_hash(organization_id), operation, created_at);
    END IF;
END
$$;

-- What the foreign keys did, as triggers of the referenced tables.
CREATE FUNCTION operation_log_forget_organization() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM sandbox_operations
    WHERE uuid_hash(organization_id) = uuid_hash(operation_log_uuid(OLD.id)) AND organization_id = operation_log_uuid(OLD.id);
    RETURN OLD;
END
$$;
CREATE TRIGGER operation_log_forget_organization AFTER DELETE ON organizations
    FOR EACH ROW EXECUTE FUNCTION operation_log_forget_organization();

-- TG_ARGV[0]: the log's column that names the deleted row.
CREATE FUNCTION operation_log_forget_reference() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE sandbox_operations SET %1$I = NULL WHERE %1$I = $1', TG_ARGV[0])
        USING operation_log_uuid(OLD.id);
    RETURN OLD;
END
$$;
CREATE TRIGGER operation_log_forget_workspace AFTER DELETE ON sandbox_workspaces
    FOR EACH ROW EXECUTE FUNCTION operation_log_forget_reference('workspace_id');
CREATE TRIGGER operation_log_forget_connection AFTER DELETE ON sandbox_connections
    FOR EACH ROW EXECUTE FUNCTION operation_log_forget_reference('connection_id');
CREATE TRIGGER operation_log_forget_agent AFTER DELETE ON agents
    FOR EACH ROW EXECUTE FUNCTION operation_log_forget_reference('agent_id');
CREATE TRIGGER operation_log_forget_run AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION operation_log_forget_reference('run_id');
CREATE TRIGGER operation_log_forget_conversation AFTER DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION operation_log_forget_reference('conversation_id');

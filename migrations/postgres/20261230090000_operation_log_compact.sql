-- The operation log at its size (issue 26): 1,829 bytes a row of table and indexes on 200,000
-- rows (ten B-trees keyed on text ids, two trigram indexes), converted in place to about 400.
--
-- * `id` becomes `uuid` (16 bytes, not 37). The API still shows it as the same lower-case,
--   hyphenated string: the store reads `o.id::text`.
-- * The ordered walk (no filter, a frequent search term, failed-only, a time range) keeps one
--   B-tree, keyed on `hashtext(organization_id)` (4 bytes, not 37): a statement asks for
--   `hashtext(o.organization_id) = hashtext($1) AND o.organization_id = $1`, the index finds the
--   organization's rows in (created_at, id) order and the rare row of another organization with
--   the same hash is dropped by the second condition.
-- * The equality filters (session, agent, workspace, connection, run, conversation, operation)
--   share one GIN index (btree_gin): each value is stored once, followed by a compressed list of
--   its rows, 1 to 2 bytes each. A session's, an agent's, a run's… rows are one organization's
--   (their ids, and the session keys, name it), so the organization is not in it: a filtered
--   page reads that filter's rows from it (a bitmap) and sorts them, or walks the time index when
--   the planner finds that cheaper. The organization itself is kept out on purpose: in a GIN
--   index it would lure the planner into reading all of an organization's rows and sorting them
--   where the time index reads a page. The ON DELETE SET NULL of a deleted run, agent,
--   workspace, connection or conversation finds its rows through it too, so
--   sandbox_operations_run is not needed.
-- * The search's two trigram indexes become one, of `LOWER(target) || ' ' || LOWER(detail)`.
-- * The retention sweep's `created_at < $1` reads a BRIN summary (rows arrive in time order).
--
-- Where btree_gin or pg_trgm cannot be created, the filters get plain B-trees on their column
-- (no organization prefix: the ids name one organization's rows) and the search stays unindexed.
DROP INDEX IF EXISTS sandbox_operations_org_time;
DROP INDEX IF EXISTS sandbox_operations_org_session;
DROP INDEX IF EXISTS sandbox_operations_org_agent;
DROP INDEX IF EXISTS sandbox_operations_org_run;
DROP INDEX IF EXISTS sandbox_operations_org_connection;
DROP INDEX IF EXISTS sandbox_operations_org_workspace;
DROP INDEX IF EXISTS sandbox_operations_org_conversation;
DROP INDEX IF EXISTS sandbox_operations_org_operation;
DROP INDEX IF EXISTS sandbox_operations_org_failed;
DROP INDEX IF EXISTS sandbox_operations_created;
DROP INDEX IF EXISTS sandbox_operations_run;
DROP INDEX IF EXISTS sandbox_operations_target_trgm;
DROP INDEX IF EXISTS sandbox_operations_detail_trgm;

ALTER TABLE sandbox_operations ALTER COLUMN id TYPE uuid USING id::uuid;

CREATE INDEX sandbox_operations_org_time ON sandbox_operations (hashtext(organization_id), created_at, id);
CREATE INDEX sandbox_operations_org_failed ON sandbox_operations (hashtext(organization_id), created_at, id) WHERE ok = 0;
CREATE INDEX sandbox_operations_created ON sandbox_operations USING brin (created_at);

DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS btree_gin;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'btree_gin is not available (%): the operation log''s filters get one B-tree each', SQLERRM;
    END;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        EXECUTE 'CREATE INDEX sandbox_operations_filters ON sandbox_operations USING gin '
            '(session_key, agent_id, workspace_id, connection_id, run_id, conversation_id, operation)';
    ELSE
        EXECUTE 'CREATE INDEX sandbox_operations_session ON sandbox_operations (session_key, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_agent ON sandbox_operations (agent_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_workspace ON sandbox_operations (workspace_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_connection ON sandbox_operations (connection_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_run ON sandbox_operations (run_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_conversation ON sandbox_operations (conversation_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_operation ON sandbox_operations (hashtext(organization_id), operation, created_at)';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        EXECUTE 'CREATE INDEX sandbox_operations_text_trgm ON sandbox_operations '
            'USING gin ((LOWER(target) || '' '' || LOWER(detail)) gin_trgm_ops)';
    END IF;
END
$$;

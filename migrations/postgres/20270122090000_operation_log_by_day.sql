-- The operation log partitioned by day (issue 50 part 2; docs/benchmarks.md "The log partitioned
-- by day"): a GIN index answers with a bitmap that cannot be read newest first, so a rare term,
-- a path fragment or one session read every candidate the whole log holds and sorted them, a cost
-- that grew with the log. Each day's rows are now a table of their own with its own indexes, and
-- a page asks the days newest first, one bounded statement a window of days (1, 1, 2, 4… days),
-- until it is full (`postgres_store::windows`): it reads the candidates of the days it needs.
--
-- * `sandbox_operations` becomes a table partitioned by RANGE (created_at), one partition a UTC
--   day (`sandbox_operations_d<day number>`), and a default partition for a row of a day that has
--   none (created by `operation_log_day`, which the writer calls before a batch of a new day).
-- * Its primary key is (id, created_at) (a partitioned table's unique key holds the partition
--   key); a batch tried again writes the same rows, the same (id, created_at), once.
-- * The indexes are today's, declared once and built on each day.
-- * The rows already there are copied in, each into its day.

ALTER TABLE sandbox_operations RENAME TO sandbox_operations_unpartitioned;
ALTER INDEX IF EXISTS sandbox_operations_pkey RENAME TO sandbox_operations_unpartitioned_pkey;
DROP INDEX IF EXISTS sandbox_operations_org_time;
DROP INDEX IF EXISTS sandbox_operations_org_failed;
DROP INDEX IF EXISTS sandbox_operations_created;
DROP INDEX IF EXISTS sandbox_operations_filters;
DROP INDEX IF EXISTS sandbox_operations_text_trgm;
DROP INDEX IF EXISTS sandbox_operations_session;
DROP INDEX IF EXISTS sandbox_operations_agent;
DROP INDEX IF EXISTS sandbox_operations_workspace;
DROP INDEX IF EXISTS sandbox_operations_connection;
DROP INDEX IF EXISTS sandbox_operations_run;
DROP INDEX IF EXISTS sandbox_operations_conversation;
DROP INDEX IF EXISTS sandbox_operations_operation;

CREATE TABLE sandbox_operations (LIKE sandbox_operations_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (created_at);
ALTER TABLE sandbox_operations ADD PRIMARY KEY (id, created_at);
CREATE TABLE sandbox_operations_default PARTITION OF sandbox_operations DEFAULT;

CREATE INDEX sandbox_operations_org_time ON sandbox_operations (uuid_hash(organization_id), created_at);
CREATE INDEX sandbox_operations_org_failed ON sandbox_operations (uuid_hash(organization_id), created_at) WHERE ok = 0;
CREATE INDEX sandbox_operations_created ON sandbox_operations USING brin (created_at);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        EXECUTE 'CREATE INDEX sandbox_operations_filters ON sandbox_operations USING gin '
            '(session_key, agent_id, workspace_id, connection_id, run_id, conversation_id, operation) '
            'WITH (gin_pending_list_limit = 256)';
    ELSE
        EXECUTE 'CREATE INDEX sandbox_operations_session ON sandbox_operations (session_key, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_agent ON sandbox_operations (agent_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_workspace ON sandbox_operations (workspace_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_connection ON sandbox_operations (connection_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_run ON sandbox_operations (run_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_conversation ON sandbox_operations (conversation_id, created_at)';
        EXECUTE 'CREATE INDEX sandbox_operations_operation ON sandbox_operations (uuid_hash(organization_id), operation, created_at)';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        EXECUTE 'CREATE INDEX sandbox_operations_text_trgm ON sandbox_operations '
            'USING gin ((LOWER(target) || '' '' || LOWER(detail)) gin_trgm_ops) WITH (gin_pending_list_limit = 256)';
    END IF;
END
$$;

-- A partition's indexes named after the log's (`sandbox_operations_d20794_text_trgm` for
-- `sandbox_operations_text_trgm`), so that a plan says which index of which day it reads.
CREATE FUNCTION operation_log_name_indexes(part text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE i record;
BEGIN
    FOR i IN SELECT c.relname AS own, p.relname AS parent FROM pg_index x
        JOIN pg_class c ON c.oid = x.indexrelid
        JOIN pg_inherits h ON h.inhrelid = x.indexrelid
        JOIN pg_class p ON p.oid = h.inhparent
        WHERE x.indrelid = part::regclass LOOP
        IF i.own <> part || substr(i.parent, length('sandbox_operations') + 1) THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', i.own, part || substr(i.parent, length('sandbox_operations') + 1));
        END IF;
    END LOOP;
END
$$;
SELECT operation_log_name_indexes('sandbox_operations_default');

-- The partitions of the days `first_day` to `last_day` (day numbers: created_at / 86,400,000,
-- from 0), each created unless it is there; a day whose rows already sit in the default partition keeps them
-- there (its partition cannot be created over them). Returns the end of the last day, in ms.
CREATE FUNCTION operation_log_days(first_day bigint, last_day bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    -- `d` is an integer (a day number); the bounds in ms are bigints.
    FOR d IN greatest(first_day, 0) .. last_day LOOP
        IF to_regclass('sandbox_operations_d' || d) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE TABLE IF NOT EXISTS sandbox_operations_d%s PARTITION OF sandbox_operations '
                    'FOR VALUES FROM (%s) TO (%s)', d, d::bigint * 86400000, (d::bigint + 1) * 86400000);
                PERFORM operation_log_name_indexes('sandbox_operations_d' || d);
            EXCEPTION WHEN check_violation OR duplicate_table OR unique_violation THEN
                NULL;
            END;
        END IF;
    END LOOP;
    RETURN (last_day + 1) * 86400000;
END
$$;

-- The days of the rows already there (at most the last 3,660 of them, the longest retention;
-- older rows go to the default partition), then today and tomorrow.
SELECT operation_log_days(greatest(min(created_at), max(created_at) - 3660 * 86400000::bigint) / 86400000,
                          max(created_at) / 86400000)
FROM sandbox_operations_unpartitioned HAVING count(*) > 0;
SELECT operation_log_days((extract(epoch FROM now()) * 1000)::bigint / 86400000,
                          (extract(epoch FROM now()) * 1000)::bigint / 86400000 + 1);

INSERT INTO sandbox_operations SELECT * FROM sandbox_operations_unpartitioned;
DROP TABLE sandbox_operations_unpartitioned;

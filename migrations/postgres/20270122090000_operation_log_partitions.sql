-- The operation log partitioned by rows (issue 50 part 2; docs/benchmarks.md "The log
-- partitioned by rows"): a GIN index answers with a bitmap that cannot be read newest first, so a
-- rare term, a path fragment or one session read every candidate the whole log holds and sorted
-- them, a cost that grew with the log. The log is now a table partitioned by RANGE (created_at),
-- each partition holding about 100,000 rows (`partitions::TARGET_ROWS`) with its own indexes, and
-- a page asks the partitions newest first, a window of them a statement (1, 1, 2, 4… partitions),
-- until it is full (`partitions::windows`): it reads the candidates of the partitions it needs.
-- Partitions sized by rows, not by day: a day of a busy log holds many times a page's matches, so
-- day partitions still grew 1.7-2.2x from 1M to 5M rows in two cases.
--
-- * `sandbox_operations` becomes a table partitioned by RANGE (created_at). Its partitions are
--   `sandbox_operations_p<start ms>` (`sandbox_operations_pm<ms>` before 1970), made by the writer
--   (`partition_store::extend`) when a batch reaches past the newest one's end, each starting where the
--   one before ends. A default partition takes a row no partition covers (a late row older than
--   the first partition, a row of a clock more than a day ahead); it stays small.
-- * `operation_log_partitions (start_ms, end_ms)`: the registry the reader asks for the windows'
--   bounds, one row a partition, written in the transaction that attaches or drops it. A table of
--   two integers read along its primary key, not `pg_inherits`, whose bounds are expression text
--   (`pg_get_expr`) to be parsed a partition at a time.
-- * Its primary key is (id, created_at) (a partitioned table's unique key holds the partition
--   key); a batch tried again writes the same rows, the same (id, created_at), once.
-- * The indexes are today's (taken from the table as it is), declared once on the log and made
--   on each partition.
-- * The rows already there are COPIED into partitions of 100,000 rows each (in created_at order),
--   then the old table is dropped: the migration rewrites the log once.

ALTER TABLE sandbox_operations RENAME TO sandbox_operations_unpartitioned;
ALTER INDEX IF EXISTS sandbox_operations_pkey RENAME TO sandbox_operations_unpartitioned_pkey;

CREATE TABLE sandbox_operations (LIKE sandbox_operations_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (created_at);
ALTER TABLE sandbox_operations ADD PRIMARY KEY (id, created_at);
CREATE TABLE sandbox_operations_default PARTITION OF sandbox_operations DEFAULT;

-- The log's indexes as this database has them (which depends on btree_gin and pg_trgm being
-- there: migrations 20261210000000, 20261230090000, 20270121090000), each dropped from the old
-- table (before the rows are copied) and declared again on the partitioned log, by its own name.
DO $$
DECLARE i record;
BEGIN
    FOR i IN SELECT c.relname AS name, pg_get_indexdef(x.indexrelid) AS def FROM pg_index x
        JOIN pg_class c ON c.oid = x.indexrelid
        WHERE x.indrelid = 'sandbox_operations_unpartitioned'::regclass AND NOT x.indisprimary LOOP
        EXECUTE format('DROP INDEX %I', i.name);
        EXECUTE regexp_replace(i.def, ' ON (\S+\.)?sandbox_operations_unpartitioned ', ' ON sandbox_operations ');
    END LOOP;
END
$$;

CREATE TABLE operation_log_partitions (
    start_ms BIGINT PRIMARY KEY,
    end_ms BIGINT NOT NULL,
    CHECK (end_ms > start_ms)
);

-- A partition's indexes named after the log's (`sandbox_operations_p1800000000000_text_trgm` for
-- `sandbox_operations_text_trgm`), so that a plan says which index of which partition it reads.
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

-- Makes the partition [start_ms, end_ms) and registers it, without an ACCESS EXCLUSIVE lock on
-- the log: the table is created apart (its indexes made on it empty), holds its range as a CHECK
-- constraint, takes the rows of its range the default partition holds, and is attached (SHARE
-- UPDATE EXCLUSIVE on the log; the CHECK spares the scan of the new table; the default partition,
-- small, is scanned and locked for that moment). The caller holds the writers' advisory lock
-- (`partition_store::extend`), so two consoles never make the same one.
CREATE FUNCTION operation_log_make_partition(start_ms bigint, end_ms bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE part text := 'sandbox_operations_p' || CASE WHEN start_ms < 0 THEN 'm' || (-start_ms)::text ELSE start_ms::text END;
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE sandbox_operations INCLUDING ALL)', part);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (created_at >= %s AND created_at < %s)',
        part, part || '_range', start_ms, end_ms);
    EXECUTE format('WITH moved AS (DELETE FROM sandbox_operations_default WHERE created_at >= %s AND created_at < %s '
        'RETURNING *) INSERT INTO %I SELECT * FROM moved', start_ms, end_ms, part);
    EXECUTE format('ALTER TABLE sandbox_operations ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
        part, start_ms, end_ms);
    PERFORM operation_log_name_indexes(part);
    INSERT INTO operation_log_partitions (start_ms, end_ms) VALUES (start_ms, end_ms);
END
$$;

-- The rows already there: a partition every 100,000 rows in created_at order (the first from the
-- oldest row, the last to the newest row's next millisecond), then the rows copied in.
DO $$
DECLARE
    bounds bigint[];
    newest bigint;
BEGIN
    SELECT array_agg(b ORDER BY b) INTO bounds FROM (
        SELECT DISTINCT created_at AS b FROM (
            SELECT created_at, row_number() OVER (ORDER BY created_at) - 1 AS n FROM sandbox_operations_unpartitioned
        ) AS numbered WHERE n % 100000 = 0
    ) AS starts;
    SELECT max(created_at) INTO newest FROM sandbox_operations_unpartitioned;
    IF bounds IS NULL THEN
        RETURN;
    END IF;
    bounds := bounds || (newest + 1);
    FOR i IN 1 .. array_length(bounds, 1) - 1 LOOP
        PERFORM operation_log_make_partition(bounds[i], bounds[i + 1]);
    END LOOP;
END
$$;

INSERT INTO sandbox_operations SELECT * FROM sandbox_operations_unpartitioned;
DROP TABLE sandbox_operations_unpartitioned;

-- The search index written behind the recorder (issue 26, CPU per operation). Indexing a row in
-- the FTS5 trigram index as it is inserted cost about as much as the rest of the row's insert:
-- 390-546 us of CPU a row committed alone, 213-259 without the index (benches/sql/
-- recorded_row_cost.sh), because every commit wrote the index's new segment pages. Indexed 100
-- rows at a time, a row costs 267-302 us.
--
-- So an inserted row's rowid is queued in sandbox_operations_search_queue by the insert trigger,
-- and the recorder moves queued rows into the index in bulk (`recording/search_queue.rs`): after
-- a batch, once 100 rows wait and no other batch does, or once 500 wait; and every second while
-- serving. A search reads the index's matches and the queued rows alike (`store.rs`,
-- `time_keyed_page`), so a row is found from its commit on, indexed or not.
--
-- A row is in the index or in the queue, never both: the delete trigger removes it from both,
-- the update trigger takes it out of the index and queues it again, and the indexing moves rows
-- from the queue to the index in one transaction.
CREATE TABLE sandbox_operations_search_queue (row INTEGER PRIMARY KEY);

DROP TRIGGER IF EXISTS sandbox_operations_search_insert;
CREATE TRIGGER sandbox_operations_search_insert AFTER INSERT ON sandbox_operations BEGIN
    -- A row written without its time key goes to the next free one of its millisecond
    -- (migration 20270104090000_operation_log_time_rowids).
    UPDATE sandbox_operations
    SET rowid = (
        SELECT COALESCE(MAX(s.rowid) + 1, new.created_at * 1048576) FROM sandbox_operations s
        WHERE s.rowid >= new.created_at * 1048576 AND s.rowid < (new.created_at + 1) * 1048576
    )
    WHERE rowid = new.rowid
      AND (new.rowid < new.created_at * 1048576 OR new.rowid >= (new.created_at + 1) * 1048576);
    -- The row's rowid now: its own, or the one it was just moved to (the highest of its millisecond).
    INSERT OR IGNORE INTO sandbox_operations_search_queue (row)
    SELECT CASE
        WHEN new.rowid >= new.created_at * 1048576 AND new.rowid < (new.created_at + 1) * 1048576 THEN new.rowid
        ELSE (
            SELECT MAX(s.rowid) FROM sandbox_operations s
            WHERE s.rowid >= new.created_at * 1048576 AND s.rowid < (new.created_at + 1) * 1048576
        )
    END;
END;

DROP TRIGGER IF EXISTS sandbox_operations_search_delete;
CREATE TRIGGER sandbox_operations_search_delete AFTER DELETE ON sandbox_operations BEGIN
    DELETE FROM sandbox_operations_search WHERE rowid = old.rowid;
    DELETE FROM sandbox_operations_search_queue WHERE row = old.rowid;
END;

DROP TRIGGER IF EXISTS sandbox_operations_search_update;
CREATE TRIGGER sandbox_operations_search_update AFTER UPDATE OF target, detail ON sandbox_operations BEGIN
    DELETE FROM sandbox_operations_search WHERE rowid = old.rowid;
    DELETE FROM sandbox_operations_search_queue WHERE row = old.rowid;
    INSERT OR IGNORE INTO sandbox_operations_search_queue (row) VALUES (new.rowid);
END;

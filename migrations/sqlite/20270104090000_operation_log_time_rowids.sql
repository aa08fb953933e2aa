-- A search that stops at its page (issue 26). The search's FTS5 index is keyed by the row's rowid
-- and can be read in rowid order, newest first, stopping when a page is full; but the rowids were
-- handed out in the order rows were written, which says nothing certain about their time, so a
-- search read every candidate and sorted the matches (a rare word's cost grew with its matches).
--
-- Now a row's rowid is its time first: `created_at * 1048576 + n`, n counting the rows of the same
-- millisecond (a row's rowid lies in [created_at * 2^20, (created_at + 1) * 2^20)). Reading the
-- index by descending rowid is reading it by descending time, and the store reads a search's page
-- that way, then adds the other rows of the page's last millisecond and puts the page in
-- (created_at, id) order (`store.rs`, `searched_page`).
--
-- The recorder writes each row's rowid itself (`recording/store.rs`); a row written without one
-- (by hand, or by any other statement) is moved to its key by the insert trigger below before the
-- search index learns of it, so every row keeps the rule whoever wrote it. created_at is never
-- updated.
--
-- Existing rows are moved to their keys (n in id order within a millisecond) and the search index
-- is rebuilt under the new rowids.
DROP TRIGGER IF EXISTS sandbox_operations_search_insert;

CREATE TEMP TABLE operation_time_keys AS
SELECT rowid AS old, created_at * 1048576 + ROW_NUMBER() OVER (PARTITION BY created_at ORDER BY id) - 1 AS key
FROM sandbox_operations;
-- Out of the way first (no key can meet an old rowid half way), then to the key.
UPDATE sandbox_operations SET rowid = -rowid;
UPDATE sandbox_operations SET rowid = (SELECT k.key FROM temp.operation_time_keys k WHERE k.old = -sandbox_operations.rowid);
DROP TABLE temp.operation_time_keys;

INSERT INTO sandbox_operations_search (sandbox_operations_search) VALUES ('delete-all');
INSERT INTO sandbox_operations_search (rowid, target, detail) SELECT rowid, target, detail FROM sandbox_operations;

CREATE TRIGGER sandbox_operations_search_insert AFTER INSERT ON sandbox_operations BEGIN
    -- A row written without its time key goes to the next free one of its millisecond.
    UPDATE sandbox_operations
    SET rowid = (
        SELECT COALESCE(MAX(s.rowid) + 1, new.created_at * 1048576) FROM sandbox_operations s
        WHERE s.rowid >= new.created_at * 1048576 AND s.rowid < (new.created_at + 1) * 1048576
    )
    WHERE rowid = new.rowid
      AND (new.rowid < new.created_at * 1048576 OR new.rowid >= (new.created_at + 1) * 1048576);
    -- The row's rowid now: its own, or the one it was just moved to (the highest of its millisecond).
    INSERT INTO sandbox_operations_search (rowid, target, detail)
    SELECT CASE
        WHEN new.rowid >= new.created_at * 1048576 AND new.rowid < (new.created_at + 1) * 1048576 THEN new.rowid
        ELSE (
            SELECT MAX(s.rowid) FROM sandbox_operations s
            WHERE s.rowid >= new.created_at * 1048576 AND s.rowid < (new.created_at + 1) * 1048576
        )
    END, new.target, new.detail;
END;

-- The retention sweep finds the rows before its cutoff by their time keys (`rowid <`), so the
-- index of created_at alone is one B-tree less to write with every row.
DROP INDEX IF EXISTS sandbox_operations_created;

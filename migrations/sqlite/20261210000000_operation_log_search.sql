-- The operation log's `q` (issue 10): a case-insensitive substring of the target or the detail.
-- A B-tree cannot serve `LIKE '%…%'`, so without this a search filtered the organization's rows
-- one by one along sandbox_operations_org_time (a rare term read all of them).
--
-- sandbox_operations_search is an FTS5 index of every trigram of the target and the detail
-- (`tokenize='trigram'`, case-insensitive), keyed by the row's rowid. It is contentless (it holds
-- the index, not a second copy of the text; `contentless_delete=1`, SQLite ≥ 3.43, lets a row be
-- removed by rowid) and kept in step by the triggers below: every insert, every delete (the
-- retention sweep's among them) and a change of the text. The store asks it for the rows holding
-- the term as a quoted phrase (`MATCH '"…"'`), reads those rows by rowid, then rechecks the
-- `LIKE … ESCAPE '\'` on them, so `%`, `_` and `\` stay literal and the results are exact. Terms
-- of 1 or 2 characters have no trigram and are filtered along sandbox_operations_org_time instead.
--
-- The rowids are the table's own (the application never runs VACUUM, which may renumber the rows
-- of a table without an INTEGER PRIMARY KEY; after a manual VACUUM, rebuild the index with the
-- DELETE and INSERT … SELECT below).
CREATE VIRTUAL TABLE sandbox_operations_search USING fts5(
    target, detail, content = '', contentless_delete = 1, tokenize = 'trigram'
);
INSERT INTO sandbox_operations_search (rowid, target, detail) SELECT rowid, target, detail FROM sandbox_operations;

CREATE TRIGGER sandbox_operations_search_insert AFTER INSERT ON sandbox_operations BEGIN
    INSERT INTO sandbox_operations_search (rowid, target, detail) VALUES (new.rowid, new.target, new.detail);
END;
CREATE TRIGGER sandbox_operations_search_delete AFTER DELETE ON sandbox_operations BEGIN
    DELETE FROM sandbox_operations_search WHERE rowid = old.rowid;
END;
CREATE TRIGGER sandbox_operations_search_update AFTER UPDATE OF target, detail ON sandbox_operations BEGIN
    DELETE FROM sandbox_operations_search WHERE rowid = old.rowid;
    INSERT INTO sandbox_operations_search (rowid, target, detail) VALUES (new.rowid, new.target, new.detail);
END;

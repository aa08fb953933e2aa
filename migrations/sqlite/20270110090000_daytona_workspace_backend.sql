-- A Daytona workspace row says `daytona` (issue 48): a workspace's `backend` is where its files
-- live, spelled once (`hosts::kind::Placement`): `state`, or the kind of its connection's host
-- (`sandboxd`, `daytona`). Until now a Daytona workspace was stored as `sandboxd` and said
-- `daytona` only at the HTTP edge.
--
-- The CHECK is widened in place. SQLite cannot alter a CHECK, and the rebuild it documents (a
-- new table, the rows copied, the old one dropped) needs `PRAGMA foreign_keys=OFF`, which does
-- nothing inside the transaction every migration runs in here: dropping `sandbox_workspaces`
-- would then delete the rows of every table that references it (ON DELETE CASCADE). Instead,
-- the procedure SQLite's documentation gives for changes that leave the stored rows as they are
-- (https://www.sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema Changes",
-- for removing a CHECK): the table's text in `sqlite_schema` is edited. Widening an IN list is
-- such a change (every stored row satisfies the new CHECK). `writable_schema=RESET` makes this
-- connection read the edited schema; the table created and dropped moves the schema version on,
-- so every other connection reads it again before its next statement.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, 'CHECK (backend IN (''sandboxd'', ''state''))', 'CHECK (backend IN (''state'', ''sandboxd'', ''daytona''))')
WHERE type = 'table' AND name = 'sandbox_workspaces';
PRAGMA writable_schema = RESET;
CREATE TABLE daytona_workspace_backend_schema_bump (x INTEGER);
DROP TABLE daytona_workspace_backend_schema_bump;

-- Old rows: a container workspace on a Daytona connection. One whose connection was deleted
-- (connection_id set to NULL) names no host any more and stays as it was.
UPDATE sandbox_workspaces
SET backend = 'daytona'
WHERE backend = 'sandboxd'
  AND connection_id IN (SELECT id FROM sandbox_connections WHERE kind = 'daytona');

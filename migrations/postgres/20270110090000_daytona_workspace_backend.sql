-- A Daytona workspace row says `daytona` (issue 48): a workspace's `backend` is where its files
-- live, spelled once (`hosts::kind::Placement`): `state`, or the kind of its connection's host
-- (`sandboxd`, `daytona`). Until now a Daytona workspace was stored as `sandboxd` and said
-- `daytona` only at the HTTP edge.
ALTER TABLE sandbox_workspaces DROP CONSTRAINT sandbox_workspaces_backend_check;
ALTER TABLE sandbox_workspaces
    ADD CONSTRAINT sandbox_workspaces_backend_check CHECK (backend IN ('state', 'sandboxd', 'daytona'));

-- Old rows: a container workspace on a Daytona connection. One whose connection was deleted
-- (connection_id set to NULL) names no host any more and stays as it was.
UPDATE sandbox_workspaces
SET backend = 'daytona'
WHERE backend = 'sandboxd'
  AND connection_id IN (SELECT id FROM sandbox_connections WHERE kind = 'daytona');

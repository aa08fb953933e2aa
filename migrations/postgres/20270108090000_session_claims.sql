-- Claims on a host session's name (its session key), so that an open and the orphan purge of one
-- name never interleave, whichever console or command-line process runs them (issue 45). One row
-- a name. An open sets `opening_until` (now + 15 minutes, extended by each open, never shortened)
-- before it asks its host, unless a purge holds the name; the orphan purge sets `purging_until`
-- only while no open holds it, in a transaction that re-checks the workspace rows and tombstones,
-- commits, destroys at the host (no database lock held across the host call) and clears it. An
-- expired claim holds nothing (a crashed opener or purger), and the sweeps delete expired rows.
-- See docs/workspaces.md, "Orphans".
CREATE TABLE sandbox_session_claims (
    session_key TEXT PRIMARY KEY NOT NULL,
    opening_until BIGINT NOT NULL DEFAULT 0,
    purging_until BIGINT NOT NULL DEFAULT 0
);

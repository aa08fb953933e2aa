-- Each connection's last known health (issue 49): what the background check of its host found,
-- when that check began (`checked_at`), and since when the state has been what it is (`since`),
-- so Home, `GET /api/v1/health` and `/metrics` read one truth on every replica. One row a
-- connection, made by its first check. A check claims the row first (`claimed_until`, with its own
-- `claim_token`): a conditional UPDATE only one replica's succeeds, so two replicas never ask one
-- host at once; a crashed checker's claim expires. `version` is the connection's version the state
-- is about (address, key and edit), so an edited connection is checked again at once.
-- See docs/operating.md, "Host checks".
CREATE TABLE sandbox_host_checks (
    connection_id TEXT PRIMARY KEY NOT NULL REFERENCES sandbox_connections(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    version TEXT NOT NULL DEFAULT '',
    -- a `Health` word (`healthy`, `no_answer`, …); null until the first check
    health TEXT,
    -- written by us, never a token or an address
    message TEXT,
    checked_at BIGINT,
    since BIGINT,
    claimed_until BIGINT NOT NULL DEFAULT 0,
    claim_token TEXT
);
CREATE INDEX sandbox_host_checks_organization ON sandbox_host_checks(organization_id);

-- Tombstones (DESIGN.md §10): one per sandbox whose workspace row was deleted while its session
-- may still run (and cost money) at the provider. Written in the same transaction as the delete;
-- removed once the provider confirms the destroy. The `sandbox-destroy-retry` sweep retries the
-- due ones, the pause doubling from 2 minutes to 6 hours; a sweeper claims a row by a conditional
-- UPDATE of `claimed_until` and `claim_token`, so two replicas never destroy the same one at once.
CREATE TABLE sandbox_tombstones (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    connection_id TEXT NOT NULL REFERENCES sandbox_connections(id) ON DELETE CASCADE,
    -- the workspace's session key, and the host's session id to destroy (its reference, else the key)
    session_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    -- conversation_deleted | agent_deleted | member_removed | run_finished | files_deleted
    reason TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_attempt_at BIGINT,
    -- written by us, never a token or an address
    last_error TEXT,
    claimed_until BIGINT,
    claim_token TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX sandbox_tombstones_due ON sandbox_tombstones(next_attempt_at);
CREATE INDEX sandbox_tombstones_connection ON sandbox_tombstones(organization_id, connection_id);

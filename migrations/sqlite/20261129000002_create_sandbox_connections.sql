-- An organization's registrations of sandbox hosts (DESIGN.md §6).
CREATE TABLE sandbox_connections (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('sandboxd', 'daytona')),
    address TEXT,
    credential_secret_id TEXT REFERENCES vault_secrets(id) ON DELETE SET NULL,
    default_runtime TEXT,
    is_default BIGINT NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    is_enabled BIGINT NOT NULL DEFAULT 1 CHECK (is_enabled IN (0, 1)),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (organization_id, name)
);
-- Exactly one default per organization is enforced here, not only in code.
CREATE UNIQUE INDEX sandbox_connections_one_default ON sandbox_connections(organization_id) WHERE is_default = 1;
CREATE INDEX sandbox_connections_credential ON sandbox_connections(credential_secret_id);

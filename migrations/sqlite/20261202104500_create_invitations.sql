-- Invitations to an organization (issue 8): adding a person makes a pending invitation they
-- accept, never a membership at once. The code is shown once; only its SHA-256 is stored.
-- At most one pending invitation per organization and e-mail: inviting again revokes the old one.

CREATE TABLE invitations (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'builder', 'operator', 'member')),
    code_hash TEXT NOT NULL UNIQUE,
    created_by TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    accepted_at BIGINT,
    revoked_at BIGINT
);
CREATE UNIQUE INDEX invitations_one_pending ON invitations(organization_id, email)
    WHERE accepted_at IS NULL AND revoked_at IS NULL;
CREATE INDEX invitations_email ON invitations(email);

-- Issue 30: a person who forgot their password asks for a reset link by mail (where
-- AGENTICOS_SMTP_URL is set). Only the link's token hash is kept; a link works once, for an hour,
-- and any password set for the account (by the link, its owner or an admin) ends its links.

CREATE TABLE password_reset_links (
    id TEXT PRIMARY KEY NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX password_reset_links_user ON password_reset_links(user_id, created_at);

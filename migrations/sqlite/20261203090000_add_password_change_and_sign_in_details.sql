-- Issue 9: an account given a password it did not choose (a one-time password from
-- `agenticos admin create-owner`) must choose its own at its first sign-in; sign-ins remember
-- when they were last used and by which browser, for the account page.

ALTER TABLE users ADD COLUMN must_change_password BIGINT NOT NULL DEFAULT 0 CHECK (must_change_password IN (0, 1));
ALTER TABLE login_sessions ADD COLUMN last_seen_at BIGINT;
ALTER TABLE login_sessions ADD COLUMN user_agent TEXT;
CREATE INDEX api_tokens_created_by ON api_tokens(created_by);

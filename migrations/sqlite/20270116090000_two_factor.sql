-- Issue 49, item 7 (accounts as on GitHub): two-factor sign-in with TOTP.
--
-- user_two_factor: an account's TOTP secret, AES-256-GCM under the vault master key (bound to the
-- account's id; never stored in plain text). enabled_at is NULL while an enrolment waits for its
-- first code; last_step is the 30-second step of the last code accepted, so a code works once.
-- two_factor_recovery_codes: ten one-time codes per account, only their SHA-256 (80 random bits
-- each); used_at once spent. sign_in_challenges: the second step of a sign-in (a right password
-- for an account with two-factor on), only its token's hash; it grants nothing but that step.
-- organizations.require_two_factor: the owners' switch; members without it are sent to enrol.

CREATE TABLE user_two_factor (
    user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    nonce BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    enabled_at BIGINT,
    last_step BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);

CREATE TABLE two_factor_recovery_codes (
    id TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL UNIQUE,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX two_factor_recovery_codes_user ON two_factor_recovery_codes(user_id);

CREATE TABLE sign_in_challenges (
    id TEXT PRIMARY KEY NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sign_in_challenges_user ON sign_in_challenges(user_id);

ALTER TABLE organizations ADD COLUMN require_two_factor BIGINT NOT NULL DEFAULT 0 CHECK (require_two_factor IN (0, 1));

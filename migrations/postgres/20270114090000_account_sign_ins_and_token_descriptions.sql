-- Issue 49, item 7 (accounts as on GitHub): when an account last signed in (a password sign-in
-- that made a session; NULL before the first, and for accounts from before this migration), shown
-- as "Last sign-in" on Members; and a description an API token's creator may give it (what it is
-- for, where it is used), shown beside its name.

ALTER TABLE users ADD COLUMN last_sign_in_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN description TEXT NOT NULL DEFAULT '';

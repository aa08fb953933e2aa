-- Issue 30: an API token may expire (30, 90 or 365 days after it was created, or never: NULL).
-- An expired token authenticates nowhere; the API answers it with a `token-expired` problem.

ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;

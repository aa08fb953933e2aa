-- Two events written in the same millisecond keep the order they were written in.
ALTER TABLE audit_events ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;

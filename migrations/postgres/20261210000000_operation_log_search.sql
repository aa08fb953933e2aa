-- The operation log's `q` (issue 10): a case-insensitive substring of the target or the detail,
-- queried as `LOWER(o.target) LIKE '%…%' OR LOWER(o.detail) LIKE '%…%'`. A B-tree cannot serve a
-- pattern that starts with `%`, so without these indexes a search filtered the organization's
-- rows one by one along sandbox_operations_org_time (a rare term read all of them).
--
-- pg_trgm's GIN indexes hold every trigram of the lower-cased column: the planner turns each
-- LIKE into a bitmap of the rows holding all the term's trigrams, ORs the two bitmaps, rechecks
-- the LIKE on those rows only (so `%`, `_` and `\` stay literal and results stay exact), keeps the
-- organization's and sorts the few that match. For a frequent term it may still prefer to walk
-- sandbox_operations_org_time newest first, which then fills a page after a few rows. Terms of 1
-- or 2 characters have no trigram: they are filtered along sandbox_operations_org_time.
--
-- The extension ships with PostgreSQL (contrib); where it may not be created (a managed server
-- that lacks it, a role without the right), the migration only says so and `q` keeps working,
-- unindexed.
DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pg_trgm is not available (%): the operation log''s search is not indexed', SQLERRM;
    END;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        -- `q` on the target: paths and commands.
        EXECUTE 'CREATE INDEX sandbox_operations_target_trgm ON sandbox_operations USING gin (LOWER(target) gin_trgm_ops)';
        -- `q` on the detail: exit codes, sizes, error messages.
        EXECUTE 'CREATE INDEX sandbox_operations_detail_trgm ON sandbox_operations USING gin (LOWER(detail) gin_trgm_ops)';
    END IF;
END
$$;

-- The layouts benches/sql/operation_log_layouts.sh compares (read it first): today's log
-- (`plain`) and the log partitioned by day (`parted`), filled alike, and the page statements of
-- each search case, timed inside the server.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- The bench's clock: 30 days up to noon of day 20788 (UTC), as the bench's `now`.
CREATE FUNCTION now_ms() RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT 1796126400000::bigint $$;
CREATE FUNCTION day_ms() RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT 86400000::bigint $$;
-- The measured organization.
CREATE FUNCTION org() RETURNS uuid LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000-0000-4000-8000-000000000000'::uuid $$;

-- Today's table and indexes (migrations up to 20270121090000_operation_log_uuid_ids).
CREATE TABLE plain (
    id uuid PRIMARY KEY NOT NULL,
    organization_id uuid NOT NULL,
    workspace_id uuid,
    session_key TEXT NOT NULL,
    connection_id uuid,
    agent_id uuid,
    run_id uuid,
    operation TEXT NOT NULL,
    target TEXT NOT NULL,
    ok BIGINT NOT NULL,
    detail TEXT NOT NULL,
    duration_ms BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    conversation_id uuid
);
-- The same log partitioned by day: a partitioned table's primary key holds its partition key.
CREATE TABLE parted (LIKE plain) PARTITION BY RANGE (created_at);
ALTER TABLE parted ADD PRIMARY KEY (id, created_at);
DO $$
DECLARE d bigint;
BEGIN
    FOR d IN (now_ms() / day_ms() - 30) .. (now_ms() / day_ms()) LOOP
        EXECUTE format('CREATE TABLE parted_%s PARTITION OF parted FOR VALUES FROM (%s) TO (%s)',
            d, d * day_ms(), (d + 1) * day_ms());
    END LOOP;
    CREATE TABLE parted_default PARTITION OF parted DEFAULT;
END
$$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['plain', 'parted'] LOOP
        EXECUTE format('CREATE INDEX %1$s_org_time ON %1$s (uuid_hash(organization_id), created_at)', t);
        EXECUTE format('CREATE INDEX %1$s_org_failed ON %1$s (uuid_hash(organization_id), created_at) WHERE ok = 0', t);
        EXECUTE format('CREATE INDEX %1$s_created ON %1$s USING brin (created_at)', t);
        EXECUTE format('CREATE INDEX %1$s_filters ON %1$s USING gin '
            '(session_key, agent_id, workspace_id, connection_id, run_id, conversation_id, operation) '
            'WITH (gin_pending_list_limit = 256)', t);
        EXECUTE format('CREATE INDEX %1$s_text_trgm ON %1$s USING gin '
            '((LOWER(target) || '' '' || LOWER(detail)) gin_trgm_ops) WITH (gin_pending_list_limit = 256)', t);
    END LOOP;
END
$$;

-- `n` rows of the organization and `n` of noise in 20 others, interleaved row by row, in time
-- order over the 30 days, as benches/operations_log.rs `fill` writes them (the same draws from one
-- 63-bit number a row; `run` picks the numbers, as the bench's salt); ids time-ordered by the
-- order written (UUIDv7 minted as the rows are written).
CREATE PROCEDURE fill(layout text, n bigint, run int) LANGUAGE plpgsql AS $$
DECLARE
    total bigint := 2 * n;
    step float8 := (30 * day_ms())::float8 / (2 * n);
    b bigint;
BEGIN
    FOR b IN 0 .. (total - 1) / 5000 LOOP
        EXECUTE format($f$
            INSERT INTO %I (id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id,
                operation, target, ok, detail, duration_ms, created_at, seq)
            SELECT (lpad(to_hex(($3::bigint << 40) | k), 16, '0') || lpad(to_hex(r), 16, '0'))::uuid,
                CASE WHEN k %% 2 = 0 THEN org()
                     ELSE ('00000000-0000-4000-8000-' || lpad((1 + (k / 2) %% 20)::text, 12, '0'))::uuid END,
                NULL, 'session-' || ((r >> 20) %% 2000), NULL,
                CASE WHEN k %% 2 = 0 THEN ('00000000-0000-4000-9000-' || lpad(((r >> 32) %% 50)::text, 12, '0'))::uuid
                     ELSE ('00000000-0000-4000-a000-' || lpad(((k / 2) %% 20 * 2 + (r >> 32) %% 2)::text, 12, '0'))::uuid END,
                NULL,
                (ARRAY['read', 'write', 'ls', 'mkdir', 'remove', 'execute'])[1 + r %% 6],
                CASE WHEN r %% 6 = 5 THEN 'cargo test --package crate' || (r %% 997)
                     ELSE '/workspace/src/module' || (r %% 89) || '/file' || (r %% 1009) || '.rs' END,
                CASE WHEN (r >> 48) %% 33 = 0 THEN 0 ELSE 1 END,
                CASE WHEN r %% 6 = 5 THEN 'exit ' || (CASE WHEN (r >> 48) %% 33 = 0 THEN 1 ELSE 0 END)
                     ELSE (r %% 5000) || ' bytes' END,
                r %% 200,
                now_ms() - 30 * day_ms() + floor(k * $4)::bigint + (r >> 40) %% greatest(floor($4)::bigint, 1),
                k
            FROM (SELECT k, hashint8extended(k, $3) & 9223372036854775807 AS r
                  FROM generate_series($1, $2) AS k) AS s$f$, layout)
        USING b * 5000, least((b + 1) * 5000, total) - 1, run, step;
        IF b % 10 = 9 THEN COMMIT; END IF;
    END LOOP;
    COMMIT;
END
$$;

-- Bytes a row of each layout: the table and each index (all partitions' together), then the total.
CREATE FUNCTION sizes() RETURNS TABLE (layout text, relation text, bytes_a_row numeric) LANGUAGE sql AS $$
    WITH n AS (SELECT (SELECT count(*) FROM plain) AS plain, (SELECT count(*) FROM parted) AS parted),
    rels AS (
        SELECT 'plain' AS layout, c.relname::text AS relation, pg_relation_size(c.oid) AS bytes
        FROM pg_class c WHERE c.relname LIKE 'plain%' AND c.relkind IN ('r', 'i')
        UNION ALL
        SELECT 'parted', p.relname::text, (SELECT sum(pg_relation_size(t.relid)) FROM pg_partition_tree(p.oid) t)
        FROM pg_class p WHERE p.relname LIKE 'parted%' AND p.relkind IN ('p', 'I')
    )
    SELECT r.layout, r.relation, round(r.bytes::numeric / CASE r.layout WHEN 'plain' THEN n.plain ELSE n.parted END, 1)
    FROM rels r, n
    UNION ALL
    SELECT 'plain', 'TOTAL (pg_total_relation_size)', round(pg_total_relation_size('plain')::numeric / n.plain, 1) FROM n
    UNION ALL
    SELECT 'parted', 'TOTAL (pg_total_relation_size)',
        round((SELECT sum(pg_total_relation_size(t.relid)) FROM pg_partition_tree('parted') t WHERE t.isleaf)::numeric / n.parted, 1)
    FROM n
    ORDER BY 1, 2
$$;

-- A page statement of `tab`, as `postgres_store::page_sql` builds it (without the name joins):
-- the organization's rows meeting `cond`, newest first, `fetch` of them; `plus0` orders by
-- `created_at + 0` (a search narrowed to its rare trigrams).
CREATE FUNCTION page_sql(tab text, cond text, fetch_ int, plus0 bool, window_sql text DEFAULT '') RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT format('SELECT o.id::text AS id, o.created_at AS time, o.operation AS op, o.target, o.ok, o.detail, '
        'o.duration_ms, o.session_key, o.agent_id::text AS agent_id FROM %s o '
        'WHERE uuid_hash(o.organization_id) = uuid_hash(%L::uuid) AND o.organization_id = %L::uuid AND %s%s '
        'ORDER BY %s DESC, o.id DESC LIMIT %s',
        tab, org(), org(), cond, window_sql, CASE WHEN plus0 THEN 'o.created_at + 0' ELSE 'o.created_at' END, fetch_)
$$;

-- The store's walk (`postgres_store::walk_in`): no sort, no bitmap.
CREATE FUNCTION walk(on_ bool) RETURNS void LANGUAGE sql AS $$
    SELECT set_config('enable_sort', CASE WHEN on_ THEN 'off' ELSE 'on' END, true),
           set_config('enable_bitmapscan', CASE WHEN on_ THEN 'off' ELSE 'on' END, true)
$$;

-- One page of `parted`, its partitions walked newest first: one statement a window, each asking
-- only for the rows still missing, until the page is full. `mode` 'day': a window is one day (one
-- partition), and after `single` of them the rest in one statement; 'doubling': 1, 1, 2, 4, 8…
-- days. The statements run so far are left in `h50.statements`. Returns the page's ids in order.
CREATE FUNCTION part_page(cond text, fetch_ int, plus0 bool, mode text, single int DEFAULT 8) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    oldest bigint := (now_ms() / day_ms() - 30) * day_ms();
    hi bigint := (now_ms() / day_ms() + 1) * day_ms();
    width bigint := day_ms();
    lo bigint;
    ids text[] := '{}';
    n int := 0;
    rec record;
    q text;
BEGIN
    WHILE cardinality(ids) < fetch_ AND hi > oldest LOOP
        IF mode = 'day' AND n >= single THEN
            lo := oldest;
        ELSE
            lo := greatest(hi - width, oldest);
        END IF;
        q := page_sql('parted', cond, fetch_ - cardinality(ids), plus0,
            format(' AND o.created_at >= %s AND o.created_at < %s', lo, hi));
        IF current_setting('h50.count', true) = 'on' THEN
            PERFORM set_config('h50.blocks', (current_setting('h50.blocks')::bigint + blocks(q))::text, true);
        END IF;
        FOR rec IN EXECUTE q LOOP
            ids := ids || rec.id;
        END LOOP;
        n := n + 1;
        hi := lo;
        IF mode = 'doubling' AND n >= 2 THEN
            width := width * 2;
        END IF;
    END LOOP;
    PERFORM set_config('h50.statements', n::text, true);
    RETURN ids;
END
$$;

-- The shared buffers a statement's execution touches (hit or read): the pages it reads, which
-- the machine's load does not change.
CREATE FUNCTION blocks(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE p json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ' || q INTO p;
    RETURN (p->0->'Plan'->>'Shared Hit Blocks')::bigint + (p->0->'Plan'->>'Shared Read Blocks')::bigint;
END
$$;

-- p50 / p95 (ms) of `q` over `n` runs after one unmeasured, its rows, and its ids in order.
CREATE FUNCTION timed(q text, n int, OUT p50 numeric, OUT p95 numeric, OUT rows_ int, OUT ids text[])
LANGUAGE plpgsql AS $$
DECLARE
    times float8[] := '{}';
    t0 timestamptz;
    rec record;
    i int;
BEGIN
    FOR i IN 0 .. n LOOP
        ids := '{}';
        t0 := clock_timestamp();
        IF q LIKE 'SELECT part_page%' THEN
            EXECUTE q INTO ids;
        ELSE
            FOR rec IN EXECUTE q LOOP
                ids := ids || rec.id;
            END LOOP;
        END IF;
        IF i > 0 THEN
            times := times || extract(epoch FROM clock_timestamp() - t0) * 1000;
        END IF;
    END LOOP;
    SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY t)::numeric, 2),
           round(percentile_disc(0.95) WITHIN GROUP (ORDER BY t)::numeric, 2)
    INTO p50, p95 FROM unnest(times) AS t;
    rows_ := cardinality(ids);
END
$$;

-- The bench's cases: (name, condition, ordered by `created_at + 0`, walked). The searches as the
-- store narrows them at these sizes: `crate123` and `module42/file1` to their rarest trigrams
-- (`search_narrowing`; the trigrams as chosen on the bench's rows), the others walked to
-- (`Narrowing::Common`) and found with `strpos`; a term nowhere in the log to show what a miss
-- costs.
CREATE TABLE cases (name text, cond text, plus0 bool, walked bool, ord int);
INSERT INTO cases VALUES
    ('first page', 'true', false, false, 1),
    ('rare word', '((LOWER(o.target) || '' '' || LOWER(o.detail)) LIKE ''%123%'' AND (LOWER(o.target) || '' '' || LOWER(o.detail)) LIKE ''%cra%'') '
        'AND (strpos(LOWER(o.target), ''crate123'') > 0 OR strpos(LOWER(o.detail), ''crate123'') > 0)', true, false, 2),
    ('path fragment', '((LOWER(o.target) || '' '' || LOWER(o.detail)) LIKE ''%42/%'' AND (LOWER(o.target) || '' '' || LOWER(o.detail)) LIKE ''%le1%'') '
        'AND (strpos(LOWER(o.target), ''module42/file1'') > 0 OR strpos(LOWER(o.detail), ''module42/file1'') > 0)', true, false, 3),
    ('word in ~1%', '(strpos(LOWER(o.target), ''module42'') > 0 OR strpos(LOWER(o.detail), ''module42'') > 0)', false, true, 4),
    ('failed + word', 'o.ok = 0 AND (strpos(LOWER(o.target), ''cargo'') > 0 OR strpos(LOWER(o.detail), ''cargo'') > 0)', false, true, 5),
    ('session + word', 'o.session_key = ''session-1234'' AND (strpos(LOWER(o.target), ''module'') > 0 OR strpos(LOWER(o.detail), ''module'') > 0)', false, false, 6),
    ('one session', 'o.session_key = ''session-1234''', false, false, 7),
    ('term in no row', '((LOWER(o.target) || '' '' || LOWER(o.detail)) LIKE ''%zqx%'' AND (LOWER(o.target) || '' '' || LOWER(o.detail)) LIKE ''%k9w%'') '
        'AND (strpos(LOWER(o.target), ''zqxk9w'') > 0 OR strpos(LOWER(o.detail), ''zqxk9w'') > 0)', true, false, 8);

-- Every case at limit 50 and 200 (51 and 201 rows fetched) in each layout: p50 / p95, rows,
-- statements a page ran, and whether the page's ids are today's, in the same order.
CREATE FUNCTION cases(n int, only_ text DEFAULT NULL)
RETURNS TABLE (case_ text, lim int, layout text, p50 numeric, p95 numeric, rows_ int, statements int, blocks_ bigint,
    same bool)
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    l int;
    t record;
    expected text[];
    m text;
BEGIN
    FOR c IN SELECT * FROM cases WHERE only_ IS NULL OR name = only_ ORDER BY ord LOOP
        FOREACH l IN ARRAY ARRAY[50, 200] LOOP
            PERFORM walk(c.walked);
            t := timed(page_sql('plain', c.cond, l + 1, c.plus0), n);
            expected := t.ids;
            RETURN QUERY SELECT c.name, l, 'today'::text, t.p50, t.p95, t.rows_, 1,
                blocks(page_sql('plain', c.cond, l + 1, c.plus0)), true;
            FOREACH m IN ARRAY ARRAY['day', 'doubling'] LOOP
                t := timed(format('SELECT part_page(%L, %s, %L, %L)', c.cond, l + 1, c.plus0, m), n);
                PERFORM set_config('h50.count', 'on', true), set_config('h50.blocks', '0', true);
                PERFORM part_page(c.cond, l + 1, c.plus0, m);
                PERFORM set_config('h50.count', 'off', true);
                RETURN QUERY SELECT c.name, l, 'by day, ' || m, t.p50, t.p95, t.rows_,
                    current_setting('h50.statements')::int, current_setting('h50.blocks')::bigint, t.ids = expected;
            END LOOP;
            PERFORM walk(false);
        END LOOP;
    END LOOP;
END
$$;

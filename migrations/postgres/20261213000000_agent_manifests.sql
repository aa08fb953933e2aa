-- Issue 14: an agent's manifest of typed entries replaces its manifest_files; a run may bring its own.
ALTER TABLE agents ADD COLUMN manifest TEXT NOT NULL DEFAULT '{"entries":[]}';
UPDATE agents SET manifest = json_build_object('entries', COALESCE((
    SELECT json_agg(CASE
        WHEN COALESCE((f.value ->> 'is_dir')::boolean, false) THEN
            json_build_object('kind', 'dir', 'path', f.value ->> 'path')
        ELSE
            json_build_object('kind', 'file', 'path', f.value ->> 'path',
                              'content', COALESCE(f.value ->> 'content', ''))
    END ORDER BY f.ordinality)
    FROM jsonb_array_elements(agents.manifest_files::jsonb) WITH ORDINALITY AS f(value, ordinality)
), '[]'::json))::text;
ALTER TABLE agents DROP COLUMN manifest_files;
ALTER TABLE runs ADD COLUMN manifest TEXT;

-- Issue 14: an agent's manifest of typed entries replaces its manifest_files; a run may bring its own.
ALTER TABLE agents ADD COLUMN manifest TEXT NOT NULL DEFAULT '{"entries":[]}';
UPDATE agents SET manifest = json_object('entries', (
    SELECT json_group_array(CASE
        WHEN COALESCE(json_extract(f.value, '$.is_dir'), 0) THEN
            json_object('kind', 'dir', 'path', json_extract(f.value, '$.path'))
        ELSE
            json_object('kind', 'file', 'path', json_extract(f.value, '$.path'),
                        'content', COALESCE(json_extract(f.value, '$.content'), ''))
    END)
    FROM json_each(CASE WHEN json_valid(agents.manifest_files) THEN agents.manifest_files ELSE '[]' END) AS f
));
ALTER TABLE agents DROP COLUMN manifest_files;
ALTER TABLE runs ADD COLUMN manifest TEXT;

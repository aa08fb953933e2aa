-- Who attached each file under `uploads/` through the console (issue 49: people are named;
-- docs/design.md §4 and §9). A host records no author and the operation log keeps the person only
-- as text of its detail, for 30 days, so the console keeps its own attachments' person: one row a
-- workspace and path, the latest attachment at a path wins; gone with its workspace. A person
-- deleted leaves the row without them (and Documents says "attached by a person" again).
CREATE TABLE workspace_uploads (
    workspace_id TEXT NOT NULL REFERENCES sandbox_workspaces(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    attached_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, path)
);

-- Agents, conversations and runs (only what the sandbox needs), and the workspaces and operation
-- record of DESIGN.md §7-8.

CREATE TABLE agents (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    backend TEXT NOT NULL CHECK (backend IN ('state', 'service')),
    connection_id TEXT REFERENCES sandbox_connections(id) ON DELETE SET NULL,
    scope TEXT NOT NULL CHECK (scope IN ('run', 'conversation', 'channel', 'user', 'agent')),
    runtime TEXT,
    shell_enabled BIGINT NOT NULL DEFAULT 1 CHECK (shell_enabled IN (0, 1)),
    -- JSON: [{"path": "...", "content": "..."} | {"path": "...", "is_dir": true}]
    skills TEXT NOT NULL DEFAULT '[]',
    manifest_files TEXT NOT NULL DEFAULT '[]',
    created_by TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (organization_id, name)
);

CREATE TABLE conversations (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    owner_user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    channel_key TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX conversations_org ON conversations(organization_id, created_at);

CREATE TABLE conversation_members (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (conversation_id, user_id)
);

CREATE TABLE runs (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    conversation_id TEXT REFERENCES conversations(id) ON DELETE CASCADE,
    -- member | widget | trigger | channel | api
    started_by TEXT NOT NULL CHECK (started_by IN ('member', 'widget', 'trigger', 'channel', 'api')),
    user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    trigger_as_creator BIGINT NOT NULL DEFAULT 0 CHECK (trigger_as_creator IN (0, 1)),
    channel_sender TEXT,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished')),
    workspace_opened BIGINT NOT NULL DEFAULT 0 CHECK (workspace_opened IN (0, 1)),
    created_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX runs_org ON runs(organization_id, created_at);

CREATE TABLE sandbox_workspaces (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    session_key TEXT NOT NULL UNIQUE,
    backend TEXT NOT NULL CHECK (backend IN ('sandboxd', 'state')),
    scope TEXT NOT NULL,
    connection_id TEXT REFERENCES sandbox_connections(id) ON DELETE SET NULL,
    agent_id TEXT REFERENCES agents(id) ON DELETE SET NULL,
    conversation_id TEXT REFERENCES conversations(id) ON DELETE SET NULL,
    run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
    user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    owner_label TEXT,
    channel_key TEXT,
    runtime TEXT,
    -- the host's session reference once opened
    session_ref TEXT,
    -- not_opened | preparing | open | lost
    state TEXT NOT NULL DEFAULT 'not_opened',
    lost_run_id TEXT,
    -- the state backend: a JSON document and its version (optimistic concurrency)
    document TEXT,
    document_version BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX sandbox_workspaces_org ON sandbox_workspaces(organization_id, updated_at);

CREATE TABLE sandbox_operations (
    id TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    workspace_id TEXT REFERENCES sandbox_workspaces(id) ON DELETE SET NULL,
    session_key TEXT NOT NULL,
    connection_id TEXT REFERENCES sandbox_connections(id) ON DELETE SET NULL,
    agent_id TEXT REFERENCES agents(id) ON DELETE SET NULL,
    run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
    operation TEXT NOT NULL CHECK (operation IN ('read', 'write', 'ls', 'mkdir', 'remove', 'execute')),
    target TEXT NOT NULL,
    ok BIGINT NOT NULL CHECK (ok IN (0, 1)),
    detail TEXT NOT NULL,
    duration_ms BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    -- orders a turn's operations, which are committed together in one batch
    seq BIGINT NOT NULL
);
CREATE INDEX sandbox_operations_org ON sandbox_operations(organization_id, created_at);
CREATE INDEX sandbox_operations_run ON sandbox_operations(run_id);

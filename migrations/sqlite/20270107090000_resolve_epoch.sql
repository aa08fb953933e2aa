-- A counter of changes to the rows a workspace operation is resolved from (issue 26, CPU per
-- operation). Each console keeps a run's resolved rows (run, agent, conversation, how it started,
-- workspace, connection) for a second, then looked them all up again: six statements a run every
-- second under load, about 5 % of the console's CPU per proxied operation. Now, on SQLite, it
-- reads this one number instead, and looks the rows up again only when it changed since it looked
-- them up: every change to those tables, by this console or another one on the same file, adds
-- one, in the transaction that makes the change. Inserts of runs, agents, conversations,
-- workspaces and connections change no row a console already resolved, so they leave it alone.
-- PostgreSQL looks the rows up again every second as before.
CREATE TABLE resolve_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n BIGINT NOT NULL
);
INSERT INTO resolve_epoch (id, n) VALUES (1, 0);

CREATE TRIGGER resolve_epoch_runs_update AFTER UPDATE ON runs BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_runs_delete AFTER DELETE ON runs BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_agents_update AFTER UPDATE ON agents BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_agents_delete AFTER DELETE ON agents BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_conversations_update AFTER UPDATE ON conversations BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_conversations_delete AFTER DELETE ON conversations BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_run_starts_insert AFTER INSERT ON run_starts BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_run_starts_update AFTER UPDATE ON run_starts BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_run_starts_delete AFTER DELETE ON run_starts BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_workspaces_update AFTER UPDATE ON sandbox_workspaces BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_workspaces_delete AFTER DELETE ON sandbox_workspaces BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_connections_update AFTER UPDATE ON sandbox_connections BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_connections_delete AFTER DELETE ON sandbox_connections BEGIN UPDATE resolve_epoch SET n = n + 1; END;
CREATE TRIGGER resolve_epoch_organizations_delete AFTER DELETE ON organizations BEGIN UPDATE resolve_epoch SET n = n + 1; END;

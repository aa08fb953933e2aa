//! One transaction per user action (issue 27): an action that writes several rows writes all of
//! them or none. Each test makes the database refuse the action's last write (a trigger, the way
//! a constraint or a full disk would fail it) and checks that its earlier writes are gone too.

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::helpers::{Backend, TestApp};

/// Makes the database refuse a write to `table` (`event`: `INSERT` or `UPDATE`) where `when`
/// holds (in terms of `NEW` and `OLD`), as a failure in the middle of an action.
async fn refuse(app: &TestApp, table: &str, event: &str, when: &str) {
    match app.backend {
        Backend::Sqlite => {
            app.execute(&format!(
                "CREATE TRIGGER refused BEFORE {event} ON {table} WHEN {when} \
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            ))
            .await
        }
        Backend::Postgres => {
            app.execute(
                "CREATE FUNCTION refused() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
            )
            .await;
            app.execute(&format!(
                "CREATE TRIGGER refused BEFORE {event} ON {table} FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION refused()"
            ))
            .await
        }
    }
}

/// Takes [`refuse`]'s trigger away again.
async fn allow(app: &TestApp, table: &str) {
    match app.backend {
        Backend::Sqlite => app.execute("DROP TRIGGER refused").await,
        Backend::Postgres => app.execute(&format!("DROP TRIGGER refused ON {table}")).await,
    }
}

/// A second connection of the organization, neither its default nor asked for its host.
const SECOND: &str = "00000000-0000-4000-8000-000000000002";

db_test! {
    async fn a_connection_edit_that_fails_halfway_changes_nothing(app: TestApp) {
        app.setup_owner().await;
        app.insert_idle_sandboxd_connection("first").await;
        let org = app.scalar_strings("SELECT organization_id FROM sandbox_connections").await.remove(0);
        app.execute(&format!(
            "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
             default_runtime, is_default, is_enabled, created_at, updated_at) \
             VALUES ('{SECOND}', '{org}', 'second', 'sandboxd', 'http://127.0.0.1:10', NULL, NULL, 0, 1, 1, 1)"
        ))
        .await;
        // Switched off (the first write) and made the default (the second, refused).
        refuse(&app, "sandbox_connections", "UPDATE", "NEW.is_default = 1 AND OLD.is_default = 0").await;
        let body = json!({"is_enabled": false, "is_default": true});
        let r = app.web.api(Method::PATCH, &format!("/api/v1/sandbox-connections/{SECOND}"), Some(body)).await;
        assert_eq!(r.status, 500, "the refused write fails the edit: {}", r.body);
        let enabled = app.scalar_strings(&format!("SELECT CAST(is_enabled AS TEXT) FROM sandbox_connections WHERE id = '{SECOND}'")).await;
        assert_eq!(enabled, ["1"], "the switch-off went with the refused default");
        let audited = app.scalar_strings("SELECT action FROM audit_events WHERE action LIKE 'connection.%'").await;
        assert!(audited.is_empty(), "nothing of the edit is audited: {audited:?}");

        // Without the refusal the same edit does both.
        allow(&app, "sandbox_connections").await;
        let body = json!({"is_enabled": false, "is_default": true});
        let r = app.web.api(Method::PATCH, &format!("/api/v1/sandbox-connections/{SECOND}"), Some(body)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["is_enabled"], json!(false));
        assert_eq!(r.json()["is_default"], json!(true));
    }
}

db_test! {
    async fn an_agent_saved_with_snapshot_settings_that_fail_is_not_saved(app: TestApp) {
        app.setup_owner().await;
        let host = app.insert_idle_sandboxd_connection("host-a").await;
        let form = |name: &'static str, keep: &'static str| {
            vec![
                ("name", name),
                ("backend", "service"),
                ("connection_id", host.as_str()),
                ("scope", "conversation"),
                ("runtime", ""),
                ("shell_enabled", "on"),
                ("skills", ""),
                ("snapshots", "on_finish"),
                ("keep_last", keep),
            ]
        };
        // The agent (the first write) and its snapshot settings (the second, refused).
        refuse(&app, "agent_snapshot_settings", "INSERT", "NEW.keep_last = 7").await;
        let r = app.web.post_form("/agents", &form("coder", "7")).await;
        assert_eq!(r.status, 500, "the refused write fails the save: {}", r.body);
        assert_eq!(app.count("agents").await, 0, "the agent went with its refused settings");

        // An edit likewise: the agent keeps its name when its new settings are refused.
        let r = app.web.post_form("/agents", &form("coder", "3")).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let id = app.scalar_strings("SELECT id FROM agents").await.remove(0);
        let r = app.web.post_form(&format!("/agents/{id}"), &form("renamed", "7")).await;
        assert_eq!(r.status, 500, "{}", r.body);
        assert_eq!(app.scalar_strings("SELECT name FROM agents").await, ["coder"]);
        let kept = app.scalar_strings("SELECT CAST(keep_last AS TEXT) FROM agent_snapshot_settings").await;
        assert_eq!(kept, ["3"], "the settings saved before stay");
    }
}

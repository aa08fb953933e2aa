//! Where a workspace lives, spelled once (issue 48, `hosts::kind::Placement`): a Daytona
//! workspace's row says `daytona` in the database, not only at the HTTP edge; rows written before
//! migration `20270110090000_daytona_workspace_backend` on a Daytona connection say so after it;
//! the database still refuses a word no placement has. SQLite and PostgreSQL.

use std::borrow::Cow;

use reqwest::Method;
use serde_json::json;

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::helpers::{spawn_app_on, Backend};
use crate::support::connections::daytona;
use crate::support::{service_agent, Org};

/// The migration that spells a Daytona workspace `daytona`.
const DAYTONA_BACKEND: i64 = 20270110090000;

/// The database migrated up to, not including, [`DAYTONA_BACKEND`].
async fn migrate_to_before(db: &agenticos::db::Db) {
    let all = match db.kind() {
        agenticos::db::DbKind::Sqlite => sqlx::migrate!("migrations/sqlite"),
        agenticos::db::DbKind::Postgres => sqlx::migrate!("migrations/postgres"),
    };
    let old: Vec<_> = all.migrations.iter().filter(|m| m.version < DAYTONA_BACKEND).cloned().collect();
    assert!(old.len() < all.migrations.len(), "the migration is among the migrations");
    let migrator = sqlx::migrate::Migrator { migrations: Cow::Owned(old), ..sqlx::migrate::Migrator::DEFAULT };
    migrator.run(db.pool()).await.expect("old migrations");
}

/// Writes a workspace row straight into the table; whether the database took it.
async fn insert_workspace(
    c: &mut sqlx::pool::PoolConnection<sqlx::Any>,
    org: &str,
    backend: &str,
    connection: Option<&str>,
) -> (String, bool) {
    let id = uuid::Uuid::new_v4().to_string();
    let taken = sqlx::query(
        "INSERT INTO sandbox_workspaces (id, organization_id, session_key, backend, scope, connection_id, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, 'conversation', $5, 1, 1)",
    )
    .bind(&id)
    .bind(org)
    .bind(format!("key-{id}"))
    .bind(backend)
    .bind(connection)
    .execute(&mut **c)
    .await
    .is_ok();
    (id, taken)
}

db_test! {
    async fn a_daytona_workspace_row_says_daytona_and_a_state_one_state(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        daytona(&o, &fake.api_url, &fake.api_key).await;
        let stored = |id: String| {
            let app = &app;
            async move { app.scalar_strings(&format!("SELECT backend FROM sandbox_workspaces WHERE id = '{id}'")).await }
        };

        let coder = o.agent(service_agent("coder", "conversation")).await;
        let conv = o.conversation(&coder, json!({})).await;
        let run = o.run(&coder, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.txt", "hello").await.status, 204);
        let state = o.ws(&run, Method::GET, "state", None).await.json();
        assert_eq!(state["backend"], "daytona", "{state}");
        assert_eq!(stored(state["workspace_id"].as_str().expect("id").to_string()).await, ["daytona"]);

        let notes = o.agent(json!({"name": "notes", "backend": "state", "scope": "conversation"})).await;
        let conv = o.conversation(&notes, json!({})).await;
        let run = o.run(&notes, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.txt", "hello").await.status, 204);
        let state = o.ws(&run, Method::GET, "state", None).await.json();
        assert_eq!(state["backend"], "state", "{state}");
        assert_eq!(stored(state["workspace_id"].as_str().expect("id").to_string()).await, ["state"]);
    }
}

db_test! {
    async fn rows_of_a_daytona_connection_written_before_the_migration_say_daytona_after_it(database: TestDatabase) {
        let backend = if database.url.starts_with("sqlite:") { Backend::Sqlite } else { Backend::Postgres };
        let db = agenticos::db::Db::connect(&database.url, 2).await.expect("connect");
        migrate_to_before(&db).await;
        let org = agenticos::auth::service::create_owner(&db, "owner@old.example", "correct horse battery".to_string().into(), "Old")
            .await
            .expect("owner");
        let (on_daytona, on_sandboxd, document, orphaned) = {
            let mut c = db.conn().await.expect("conn");
            let connection = |kind: &'static str, address: Option<&'static str>| {
                let id = uuid::Uuid::new_v4().to_string();
                let query = sqlx::query(
                    "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
                     default_runtime, is_default, is_enabled, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, NULL, NULL, 0, 1, 1, 1)",
                )
                .bind(id.clone())
                .bind(org.clone())
                .bind(format!("{kind} host"))
                .bind(kind)
                .bind(address);
                (id, query)
            };
            let (daytona_conn, q) = connection("daytona", None);
            q.execute(&mut *c).await.expect("a Daytona connection");
            let (sandboxd_conn, q) = connection("sandboxd", Some("http://127.0.0.1:9"));
            q.execute(&mut *c).await.expect("a sandboxd connection");
            // The old schema stored a Daytona workspace as `sandboxd`, and refused `daytona`.
            let (_, taken) = insert_workspace(&mut c, &org, "daytona", Some(&daytona_conn)).await;
            assert!(!taken, "the old schema took `daytona`");
            let on_daytona = insert_workspace(&mut c, &org, "sandboxd", Some(&daytona_conn)).await;
            let on_sandboxd = insert_workspace(&mut c, &org, "sandboxd", Some(&sandboxd_conn)).await;
            let document = insert_workspace(&mut c, &org, "state", None).await;
            let orphaned = insert_workspace(&mut c, &org, "sandboxd", None).await;
            for (id, taken) in [&on_daytona, &on_sandboxd, &document, &orphaned] {
                assert!(taken, "old row {id}");
            }
            (on_daytona.0, on_sandboxd.0, document.0, orphaned.0)
        };
        db.close().await;

        // The upgrade: the application migrates on start.
        let app = spawn_app_on(backend, database, &[]).await;
        let stored = |id: &str| {
            let (app, id) = (&app, id.to_string());
            async move { app.scalar_strings(&format!("SELECT backend FROM sandbox_workspaces WHERE id = '{id}'")).await }
        };
        assert_eq!(stored(&on_daytona).await, ["daytona"], "a workspace on a Daytona connection");
        assert_eq!(stored(&on_sandboxd).await, ["sandboxd"]);
        assert_eq!(stored(&document).await, ["state"]);
        // Its connection deleted, a row names no host any more: left as it was.
        assert_eq!(stored(&orphaned).await, ["sandboxd"]);

        // The widened check: `daytona` is taken now, a word no placement has is still refused.
        let mut c = app.state.db.conn().await.expect("conn");
        let (_, taken) = insert_workspace(&mut c, &org, "daytona", None).await;
        assert!(taken, "the migrated schema refused `daytona`");
        let (_, taken) = insert_workspace(&mut c, &org, "kubernetes", None).await;
        assert!(!taken, "the migrated schema took a word no placement has");
    }
}

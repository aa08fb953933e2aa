//! The operation log's compact schema (issue 26, migration `20261230090000_operation_log_compact`):
//! a database holding rows in the schema before it is upgraded in place, and every row reads back
//! unchanged through the API — listed, filtered, searched and paged — on SQLite and PostgreSQL.

use std::borrow::Cow;

use serde_json::Value;

use crate::db_test;
use crate::helpers::{spawn_app_on, Backend};

/// The first migration of the compact schema: everything before it is the old schema.
const COMPACT: i64 = 20261230090000;

/// The database migrated up to, not including, [`COMPACT`].
async fn migrate_to_old_schema(db: &agenticos::db::Db) {
    let all = match db.kind() {
        agenticos::db::DbKind::Sqlite => sqlx::migrate!("migrations/sqlite"),
        agenticos::db::DbKind::Postgres => sqlx::migrate!("migrations/postgres"),
    };
    let old: Vec<_> = all.migrations.iter().filter(|m| m.version < COMPACT).cloned().collect();
    assert!(old.len() < all.migrations.len(), "the compact migration is among the migrations");
    let migrator = sqlx::migrate::Migrator { migrations: Cow::Owned(old), ..sqlx::migrate::Migrator::DEFAULT };
    migrator.run(db.pool()).await.expect("old migrations");
}

/// A row as the old schema held it, and as the API must show it.
struct Old {
    id: String,
    session: String,
    agent: bool,
    op: &'static str,
    target: String,
    ok: bool,
    detail: String,
    at: i64,
}

db_test! {
    async fn rows_of_the_old_schema_read_back_unchanged_after_the_upgrade(database: TestDatabase) {
        let backend = if database.url.starts_with("sqlite:") { Backend::Sqlite } else { Backend::Postgres };
        let db = agenticos::db::Db::connect(&database.url, 2).await.expect("connect");
        migrate_to_old_schema(&db).await;
        let org = agenticos::auth::service::create_owner(&db, "owner@legacy.example", "correct horse battery".to_string().into(), "Legacy")
            .await
            .expect("owner");
        let agent = uuid::Uuid::new_v4().to_string();
        let now = agenticos::db::now_ms();
        let ops = ["read", "write", "ls", "mkdir", "remove", "execute"];
        let rows: Vec<Old> = (0..60usize)
            .map(|i| Old {
                id: uuid::Uuid::new_v4().to_string(),
                session: format!("session-{}", i % 4),
                agent: i % 2 == 0,
                op: ops[i % 6],
                target: if i == 17 { "/workspace/Legacy-Report.md".into() } else { format!("/workspace/file-{i}.txt") },
                ok: i % 9 != 0,
                detail: format!("{i} bytes"),
                // Two rows share each millisecond: the id breaks the tie.
                at: now - 1_000 * (i as i64 / 2),
            })
            .collect();
        {
            let mut c = db.conn().await.expect("conn");
            sqlx::query(
                "INSERT INTO agents (id, organization_id, name, backend, scope, created_at, updated_at) \
                 VALUES ($1, $2, 'old-agent', 'state', 'conversation', 1, 1)",
            )
            .bind(&agent)
            .bind(&org)
            .execute(&mut *c)
            .await
            .expect("agent");
            for (i, r) in rows.iter().enumerate() {
                // The old schema's id is TEXT on both databases: bound as text, as the old code did.
                sqlx::query(
                    "INSERT INTO sandbox_operations (id, organization_id, workspace_id, session_key, connection_id, agent_id, \
                     run_id, operation, target, ok, detail, duration_ms, created_at, seq) \
                     VALUES ($1, $2, NULL, $3, NULL, $4, NULL, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(&r.id)
                .bind(&org)
                .bind(&r.session)
                .bind(r.agent.then(|| agent.clone()))
                .bind(r.op)
                .bind(&r.target)
                .bind(i64::from(r.ok))
                .bind(&r.detail)
                .bind(i as i64)
                .bind(r.at)
                .bind(i as i64)
                .execute(&mut *c)
                .await
                .expect("old row");
            }
        }
        db.close().await;

        // The upgrade: the application migrates on start.
        let app = spawn_app_on(backend, database, &[]).await;
        let caller = agenticos::orgs::service::command_line_caller(&app.state.db, "Legacy", None).await.expect("caller");
        let token = agenticos::tokens::service::create(
            &app.state.db,
            &caller,
            agenticos::tokens::service::NewToken { name: "reader".into(), role: "operator".into(), description: String::new() },
        )
        .await
        .expect("token")
        .value;
        let get = |query: String| {
            let (app, token) = (&app, token.clone());
            async move {
                let r = app.web.bearer(&token, reqwest::Method::GET, &format!("/api/v1/operations{query}"), None).await;
                assert_eq!(r.status, 200, "{query}: {}", r.body);
                r.json()
            }
        };
        let newest_first = |keep: &dyn Fn(&Old) -> bool| {
            let mut v: Vec<&Old> = rows.iter().filter(|r| keep(r)).collect();
            v.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
            v
        };

        // Every row, every field, in the log's order.
        let page = get("?limit=200".into()).await;
        let items = page["items"].as_array().expect("items");
        let expected = newest_first(&|_| true);
        assert_eq!(items.len(), 60, "{page}");
        for (item, r) in items.iter().zip(&expected) {
            let i = rows.iter().position(|x| x.id == r.id).expect("a seeded row") as i64;
            assert_eq!(item["id"], Value::from(r.id.clone()), "the id reads back as the same string");
            assert_eq!(item["time"], r.at);
            assert_eq!(item["op"], r.op);
            assert_eq!(item["target"], Value::from(r.target.clone()));
            assert_eq!(item["ok"], r.ok);
            assert_eq!(item["detail"], Value::from(r.detail.clone()));
            assert_eq!(item["duration_ms"], i);
            assert_eq!(item["session_key"], Value::from(r.session.clone()));
            assert_eq!(item["agent_id"], if r.agent { Value::from(agent.clone()) } else { Value::Null });
            assert_eq!(item["agent_name"], if r.agent { "old-agent" } else { "agent deleted" });
        }

        let ids = |page: &Value| -> Vec<String> {
            page["items"].as_array().expect("items").iter().map(|i| i["id"].as_str().expect("id").to_string()).collect()
        };
        let want = |keep: &dyn Fn(&Old) -> bool| -> Vec<String> { newest_first(keep).iter().map(|r| r.id.clone()).collect() };
        // Filtered and searched.
        assert_eq!(ids(&get("?session_key=session-1&limit=200".into()).await), want(&|r| r.session == "session-1"));
        assert_eq!(ids(&get(format!("?agent_id={agent}&limit=200")).await), want(&|r| r.agent));
        assert_eq!(ids(&get("?failed_only=true&limit=200".into()).await), want(&|r| !r.ok));
        assert_eq!(ids(&get("?op=mkdir&limit=200".into()).await), want(&|r| r.op == "mkdir"));
        assert_eq!(ids(&get("?q=legacy-report&limit=200".into()).await), want(&|r| r.target.contains("Legacy-Report")));
        assert_eq!(ids(&get("?q=file-4&limit=200".into()).await), want(&|r| r.target.contains("file-4")));
        // Paged by 7 through the rows that share milliseconds: each row once, in order.
        let mut seen = Vec::new();
        let mut page = get("?limit=7".into()).await;
        loop {
            seen.extend(ids(&page));
            match page["next_cursor"].as_str() {
                Some(cursor) => page = get(format!("?limit=7&cursor={cursor}")).await,
                None => break,
            }
        }
        assert_eq!(seen, want(&|_| true));
        if backend == Backend::Sqlite {
            // Migration 20270104090000: every row moved to its time key, the search index rebuilt
            // under the new rowids (each row once, found by its own rowid).
            let outside = app
                .scalar_strings(&format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM sandbox_operations \
                     WHERE rowid < created_at * {k} OR rowid >= (created_at + 1) * {k}",
                    k = agenticos::sandbox::log::sqlite_store::TIME_KEY_SPAN
                ))
                .await;
            assert_eq!(outside, ["0"], "a row kept its old rowid");
            assert_eq!(app.count("sandbox_operations_search").await, 60);
            let found = app
                .scalar_strings(
                    "SELECT o.id FROM sandbox_operations_search s JOIN sandbox_operations o ON o.rowid = s.rowid \
                     WHERE sandbox_operations_search MATCH '\"legacy-report\"'",
                )
                .await;
            assert_eq!(found, [rows[17].id.clone()], "the search index names the row by its new rowid");
            let indexes = app.scalar_strings("SELECT name FROM sqlite_master WHERE name = 'sandbox_operations_created'").await;
            assert!(indexes.is_empty(), "the sweep's index of the time is gone: {indexes:?}");
        }
        if backend == Backend::Postgres {
            let kind: Vec<String> = app
                .scalar_strings(
                    "SELECT data_type::text FROM information_schema.columns WHERE table_name = 'sandbox_operations' AND column_name = 'id'",
                )
                .await;
            assert_eq!(kind, ["uuid"], "the id is stored as a uuid");
            // Migration 20270121090000: the ids a row names are uuids too; the session key stays text.
            let kinds = app
                .scalar_strings(
                    "SELECT column_name || ' ' || data_type::text FROM information_schema.columns \
                     WHERE table_name = 'sandbox_operations' AND column_name IN ('organization_id', 'workspace_id', \
                     'connection_id', 'agent_id', 'run_id', 'conversation_id', 'session_key') ORDER BY column_name",
                )
                .await;
            assert_eq!(
                kinds,
                [
                    "agent_id uuid",
                    "connection_id uuid",
                    "conversation_id uuid",
                    "organization_id uuid",
                    "run_id uuid",
                    "session_key text",
                    "workspace_id uuid"
                ]
            );
            // Migration 20270102090000: the time indexes keyed on the organization and the time
            // alone, the GIN indexes' pending lists at 256 kB.
            let defs = app
                .scalar_strings(
                    "SELECT indexname || ': ' || indexdef FROM pg_indexes \
                     WHERE tablename = 'sandbox_operations' AND indexname LIKE 'sandbox_operations_org_%' ORDER BY indexname",
                )
                .await;
            assert_eq!(defs.len(), 2, "{defs:?}");
            for d in &defs {
                assert!(d.contains("(uuid_hash(organization_id), created_at)"), "{d}");
            }
            let options = app
                .scalar_strings(
                    "SELECT c.relname || ' ' || array_to_string(c.reloptions, ',') FROM pg_class c \
                     WHERE c.relname IN ('sandbox_operations_filters', 'sandbox_operations_text_trgm') ORDER BY c.relname",
                )
                .await;
            assert_eq!(
                options,
                ["sandbox_operations_filters gin_pending_list_limit=256", "sandbox_operations_text_trgm gin_pending_list_limit=256"]
            );
        }
    }
}

//! `agenticos sweep` from the command line: its exit code tells a script whether a removed
//! sandbox may still run at its provider (a tombstone waits, due or not).

use crate::db_test;
use crate::helpers::TestApp;

fn sweep(app: &TestApp, dir: &std::path::Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agenticos"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.state.config.database.url)
        .env("AGENTICOS_VAULT_KEY_FILE", dir.join("vault.key"))
        .env("AGENTICOS_CATALOG_DIR", crate::helpers::TEST_CATALOG_DIR)
        .env("AGENTICOS_LOG", "warn")
        .arg("sweep")
        .output()
        .expect("runs");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

db_test! {
    async fn the_sweep_exits_1_while_a_tombstone_waits_even_when_it_is_not_yet_due(app: TestApp) {
        app.setup_owner().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let (code, out) = sweep(&app, dir.path());
        assert_eq!(code, Some(0), "nothing waits: {out}");
        assert!(!out.contains("still to destroy"), "{out}");

        let connection = app.insert_idle_sandboxd_connection("gone host").await;
        let next = agenticos::db::now_ms() + 3_600_000;
        app.execute(&format!(
            "INSERT INTO sandbox_tombstones (id, organization_id, connection_id, session_key, session_id, reason, \
             attempts, next_attempt_at, created_at) \
             SELECT '{}', organization_id, id, 'xc-1', 'xc-1', 'conversation_deleted', 1, {next}, 1 \
             FROM sandbox_connections WHERE id = '{connection}'",
            uuid::Uuid::new_v4()
        ))
        .await;
        let (code, out) = sweep(&app, dir.path());
        assert_eq!(code, Some(1), "a waiting tombstone is not a clean sweep: {out}");
        assert!(out.contains("0 destroyed"), "the tombstone was not due, so nothing was asked: {out}");
        assert!(out.contains("1 sandbox still to destroy (next attempt "), "{out}");
        assert_eq!(app.count("sandbox_tombstones").await, 1);
    }
}

//! The binary itself: configuration errors, `migrate`, `admin create-owner` (on SQLite and PostgreSQL).

use std::process::Command;

use crate::db_test;

fn agenticos() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agenticos"));
    c.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    c
}

#[test]
fn an_invalid_setting_stops_start_up_listing_every_problem_with_status_2() {
    let out = agenticos()
        .env("AGENTICOS_BIND", "not-an-address")
        .env("DATABASE_URL", "mysql://nope")
        .env("AGENTICOS_VAULT_KEY", "too-short")
        .arg("serve")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for name in ["AGENTICOS_BIND", "DATABASE_URL", "AGENTICOS_VAULT_KEY"] {
        assert!(err.contains(name), "{name} not named in: {err}");
    }
}

#[test]
fn version_prints_the_release_without_reading_the_configuration() {
    // An invalid setting does not matter: `--version` answers before the configuration is read.
    let out = agenticos().env("AGENTICOS_BIND", "not-an-address").arg("--version").output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("agenticos {}\n", env!("CARGO_PKG_VERSION")));
}

/// `agenticos healthcheck` with `AGENTICOS_BIND` set to `bind`: exit code and standard error.
async fn healthcheck(bind: &str) -> (Option<i32>, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"))
        .env_clear()
        .env("AGENTICOS_BIND", bind)
        .arg("healthcheck")
        .output()
        .await
        .expect("runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

db_test! {
    async fn healthcheck_exits_0_while_the_console_is_ready_and_1_when_nothing_answers(app: TestApp) {
        // The container's setting: every address; the check asks loopback on that port.
        let (code, stderr) = healthcheck(&format!("0.0.0.0:{}", app.port)).await;
        assert_eq!(code, Some(0), "{stderr}");
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
        let (code, stderr) = healthcheck(&format!("0.0.0.0:{free}")).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains(&format!("http://127.0.0.1:{free}/readyz did not answer")), "{stderr}");
    }
}

db_test! {
    async fn migrate_and_create_owner_work_on_a_fresh_database(database: TestDatabase) {
        let key = database.dir.path().join("vault.key");
        let out = agenticos()
            .env("DATABASE_URL", &database.url)
            .env("AGENTICOS_VAULT_KEY_FILE", &key)
            .arg("migrate")
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = agenticos()
            .env("DATABASE_URL", &database.url)
            .env("AGENTICOS_VAULT_KEY_FILE", &key)
            .args(["admin", "create-owner", "--email", "ops@example.com", "--organization", "Ops"])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("owner ops@example.com created") && text.contains("one-time password"), "{text}");
        assert!(text.contains("chooses their own password"), "{text}");
        // The account must choose its own password at its first sign-in.
        let db = agenticos::db::Db::connect(&database.url, 1).await.expect("connect");
        let mut c = db.conn().await.expect("conn");
        let flag: i64 = sqlx::query_scalar("SELECT must_change_password FROM users").fetch_one(&mut *c).await.expect("flag");
        assert_eq!(flag, 1);
        drop(c);
        db.close().await;
        let out = agenticos()
            .env("DATABASE_URL", &database.url)
            .env("AGENTICOS_VAULT_KEY_FILE", &key)
            .args(["admin", "create-owner", "--email", "", "--organization", "Ops"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("email"));
        let out = agenticos().arg("frobnicate").output().expect("runs");
        assert_eq!(out.status.code(), Some(2));
    }
}

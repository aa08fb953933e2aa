//! The orphan purge and an open of the same session name (issue 45), against the real sandboxd
//! peer on SQLite and PostgreSQL, with the command line as a separate process: an open held
//! between its host call and its row (`AppState::open_hold`, no sleeping) is neither listed nor
//! purged, by this process or the command line, even by a purge that listed the session as an
//! orphan just before the open began; and the claims decide in the database, whichever process
//! asks.

use reqwest::Method;
use serde_json::json;

use agenticos::sandbox::hosts::kind::{ConnectionKind, Placement};
use agenticos::sandbox::running::orphans;
use agenticos::sandbox::workspaces::claims::{self, Verdict};
use agenticos::sandbox::workspaces::key::{session_key, Subject};
use agenticos::vocabulary::scope::Scope;

use crate::db_test;
use crate::helpers::TestApp;
use crate::peer::{self, Peer};
use crate::support::{service_agent, Org};

const MINUTE: i64 = 60_000;

/// `agenticos sweep --orphans [--purge]` as its own process on `app`'s database, with orphans
/// proven dead at any idle time (`AGENTICOS_ORPHAN_MIN_AGE_SECONDS`, here `min_age`).
pub(crate) async fn sweep_orphans(app: &TestApp, purge: bool, min_age: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.state.config.database.url)
        .env("AGENTICOS_VAULT_KEY", vault_key(app))
        .env("AGENTICOS_CATALOG_DIR", crate::helpers::TEST_CATALOG_DIR)
        .env("AGENTICOS_LOG", "warn")
        .env("AGENTICOS_ORPHAN_MIN_AGE_SECONDS", min_age)
        .env("AGENTICOS_SNAPSHOT_DIR", dir.path())
        .args(["sweep", "--orphans"]);
    if purge {
        command.arg("--purge");
    }
    let out = command.output().await.expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// The vault key `app` runs with (the command line reads the connection's credential with it).
fn vault_key(app: &TestApp) -> String {
    match &app.state.config.vault.key {
        agenticos::config::VaultKeySource::Inline(k) => secrecy::ExposeSecret::expose_secret(k).to_string(),
        agenticos::config::VaultKeySource::File(p) => std::fs::read_to_string(p).expect("vault key").trim().to_string(),
    }
}

/// Opens session `id` for `tenant` on `peer` directly, with a file in it: what a crash between a
/// host's open and our row's commit leaves, or a backup restored from before the row.
async fn open_by_hand_with_a_file(peer: &Peer, id: &str, tenant: &str) {
    let body = json!({"session_id": id, "tenant": tenant, "reuse": true});
    let r = peer.request(Method::POST, "/sessions").json(&body).send().await.expect("open");
    assert!(r.status().is_success(), "{}", r.text().await.unwrap_or_default());
    let r = peer
        .request(Method::POST, &format!("/sessions/{id}/files/write?path=/workspace/kept.txt"))
        .body("alive")
        .send()
        .await
        .expect("write");
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap_or_default());
}

fn on_host(peer_sessions: &[serde_json::Value], id: &str) -> bool {
    peer_sessions.iter().any(|s| s["session_id"] == id)
}

db_test! {
    async fn an_open_held_between_its_host_call_and_its_row_is_neither_listed_nor_purged(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("keeper", "agent")).await;
        let key = session_key(Placement::Host(ConnectionKind::Sandboxd), Scope::Agent, &o.org_id, Some(&conn), Subject::Id(&agent));
        open_by_hand_with_a_file(peer, &key, &o.org_id).await;
        // Nothing names it yet: an orphan by every test, once idle long enough.
        let later = agenticos::db::now_ms() + 11 * MINUTE;
        let stale = orphans::everywhere_at(&app.state, later).await.expect("orphans");
        let ids: Vec<&str> = stale.orphans.iter().map(|o| o.session_id.as_str()).collect();
        assert_eq!(ids, vec![key.as_str()], "{:?}", stale.problems);

        // The agent's first run opens its workspace by that name and is held once the host answered.
        let held = app.state.open_hold.arm(&key);
        let run = o.run(&agent, None, json!({})).await;
        let read = o.read(&run, "kept.txt");
        tokio::pin!(read);
        tokio::select! {
            () = held.reached.notified() => {}
            r = &mut read => panic!("the read answered before its open was held: {} {}", r.status, r.body),
        }

        // The command line, a separate process: the session is not listed, and not purged.
        let (code, out) = sweep_orphans(&app, false, "0").await;
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("0 sessions orphaned") && !out.contains(&key), "{out}");
        let (code, out) = sweep_orphans(&app, true, "0").await;
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("0 purged") && !out.contains(&key), "{out}");
        // This process, with the list made before the open began: decided again, and spared.
        let done = orphans::purge(&app.state, &stale.orphans).await.expect("purge");
        assert_eq!((done.purged, done.spared.len(), done.problems.len()), (0, 1, 0), "{done:?}");
        assert!(done.spared[0].contains("being opened"), "{done:?}");
        assert!(on_host(&o.sessions_on(peer).await, &key), "the session is still on its host");

        held.release.notify_one();
        let r = read.await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "alive"), "its files survived");
        // Its row names it now: still not an orphan, whatever the clock says.
        let found = orphans::everywhere_at(&app.state, later).await.expect("orphans");
        assert!(found.orphans.is_empty(), "{:?}", found.orphans);
        let done = orphans::purge(&app.state, &stale.orphans).await.expect("purge");
        assert_eq!(done.purged, 0, "{done:?}");
        assert_eq!(o.read(&run, "kept.txt").await.body, "alive");
        let events = o.call(Method::GET, "/api/v1/audit-events?event=sandbox.orphans_purged", None).await.json();
        assert_eq!(events["items"], json!([]), "{events}");
    }
}

db_test! {
    async fn a_really_orphaned_session_is_purged_by_the_command_line_once_it_is_old_enough(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (_, live) = o.conversation_with_files(&agent).await;
        let orphan = format!("xc-{}-{}-{}", &o.org_id.replace('-', "")[..8], &conn.replace('-', "")[..8], uuid::Uuid::new_v4().simple());
        open_by_hand_with_a_file(peer, &orphan, &o.org_id).await;

        // Just opened: not idle for the default ten minutes, so not proven dead.
        let (code, out) = sweep_orphans(&app, true, "600").await;
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("0 sessions orphaned") && out.contains("0 purged"), "{out}");
        assert!(on_host(&o.sessions_on(peer).await, &orphan));

        // Old enough: purged; the live conversation's session is not.
        let (code, out) = sweep_orphans(&app, true, "0").await;
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains(&format!("orphaned: Acme / peer-{} / {orphan}", peer.port())), "{out}");
        assert!(out.contains("1 purged"), "{out}");
        let left = o.sessions_on(peer).await;
        assert!(!on_host(&left, &orphan) && on_host(&left, &live), "{left:?}");
        let events = o.call(Method::GET, "/api/v1/audit-events?event=sandbox.orphans_purged", None).await.json();
        assert_eq!(events["items"][0]["target"], orphan.as_str(), "{events}");
    }
}

db_test! {
    async fn an_open_and_a_purge_of_one_name_exclude_each_other_in_the_database(app: TestApp) {
        let now = agenticos::db::now_ms();
        let key = format!("xc-claims-{}", uuid::Uuid::new_v4().simple());
        // A purge claims the name: an open must wait.
        assert_eq!(claims::claim_purge(&app.state.db, &[&key], now).await.expect("purge"), Verdict::Dead);
        let mut c = app.state.db.conn().await.expect("conn");
        assert!(!claims::claim_open(&mut c, &key, now).await.expect("open"), "a purge holds the name");
        assert_eq!(claims::claim_purge(&app.state.db, &[&key], now).await.expect("purge"), Verdict::Claimed);
        claims::release_purge(&app.state.db, &key).await.expect("release");
        // Released: the open claims it, and from then on no purge may.
        assert!(claims::claim_open(&mut c, &key, now).await.expect("open"));
        assert_eq!(claims::claim_purge(&app.state.db, &[&key], now).await.expect("purge"), Verdict::Claimed);
        // A purge that crashed holds nothing once its claim expired; neither does an open's.
        let after_open = now + claims::OPEN_CLAIM_MS + 1;
        assert_eq!(claims::claim_purge(&app.state.db, &[&key], after_open).await.expect("purge"), Verdict::Dead);
        let after_purge = after_open + claims::PURGE_CLAIM_MS + 1;
        assert!(claims::claim_open(&mut c, &key, after_purge).await.expect("open"));
        // Expired claims are swept; the live one stays.
        assert_eq!(claims::delete_expired(&mut c, after_purge).await.expect("sweep"), 0);
        assert_eq!(claims::delete_expired(&mut c, after_purge + claims::OPEN_CLAIM_MS + 1).await.expect("sweep"), 1);
        // A name a tombstone names is not the purge's, even unclaimed.
        app.setup_owner().await;
        let connection = app.insert_idle_sandboxd_connection("gone host").await;
        let named = format!("xc-named-{}", uuid::Uuid::new_v4().simple());
        app.execute(&format!(
            "INSERT INTO sandbox_tombstones (id, organization_id, connection_id, session_key, session_id, reason, \
             attempts, next_attempt_at, created_at) \
             SELECT '{}', organization_id, id, '{named}', '{named}', 'conversation_deleted', 0, 1, 1 \
             FROM sandbox_connections WHERE id = '{connection}'",
            uuid::Uuid::new_v4()
        ))
        .await;
        assert_eq!(claims::claim_purge(&app.state.db, &[&named], now).await.expect("purge"), Verdict::Named);
        // ... and its claim was rolled back with the decision: an open may claim the name.
        assert!(claims::claim_open(&mut c, &named, now).await.expect("open"));
    }
}

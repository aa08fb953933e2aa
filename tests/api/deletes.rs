//! Deletes that leave nothing behind (docs/design.md §10), against the real sandboxd peer on SQLite
//! and PostgreSQL: a deleted conversation's session is purged at the host; a host that is down
//! keeps the tombstone, retried with a doubling pause (driven by the sweep's clock, no sleeping)
//! until the host is back (on every host kind, by `host_test!`); the delete and its tombstones commit together or not at all; two
//! sweepers at once destroy each sandbox once.

use reqwest::Method;
use serde_json::{json, Value};

use agenticos::access::Caller;
use agenticos::sandbox::tombstones::sweep;
use agenticos::sandbox::workspaces::removal;

use crate::helpers::TestApp;
use crate::peer::{self, Peer, PeerOptions};
use crate::support::{service_agent, Org};
use crate::{db_test, host_test};

const MINUTE: i64 = 60_000;

/// (attempts, next_attempt_at, last_error, created_at) of every tombstone.
pub(crate) async fn tombstones(app: &TestApp) -> Vec<(i64, i64, Option<String>, i64)> {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_as(
        "SELECT attempts, next_attempt_at, last_error, created_at FROM sandbox_tombstones ORDER BY created_at",
    )
    .fetch_all(&mut *c)
    .await
    .expect("tombstones")
}

pub(crate) async fn caller(app: &TestApp, org_id: &str) -> Caller {
    agenticos::orgs::service::command_line_caller(&app.state.db, org_id, None).await.expect("caller")
}

fn files_of(peer: &Peer, key: &str) -> std::path::PathBuf {
    peer.workspace_root.join(key)
}

async fn workspace_rows(app: &TestApp, key: &str) -> usize {
    app.scalar_strings(&format!("SELECT id FROM sandbox_workspaces WHERE session_key = '{key}'")).await.len()
}

db_test! {
    async fn deleting_a_conversation_purges_its_sandbox_and_leaves_no_tombstone(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (conv, key) = o.conversation_with_files(&agent).await;
        // A document workspace is only its row.
        let doc = o.agent(json!({"name": "doc", "backend": "state", "scope": "conversation"})).await;
        let doc_conv = o.conversation(&doc, json!({})).await;
        let doc_run = o.run(&doc, Some(&doc_conv), json!({})).await;
        assert_eq!(o.write(&doc_run, "a.txt", "x").await.status, 204);
        assert!(files_of(peer, &key).exists());

        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json(), json!({"workspaces": 1, "sandboxes": 1, "destroyed": 1, "pending": 0}));
        assert!(o.sessions_on(peer).await.iter().all(|s| s["session_id"] != key.as_str()), "the session is gone");
        assert!(!files_of(peer, &key).exists(), "its files were purged");
        assert!(tombstones(&app).await.is_empty());
        assert_eq!(workspace_rows(&app, &key).await, 0);
        assert_eq!(o.call(Method::GET, &format!("/api/v1/conversations/{conv}"), None).await.status, 404);
        assert_eq!(o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await.status, 404);

        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{doc_conv}"), None).await;
        assert_eq!(r.json(), json!({"workspaces": 1, "sandboxes": 0, "destroyed": 0, "pending": 0}), "{}", r.body);
        assert!(tombstones(&app).await.is_empty());

        let events = o.call(Method::GET, "/api/v1/audit-events?event=conversation.deleted", None).await.json();
        let details: Vec<&str> = events["items"].as_array().expect("items").iter().filter_map(|e| e["detail"].as_str()).collect();
        assert!(details.contains(&"1 workspace removed, 1 sandbox to destroy at its host"), "{events}");
        // Another organization's conversation is not found, and nothing of it is touched.
        let other = app.other_org_user("other@example.com", "Other").await;
        let doc_conv = o.conversation(&doc, json!({})).await;
        let r = other.api(Method::DELETE, &format!("/api/v1/conversations/{doc_conv}"), None).await;
        assert_eq!(r.status, 404, "{}", r.body);
        assert_eq!(o.call(Method::GET, &format!("/api/v1/conversations/{doc_conv}"), None).await.status, 200);
    }
}

host_test! {
    async fn a_host_that_is_down_keeps_the_tombstone_retried_with_a_doubling_pause_until_it_is_back(app: TestApp, host: &mut Host) {
        let o = Org::new(&app).await;
        host.connect(&o).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (_, key) = o.conversation_with_files(&agent).await;
        host.go_down();

        // The agent's delete takes its workspaces with it; the host does not answer.
        let r = o.call(Method::DELETE, &format!("/api/v1/agents/{agent}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json(), json!({"workspaces": 1, "sandboxes": 1, "destroyed": 0, "pending": 1}), "{}", r.body);
        assert_eq!(workspace_rows(&app, &key).await, 0, "the row went anyway");
        let t = tombstones(&app).await;
        assert_eq!(t.len(), 1);
        let (attempts, mut next, error, created) = t[0].clone();
        assert_eq!((attempts, next - created), (1, 2 * MINUTE));
        let error = error.expect("the last error is kept");
        assert_eq!(error, host.down_reason());
        let port = url::Url::parse(host.address()).expect("url").port().expect("port").to_string();
        assert!(!error.contains(host.secret()) && !error.contains(&port), "{error}");

        // The connection's row says so.
        let page = app.web.get("/sandboxes").await;
        let pending = page.select_text(".pending-removal").expect("the row shows the pending removal");
        assert!(pending.contains("1 sandbox pending removal") && pending.contains(host.down_reason()), "{pending}");

        // Each failure doubles the pause, up to 6 hours; nothing happens before it is due (nothing
        // is sent).
        for (n, minutes) in [4, 8, 16, 32, 64, 128, 256, 360, 360].into_iter().enumerate() {
            let sent = host.requests();
            let early = sweep::sweep(&app.state, next - 1).await.expect("sweep");
            assert_eq!(early.claimed, 0, "not due yet");
            assert_eq!(host.requests(), sent, "a sweep before it was due reached the host");
            let report = sweep::sweep(&app.state, next).await.expect("sweep");
            assert_eq!((report.claimed, report.failed, report.destroyed), (1, 1, 0));
            let (attempts, now_next, _, _) = tombstones(&app).await[0].clone();
            assert_eq!(attempts, n as i64 + 2);
            assert_eq!(now_next - next, minutes * MINUTE, "after attempt {attempts}");
            next = now_next;
        }

        // The host is back (its files still there): the next sweep deletes the workspace's
        // sandbox, once, and the tombstone goes.
        host.come_back().await;
        assert!(host.files_of(&key).await.is_some(), "the files outlived the host's absence");
        let report = sweep::sweep(&app.state, next).await.expect("sweep");
        assert_eq!((report.claimed, report.destroyed, report.failed), (1, 1, 0), "{report:?}");
        assert!(tombstones(&app).await.is_empty());
        assert!(host.is_gone(&key).await, "purged at the host");
        assert!(host.open_workspaces(&o).await.is_empty());
        assert_eq!(host.deletes_of(&key), 1);
        assert!(app.web.get("/sandboxes").await.select_text(".pending-removal").is_none());
    }
}

async fn install_failing_delete_trigger(app: &TestApp) {
    match app.state.db.kind() {
        agenticos::db::DbKind::Sqlite => {
            app.execute(
                "CREATE TRIGGER refuse_delete BEFORE DELETE ON conversations BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
            )
            .await
        }
        agenticos::db::DbKind::Postgres => {
            app.execute(
                "CREATE FUNCTION refuse_delete() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql",
            )
            .await;
            app.execute("CREATE TRIGGER refuse_delete BEFORE DELETE ON conversations FOR EACH ROW EXECUTE FUNCTION refuse_delete()")
                .await
        }
    }
}

db_test! {
    async fn the_workspace_rows_and_their_tombstones_commit_together_or_not_at_all(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (conv, key) = o.conversation_with_files(&agent).await;

        // The process dies right after the commit, before any destroy: the row is gone and the
        // tombstone is there; the sweep after the restart destroys the sandbox.
        let who = caller(&app, &o.org_id).await;
        let (_, removal, now) = removal::delete_conversation_rows(&app.state, &who, &conv).await.expect("delete");
        assert_eq!((removal.workspaces, removal.sandboxes), (1, 1));
        assert_eq!(workspace_rows(&app, &key).await, 0);
        assert_eq!(tombstones(&app).await.len(), 1);
        assert!(files_of(peer, &key).exists(), "nothing destroyed yet");
        let report = sweep::sweep(&app.state, now).await.expect("sweep");
        assert_eq!(report.destroyed, 1);
        assert!(!files_of(peer, &key).exists());
        assert!(tombstones(&app).await.is_empty());

        // The transaction fails after the rows and the tombstone were written: neither stays.
        let (conv, key) = o.conversation_with_files(&agent).await;
        install_failing_delete_trigger(&app).await;
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert_eq!(r.status, 500, "{}", r.body);
        assert_eq!(workspace_rows(&app, &key).await, 1, "the row is still there");
        assert!(tombstones(&app).await.is_empty(), "and no tombstone");
        assert!(files_of(peer, &key).exists(), "and nothing was destroyed");
        assert_eq!(o.call(Method::GET, &format!("/api/v1/conversations/{conv}"), None).await.status, 200);
    }
}

db_test! {
    async fn two_sweepers_at_once_destroy_each_sandbox_once(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let who = caller(&app, &o.org_id).await;
        let mut keys = Vec::new();
        let mut now = 0;
        for _ in 0..6 {
            let (conv, key) = o.conversation_with_files(&agent).await;
            let (_, _, at) = removal::delete_conversation_rows(&app.state, &who, &conv).await.expect("delete");
            now = now.max(at);
            keys.push(key);
        }
        let (a, b) = tokio::join!(sweep::sweep(&app.state, now), sweep::sweep(&app.state, now));
        let (a, b) = (a.expect("sweep a"), b.expect("sweep b"));
        assert_eq!(a.destroyed + b.destroyed, 6, "{a:?} {b:?}");
        assert_eq!(a.claimed + b.claimed, 6, "each tombstone claimed once: {a:?} {b:?}");
        assert!(a.destroyed_ids.iter().all(|id| !b.destroyed_ids.contains(id)));
        assert!(tombstones(&app).await.is_empty());
        let log = std::fs::read_to_string(&peer.log_path).expect("log");
        for key in &keys {
            assert_eq!(log.matches(&format!("DELETE /sessions/{key}?purge=true")).count(), 1, "{key}");
            assert!(!files_of(peer, key).exists());
        }
    }
}

db_test! {
    async fn a_switched_off_connection_still_gets_its_sandboxes_destroyed_and_a_missing_key_keeps_the_tombstone(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let connection = o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (conv, key) = o.conversation_with_files(&agent).await;
        let (conv2, key2) = o.conversation_with_files(&agent).await;
        let r = o.call(Method::PATCH, &format!("/api/v1/sandbox-connections/{connection}"), Some(json!({"is_enabled": false}))).await;
        assert_eq!(r.status, 200, "{}", r.body);

        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert_eq!(r.json()["destroyed"], 1, "{}", r.body);
        assert!(!files_of(peer, &key).exists());

        // The key is gone (a row changed behind the product's back): nothing is sent, the
        // tombstone stays and says why.
        app.execute(&format!("UPDATE sandbox_connections SET credential_secret_id = NULL WHERE id = '{connection}'")).await;
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv2}"), None).await;
        assert_eq!(r.json()["pending"], 1, "{}", r.body);
        let t = tombstones(&app).await;
        let error = t[0].2.clone().expect("error");
        assert!(error.starts_with("The connection has no key in the vault"), "{error}");
        assert!(files_of(peer, &key2).exists());
    }
}

db_test! {
    async fn a_connection_with_sandboxes_left_is_refused_then_deleted_on_confirmation_with_the_count_audited(app: TestApp) {
        let mut peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        let connection = o.connect(&peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (conv, _) = o.conversation_with_files(&agent).await;
        let (_live, _) = o.conversation_with_files(&agent).await;
        // The agent names the connection only as the default: it is not pinned.
        peer.stop_now();
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert_eq!(r.json()["pending"], 1, "{}", r.body);

        let path = format!("/api/v1/sandbox-connections/{connection}");
        let r = o.call(Method::DELETE, &path, None).await;
        let p = r.problem(409);
        let detail = p["detail"].as_str().expect("detail");
        assert!(detail.starts_with("2 sandboxes may still run at this host (1 pending removal, 1 held by workspaces)"), "{detail}");
        assert!(detail.contains("confirming the count of 2"), "{detail}");
        // A stale count is refused like none.
        assert_eq!(o.call(Method::DELETE, &format!("{path}?forget_sandboxes=1"), None).await.status, 409);
        assert_eq!(o.call(Method::DELETE, &format!("{path}?forget_sandboxes=abc"), None).await.status.as_u16() / 100, 4);
        // The dialog repeats the count.
        let dialog = app.web.get(&format!("/sandboxes/{connection}/delete")).await;
        let text = dialog.select_text("#delete-sandboxes-left").expect("the dialog says so");
        assert!(text.contains("2 sandboxes may still run"), "{text}");
        assert_eq!(dialog.select_attr("#forget-sandboxes", "pattern").as_deref(), Some("2"));

        let r = o.call(Method::DELETE, &format!("{path}?forget_sandboxes=2"), None).await;
        assert_eq!(r.status, 204, "{}", r.body);
        assert!(tombstones(&app).await.is_empty(), "the tombstones are forgotten");
        let events = o.call(Method::GET, "/api/v1/audit-events?event=connection.deleted", None).await.json();
        let detail = events["items"][0]["detail"].as_str().unwrap_or_default().to_string();
        assert!(detail.contains("confirmed with 2 sandboxes that may still run there: 1 pending removal forgotten, 1 held by workspaces"), "{events}");
    }
}

db_test! {
    async fn deleting_an_agent_removes_its_workspaces_of_every_scope(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("shared", "agent")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let talker = o.agent(service_agent("talker", "conversation")).await;
        let (_, other_key) = o.conversation_with_files(&talker).await;

        let operator = app.web.bearer(&o.token, Method::GET, "/api/v1/me", None).await;
        assert_eq!(operator.status, 200);
        let r = o.call(Method::DELETE, &format!("/api/v1/agents/{agent}"), None).await;
        assert_eq!(r.json(), json!({"workspaces": 1, "sandboxes": 1, "destroyed": 1, "pending": 0}), "{}", r.body);
        assert!(!files_of(peer, &key).exists());
        assert!(files_of(peer, &other_key).exists(), "another agent's workspace stays");
        assert_eq!(o.call(Method::GET, &format!("/api/v1/agents/{agent}"), None).await.status, 404);
        let value: Value = o.call(Method::GET, "/api/v1/audit-events?event=agent.deleted", None).await.json();
        assert_eq!(value["items"][0]["target"], "shared", "{value}");
    }
}

/// Opens session `id` for `tenant` on `peer` directly, as a crash between open and our row's
/// commit would leave it.
async fn open_by_hand(peer: &Peer, id: &str, tenant: &str) {
    let body = json!({"session_id": id, "tenant": tenant, "reuse": true});
    let r = peer.request(Method::POST, "/sessions").json(&body).send().await.expect("open");
    assert!(r.status().is_success(), "{}", r.text().await.unwrap_or_default());
}

fn hex8(id: &str) -> String {
    id.replace('-', "")[..8].to_string()
}

// sandboxd only: an orphan is known by its tenant and session name (Daytona's by our labels,
// daytona_deletes.rs).
db_test! {
    async fn orphans_of_this_organization_are_marked_listed_and_purged_and_no_other_session_is_touched(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let connection = o.connect(peer).await;
        let agent = o.agent(service_agent("talker", "conversation")).await;
        let (_, known) = o.conversation_with_files(&agent).await;
        let orphan = format!("xc-{}-{}-{}", hex8(&o.org_id), hex8(&connection), uuid::Uuid::new_v4().simple());
        open_by_hand(peer, &orphan, &o.org_id).await;
        // Ours by tenant, but not a name this platform builds: not touched.
        let by_hand = format!("hand-{}", uuid::Uuid::new_v4().simple());
        open_by_hand(peer, &by_hand, &o.org_id).await;
        // Another tenant's session with a name like ours: never touched.
        let foreign_tenant = uuid::Uuid::new_v4().to_string();
        let foreign = format!("xc-{}-{}-{}", hex8(&o.org_id), hex8(&connection), uuid::Uuid::new_v4().simple());
        open_by_hand(peer, &foreign, &foreign_tenant).await;

        let page = app.web.get("/sandboxes/running").await;
        assert_eq!(page.status, 200);
        // Just opened: not idle for ten minutes yet, so not shown as an orphan either (the tab
        // decides as the purge does; destroy_race.rs marks one with no minimum age).
        assert_eq!(page.select_all(&format!("tr[data-session-id='{orphan}']")).len(), 1, "{}", page.body);
        assert!(page.select_all(&format!("tr[data-session-id='{orphan}'] .orphaned")).is_empty(), "{}", page.body);
        assert!(page.select_all(&format!("tr[data-session-id='{known}'] .orphaned")).is_empty());
        assert!(page.select_all(&format!("tr[data-session-id='{by_hand}'] .orphaned")).is_empty());
        assert!(!page.body.contains(&foreign), "another tenant's session is not shown");

        // Just opened: not idle for ten minutes yet, so not proven dead.
        let found = agenticos::sandbox::running::orphans::everywhere(&app.state).await.expect("orphans");
        assert!(found.orphans.is_empty(), "{:?}", found.orphans);
        // Idle for eleven minutes (the host's idle time on a clock eleven minutes on).
        let later = agenticos::db::now_ms() + 11 * MINUTE;
        let found = agenticos::sandbox::running::orphans::everywhere_at(&app.state, later).await.expect("orphans");
        let ids: Vec<&str> = found.orphans.iter().map(|o| o.session_id.as_str()).collect();
        assert_eq!(ids, vec![orphan.as_str()]);
        let done = agenticos::sandbox::running::orphans::purge(&app.state, &found.orphans).await.expect("purge");
        assert_eq!((done.purged, done.spared.len(), done.problems.len()), (1, 0, 0), "{done:?}");
        let left: Vec<String> = o.sessions_on(peer).await.iter().filter_map(|s| s["session_id"].as_str().map(String::from)).collect();
        assert!(!left.contains(&orphan) && left.contains(&known) && left.contains(&by_hand), "{left:?}");
        let events = o.call(Method::GET, "/api/v1/audit-events?event=sandbox.orphans_purged", None).await.json();
        assert_eq!(events["items"][0]["target"], orphan.as_str(), "{events}");
        // The foreign tenant's session is still there.
        let all = peer.request(Method::GET, "/sessions").send().await.expect("sessions").text().await.expect("text");
        assert!(all.contains(&foreign));
    }
}

db_test! {
    async fn a_finished_run_whose_purge_fails_leaves_a_tombstone_the_sweep_destroys(app: TestApp) {
        let mut peer = Peer::start(PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("once", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        peer.stop_now();
        o.finish(&run).await;
        let reasons = app.scalar_strings("SELECT reason FROM sandbox_tombstones").await;
        assert_eq!(reasons, vec!["run_finished".to_string()]);
        peer.start_again().await.expect("the peer starts again");
        let report = sweep::sweep(&app.state, agenticos::db::now_ms()).await.expect("sweep");
        assert_eq!(report.destroyed, 1, "{}", peer.log_tail(20));
        assert!(!files_of(&peer, &key).exists());
        assert!(tombstones(&app).await.is_empty());
    }
}

db_test! {
    async fn a_member_who_leaves_takes_their_user_workspaces_with_them(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        app.member_with_role("leaver@example.com", "member").await;
        let members = o.call(Method::GET, "/api/v1/members", None).await.json();
        let member = members.as_array().expect("members").iter().find(|m| m["email"] == "leaver@example.com").expect("member").clone();
        let owner = members.as_array().expect("members").iter().find(|m| m["email"] != "leaver@example.com").expect("owner").clone();
        let agent = o.agent(service_agent("mine", "user")).await;
        let mut keys = Vec::new();
        for who in [&member, &owner] {
            let run = o.run(&agent, None, json!({"user_id": who["user_id"]})).await;
            assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
            keys.push(o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string());
        }
        let r = o.call(Method::DELETE, &format!("/api/v1/members/{}", member["id"].as_str().expect("id")), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        // The answer says what went, as every delete's does.
        let removed = r.json();
        assert_eq!((removed["workspaces"].as_u64(), removed["sandboxes"].as_u64()), (Some(1), Some(1)), "{removed}");
        assert_eq!((removed["destroyed"].as_u64(), removed["pending"].as_u64()), (Some(1), Some(0)), "{removed}");
        assert!(!files_of(peer, &keys[0]).exists(), "the leaver's files are purged");
        assert_eq!(workspace_rows(&app, &keys[0]).await, 0);
        assert!(files_of(peer, &keys[1]).exists(), "the owner's stay");
        assert_eq!(workspace_rows(&app, &keys[1]).await, 1);
        assert!(tombstones(&app).await.is_empty());
    }
}

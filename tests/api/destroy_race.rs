//! The destroys of a known session (a tombstone's, the Running tab's "Close and delete files")
//! and an open of the same name (issue 45), against the real sandboxd peer on SQLite and
//! PostgreSQL (the Running tab's delete on each host kind, the Daytona fake too: `host_test!`): an open held between its host call and its row (`AppState::open_hold`, no
//! sleeping) while the tombstone sweep or the Running tab's delete runs. Nothing a live workspace
//! opens or uses is destroyed; a tombstone whose session a live workspace re-opened by its name
//! is retired, not destroyed. And the Running tab marks an orphan only as the purge decides one.

use reqwest::Method;
use serde_json::json;

use agenticos::sandbox::hosts::kind::{ConnectionKind, Placement};
use agenticos::sandbox::tombstones::sweep;
use agenticos::sandbox::workspaces::claims::{self, Destroy};
use agenticos::sandbox::workspaces::key::{session_key, Subject};
use agenticos::vocabulary::scope::Scope;

use crate::helpers::TestApp;
use crate::peer::{self, Peer};
use crate::support::{service_agent, Org};
use crate::{db_test, host_test};

const MINUTE: i64 = 60_000;

fn on_host(sessions: &[serde_json::Value], id: &str) -> bool {
    sessions.iter().any(|s| s["session_id"] == id)
}

/// A tombstone of `org_id` naming `key` on `connection`, due: what deleting a workspace of that
/// name leaves while its destroy is pending (a member removed, a channel's last conversation
/// deleted; the person or the channel comes back, and a new workspace has the same key).
async fn tombstone_for(app: &TestApp, org_id: &str, connection: &str, key: &str) {
    app.execute(&format!(
        "INSERT INTO sandbox_tombstones (id, organization_id, connection_id, session_key, session_id, reason, \
         attempts, next_attempt_at, created_at) VALUES ('{}', '{org_id}', '{connection}', '{key}', '{key}', \
         'member_removed', 0, 1, 1)",
        uuid::Uuid::new_v4()
    ))
    .await;
}

/// Opens session `id` for `tenant` on `peer` directly, as a crash between open and our row's
/// commit would leave it.
async fn open_by_hand(peer: &Peer, id: &str, tenant: &str) {
    let body = json!({"session_id": id, "tenant": tenant, "reuse": true});
    let r = peer.request(Method::POST, "/sessions").json(&body).send().await.expect("open");
    assert!(r.status().is_success(), "{}", r.text().await.unwrap_or_default());
}

db_test! {
    async fn a_tombstone_never_destroys_a_session_a_live_workspace_is_opening_or_uses(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("keeper", "agent")).await;
        let key = session_key(Placement::Host(ConnectionKind::Sandboxd), Scope::Agent, &o.org_id, Some(&conn), Subject::Id(&agent));
        tombstone_for(&app, &o.org_id, &conn, &key).await;

        // The live workspace of that name opens it, held once the host answered.
        let held = app.state.open_hold.arm(&key);
        let run = o.run(&agent, None, json!({})).await;
        let write = o.write(&run, "kept.txt", "alive");
        tokio::pin!(write);
        tokio::select! {
            () = held.reached.notified() => {}
            r = &mut write => panic!("the write answered before its open was held: {} {}", r.status, r.body),
        }
        let now = agenticos::db::now_ms();
        let report = sweep::sweep(&app.state, now).await.expect("sweep");
        assert_eq!((report.destroyed, report.deferred, report.retired, report.failed), (0, 1, 0, 0), "{report:?}");
        assert!(on_host(&o.sessions_on(peer).await, &key), "the session is still on its host");

        held.release.notify_one();
        let r = write.await;
        assert_eq!(r.status, 204, "{}", r.body);
        assert_eq!(o.read(&run, "kept.txt").await.body, "alive");

        // Due again: the live workspace uses the session now, so the tombstone is retired and
        // nothing is destroyed.
        let report = sweep::sweep(&app.state, now + 3 * MINUTE).await.expect("sweep");
        assert_eq!((report.destroyed, report.deferred, report.retired, report.failed), (0, 0, 1, 0), "{report:?}");
        assert!(app.scalar_strings("SELECT id FROM sandbox_tombstones").await.is_empty());
        let r = o.read(&run, "kept.txt").await;
        assert_eq!((r.status.as_u16(), r.body.as_str()), (200, "alive"), "its files survived");

        // The decision itself: the workspace using it may delete it; anyone else may not.
        let ws = app.scalar_strings(&format!("SELECT id FROM sandbox_workspaces WHERE session_key = '{key}'")).await;
        let now = agenticos::db::now_ms();
        let other = claims::claim_destroy(&app.state.db, &key, &key, None, now).await.expect("claim");
        assert_eq!(other, Destroy::InUse(ws.clone()));
        let own = claims::claim_destroy(&app.state.db, &key, &key, Some(&ws[0]), now).await.expect("claim");
        assert_eq!(own, Destroy::Go);
        // Held by that destroy now: neither another destroy nor an open may take the name.
        assert_eq!(claims::claim_destroy(&app.state.db, &key, &key, Some(&ws[0]), now).await.expect("claim"), Destroy::Busy);
        let mut c = app.state.db.conn().await.expect("conn");
        assert!(!claims::claim_open(&mut c, &key, now).await.expect("open"));
        claims::release_purge(&app.state.db, &key).await.expect("release");
        assert!(claims::claim_open(&mut c, &key, now).await.expect("open"));
    }
}

host_test! {
    async fn close_and_delete_files_refuses_while_a_workspace_opens_the_session_and_deletes_after(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        let conn = host.connect(&o).await;
        let agent = o.agent(service_agent("keeper", "agent")).await;
        let key = session_key(host.placement(), Scope::Agent, &o.org_id, Some(&conn), Subject::Id(&agent));

        // The workspace's first run opens it on the host and is held once the host answered,
        // before its row uses it.
        let held = app.state.open_hold.arm(&key);
        let run = o.run(&agent, None, json!({})).await;
        let write = o.write(&run, "kept.txt", "alive");
        tokio::pin!(write);
        tokio::select! {
            () = held.reached.notified() => {}
            r = &mut write => panic!("the write answered before its open was held: {} {}", r.status, r.body),
        }
        // It is on the host and its workspace row names its key, but no row uses it yet.
        let id = host.running_id(&key);
        let delete = format!("/api/v1/sandbox-sessions/{conn}/{id}?delete_files=true");
        let r = o.call(Method::DELETE, &delete, None).await;
        assert_eq!(r.status, 409, "{}", r.body);
        let problem = r.json();
        assert!(problem["detail"].as_str().is_some_and(|d| d.contains("opening") && d.contains("nothing was deleted")), "{problem}");
        assert!(host.is_running(&key).await);

        held.release.notify_one();
        let r = write.await;
        assert_eq!(r.status, 204, "{}", r.body);
        assert_eq!(o.read(&run, "kept.txt").await.body, "alive");
        let events = o.call(Method::GET, "/api/v1/audit-events?event=sandbox_session.files_deleted", None).await.json();
        assert_eq!(events["items"], json!([]), "{events}");

        // Once the workspace uses it, deleting its files is deleting that workspace's, as asked.
        let r = o.call(Method::DELETE, &delete, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let closed = r.json();
        assert_eq!((closed["files_deleted"].as_bool(), closed["workspace"]["scope"].as_str()), (Some(true), Some("agent")), "{closed}");
        host.wait_deleted(&id).await;
        assert_eq!(host.files_of(&key).await, None);
        assert!(host.open_workspaces(&o).await.is_empty());
    }
}

db_test! {
    async fn the_running_tab_marks_no_session_an_orphan_before_it_is_idle_long_enough(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let hex8 = |id: &str| id.replace('-', "")[..8].to_string();
        let orphan = format!("xc-{}-{}-{}", hex8(&o.org_id), hex8(&conn), uuid::Uuid::new_v4().simple());
        open_by_hand(peer, &orphan, &o.org_id).await;
        // Nothing names it, but it was opened a moment ago: not proven dead, so not shown as an
        // orphan (as the purge would not list it: AGENTICOS_ORPHAN_MIN_AGE_SECONDS, 600).
        let page = app.web.get("/sandboxes/running").await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_all(&format!("tr[data-session-id='{orphan}']")).len(), 1, "{}", page.body);
        assert!(page.select_all(&format!("tr[data-session-id='{orphan}'] .orphaned")).is_empty(), "{}", page.body);
        let listed = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let s = listed["connections"][0]["sessions"].as_array().and_then(|all| all.iter().find(|s| s["session_id"] == orphan.as_str()).cloned());
        assert!(s.is_some_and(|s| s["orphaned"] == false), "{listed}");
        let found = agenticos::sandbox::running::orphans::everywhere(&app.state).await.expect("orphans");
        assert!(found.orphans.is_empty(), "{:?}", found.orphans);
    }
}

db_test! {
    async fn with_no_minimum_age_the_running_tab_marks_an_orphan_but_not_a_session_being_opened(app: TestApp)
        settings(&[("AGENTICOS_ORPHAN_MIN_AGE_SECONDS", "0")])
    {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let hex8 = |id: &str| id.replace('-', "")[..8].to_string();
        let orphan = format!("xc-{}-{}-{}", hex8(&o.org_id), hex8(&conn), uuid::Uuid::new_v4().simple());
        open_by_hand(peer, &orphan, &o.org_id).await;
        let agent = o.agent(service_agent("keeper", "agent")).await;
        let key = session_key(Placement::Host(ConnectionKind::Sandboxd), Scope::Agent, &o.org_id, Some(&conn), Subject::Id(&agent));
        let held = app.state.open_hold.arm(&key);
        let run = o.run(&agent, None, json!({})).await;
        let write = o.write(&run, "kept.txt", "alive");
        tokio::pin!(write);
        tokio::select! {
            () = held.reached.notified() => {}
            r = &mut write => panic!("the write answered before its open was held: {} {}", r.status, r.body),
        }
        let page = app.web.get("/sandboxes/running").await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_all(&format!("tr[data-session-id='{orphan}'] .orphaned")), vec!["orphaned".to_string()], "{}", page.body);
        assert_eq!(page.select_all(&format!("tr[data-session-id='{key}']")).len(), 1, "{}", page.body);
        assert!(page.select_all(&format!("tr[data-session-id='{key}'] .orphaned")).is_empty(), "{}", page.body);
        held.release.notify_one();
        assert_eq!(write.await.status, 204);
    }
}

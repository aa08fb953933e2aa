//! The Running tab names whose each session is (agent, scope in words, the person of a `user`
//! workspace, the run, its conversation) and closes sessions — keeping the files, or deleting
//! them on the host after a confirmation — through the page and the API, audited, against the real
//! sandboxd peer; only operators and above, another organization's session is a 404, and a Close
//! never sends a key anywhere but the address it is bound to.

use std::path::PathBuf;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{Resp, TestApp, OWNER_EMAIL};
use crate::peer::{self, Peer};
use crate::support::htmx::{attrs, hx_get};
use crate::support::recorder::Recorder;
use crate::support::{service_agent, Org};
use crate::{db_test, host_test};

/// The session key a run's workspace opened on the host.
async fn key_of(o: &Org<'_>, run: &str) -> String {
    let state = o.ws(run, Method::GET, "state", None).await.json();
    state["session_key"].as_str().expect("session key").to_string()
}

/// Where the host keeps a session's files.
fn files_of(peer: &Peer, key: &str) -> PathBuf {
    peer.workspace_root.join(key).join("workspace")
}

/// Whether the host still has the session open.
async fn is_open_on(peer: &Peer, key: &str) -> bool {
    let r = peer.request(Method::GET, &format!("/sessions/{key}")).send().await.expect("ask the host");
    match r.status().as_u16() {
        200 => true,
        404 => false,
        other => panic!("the host answered {other}"),
    }
}

/// (actor, target, detail) of the audit rows of `action`.
pub(crate) async fn audit(app: &TestApp, action: &str) -> Vec<(String, String, String)> {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_as("SELECT actor_label, target, detail FROM audit_events WHERE action = $1 ORDER BY created_at, seq")
        .bind(action)
        .fetch_all(&mut *c)
        .await
        .expect("audit rows")
}

fn session_path(conn: &str, key: &str, action: &str) -> String {
    format!("/sandboxes/{conn}/sessions/{key}/{action}")
}

fn api_path(conn: &str, key: &str) -> String {
    format!("/api/v1/sandbox-sessions/{conn}/{key}")
}

/// The Running tab's row of `key`.
fn row(key: &str) -> String {
    format!("tr.session[data-session-id=\"{key}\"]")
}

/// The session `key` in the API's list.
fn listed<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v["connections"]
        .as_array()?
        .iter()
        .flat_map(|h| h["sessions"].as_array().into_iter().flatten())
        .find(|s| s["session_id"] == key)
}

host_test! {
    async fn a_workspace_on_the_running_tab_names_whose_it_is_and_closes_keeping_or_deleting_its_files(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        let conn = host.connect(&o).await;
        let agent = o.agent(service_agent("report writer", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarterly report"})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.txt", "keep me").await.status, 204);
        let key = key_of(&o, &run).await;
        let kept = host.running_id(&key);
        let once = o.agent(service_agent("one-off", "run")).await;
        let run1 = o.run(&once, None, json!({})).await;
        assert_eq!(o.write(&run1, "a.txt", "x").await.status, 204);
        let key1 = key_of(&o, &run1).await;
        let ephemeral = host.running_id(&key1);

        // The page: each of ours with whose it is, the conversation linked, a Close form.
        let r = app.web.get("/sandboxes/running").await;
        assert_eq!(r.status, 200, "{}", r.body);
        let row = host.running_row(&kept);
        assert_eq!(r.select_text(&format!("{row} .agent-name")).as_deref(), Some("report writer"));
        assert_eq!(r.select_text(&format!("{row} .scope")).as_deref(), Some("whoever is in this conversation"));
        assert_eq!(r.select_attr(&format!("{row} a.conversation"), "href"), Some(format!("/conversations/{conv}")));
        assert_eq!(r.select_text(&format!("{row} a.conversation")).as_deref(), Some("Quarterly report"));
        assert_eq!(attrs(&r, &format!("{row} form"), "action"), [session_path(&conn, &kept, "close")]);
        assert_eq!(r.select_text(&format!("{} .agent-name", host.running_row(&ephemeral))).as_deref(), Some("one-off"));
        // The 10-second poll's fragment has them too.
        let f = hx_get(&app.web, "/sandboxes/running").await;
        assert!(!f.body.contains("<html") && f.select_all(&row).len() == 1, "{}", f.body);
        // The API the page uses.
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let s = host.running_listed(&v, &kept).unwrap_or_else(|| panic!("{kept} not listed: {v}"));
        assert_eq!(s["workspace"]["agent_name"], "report writer");
        assert_eq!(s["workspace"]["scope"], "conversation");
        assert_eq!(s["workspace"]["access_label"], "whoever is in this conversation");
        assert_eq!(s["workspace"]["conversation_id"], conv.as_str());
        assert!(s["workspace"]["owner_name"].is_null());
        assert!(host.running_listed(&v, &ephemeral).is_some_and(|s| s["workspace"]["agent_name"] == "one-off"), "{v}");

        // Only operators and above close; another organization finds nothing.
        let member = app.member_with_role("m@example.com", "member").await;
        member.api(Method::DELETE, &api_path(&conn, &kept), None).await.problem(403);
        assert_eq!(member.post_form(&session_path(&conn, &kept, "close"), &[]).await.status, 403);
        let b = app.other_org_user("b@example.com", "B Corp").await;
        b.api(Method::DELETE, &api_path(&conn, &kept), None).await.problem(404);
        assert_eq!(b.post_form(&session_path(&conn, &kept, "close"), &[]).await.status, 404);
        o.call(Method::DELETE, &api_path(&conn, "no-such-session"), None).await.problem(404);
        assert!(host.is_running(&key).await);
        assert!(audit(&app, "sandbox_session.closed").await.is_empty());

        // Close (the page) on a persistent scope: it stops running there, its files stay, audited.
        let r = app.web.post_form(&session_path(&conn, &kept, "close"), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/sandboxes/running"));
        assert!(!host.is_running(&key).await);
        assert_eq!(host.file(&key, "notes.txt").await.as_deref(), Some("keep me"), "Close deleted the files");
        let flash = app.web.get("/sandboxes/running").await.select_text(".flash-success").unwrap_or_default();
        assert!(flash.contains("report writer"), "{flash}");
        let rows = audit(&app, "sandbox_session.closed").await;
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].0.as_str(), rows[0].1.as_str()), (OWNER_EMAIL, kept.as_str()));
        assert!(rows[0].2.contains("report writer"), "{}", rows[0].2);
        // The conversation's next run finds the files again.
        let run2 = o.run(&agent, Some(&conv), json!({})).await;
        let read = o.read(&run2, "notes.txt").await;
        assert_eq!((read.status.as_u16(), read.body.as_str()), (200, "keep me"));
        assert_eq!(key_of(&o, &run2).await, key);

        // Close and delete files (the API): its files are gone on the host, audited, not listed.
        let r = o.call(Method::DELETE, &format!("{}?delete_files=true", api_path(&conn, &ephemeral)), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let closed = r.json();
        assert_eq!(closed["files_deleted"], true, "{closed}");
        assert_eq!(closed["workspace"]["agent_name"], "one-off");
        assert_eq!(host.files_of(&key1).await, None, "the files are still on the host");
        let rows = audit(&app, "sandbox_session.files_deleted").await;
        assert_eq!((rows.len(), rows[0].1.as_str()), (1, ephemeral.as_str()));
        host.wait_deleted(&ephemeral).await;
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        assert!(host.running_listed(&v, &ephemeral).is_none(), "a deleted one is still listed: {v}");
        assert!(!app.web.all_bodies().contains(host.secret()));
    }
}

host_test! {
    async fn every_kinds_row_links_its_activity_and_deletes_its_files_after_a_dialog(app: TestApp, host: &Host) {
        let o = Org::new(&app).await;
        let conn = host.connect(&o).await;
        let agent = o.agent(service_agent("note keeper", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Notes"})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.txt", "keep me?").await.status, 204);
        let key = key_of(&o, &run).await;
        let id = host.running_id(&key);
        let row = host.running_row(&id);

        // The row's Activity shows what was done there.
        let r = app.web.get("/sandboxes/running").await;
        let href = r.select_attr(&format!("{row} a.activity"), "href").unwrap_or_else(|| panic!("no Activity in {row}: {}", r.body));
        let a = app.web.get(&href).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(a.select_text("main").is_some_and(|t| t.contains("notes.txt")), "{href} does not show the write: {}", a.body);

        // Close and delete files: a dialog first, saying what goes and whose it is.
        let delete = session_path(&conn, &id, "delete");
        assert_eq!(r.select_attr(&format!("{row} a.session-delete"), "href"), Some(delete.clone()));
        let d = hx_get(&app.web, &delete).await;
        assert_eq!(d.status, 200, "{}", d.body);
        assert!(d.select_attr("dialog#session-delete-dialog", "data-modal").is_some(), "{}", d.body);
        let what = d.select_text("#session-delete-what").unwrap_or_default();
        assert!(what.contains("cannot be undone"), "{what}");
        let facts = d.select_text("#session-delete-session").unwrap_or_default();
        assert!(facts.contains("note keeper") && facts.contains(&key), "{facts}");
        assert_eq!(d.select_attr("#session-delete-form", "action"), Some(delete.clone()));
        assert_eq!(app.web.get(&delete).await.select_text("main #session-delete-what"), Some(what));
        assert_eq!(host.file(&key, "notes.txt").await.as_deref(), Some("keep me?"), "asking deleted the files");
        let b = app.other_org_user("b@example.com", "B Corp").await;
        assert_eq!(hx_get(&b, &delete).await.status, 404);

        // Confirmed: the files are gone on the host, audited under the row's id.
        let r = app.web.post_form(&delete, &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        host.wait_deleted(&id).await;
        assert_eq!(host.files_of(&key).await, None, "the files are still on the host");
        let rows = audit(&app, "sandbox_session.files_deleted").await;
        assert_eq!((rows.len(), rows[0].1.as_str()), (1, id.as_str()), "{rows:?}");
        assert!(rows[0].2.contains("note keeper"), "{}", rows[0].2);
    }
}

db_test! {
    async fn a_sandboxd_session_shows_its_key_run_and_idle_time_and_deleting_its_files_opens_it_empty(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("report writer", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarterly report"})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.txt", "keep me").await.status, 204);
        let key = key_of(&o, &run).await;
        assert!(files_of(peer, &key).join("notes.txt").is_file());

        // The row shows the key on hover, the run, when it closes if idle, and a delete dialog.
        let r = app.web.get("/sandboxes/running").await;
        assert_eq!(r.status, 200, "{}", r.body);
        let row = row(&key);
        assert_eq!(r.select_attr(&format!("{row} .agent"), "title"), Some(format!("Session key: {key}")));
        assert_eq!(r.select_attr(&format!("{row} .run span"), "title"), Some(format!("Run {run}")));
        assert_eq!(r.select_text(&format!("{row} .run")).as_deref(), Some(&run[..8]));
        assert!(r.select_text(&format!("{row} .closes-in")).is_some_and(|t| t.ends_with("min")));
        assert_eq!(r.select_attr(&format!("{row} a.session-delete"), "href"), Some(session_path(&conn, &key, "delete")));
        assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));

        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let s = listed(&v, &key).unwrap_or_else(|| panic!("{key} not listed: {v}"));
        assert_eq!(s["workspace"]["run_id"], run.as_str());
        assert!(s["closes_in_seconds"].as_i64().is_some_and(|n| n > 0));
        let events = o.call(Method::GET, &format!("{}/events", api_path(&conn, &key)), None).await.json();
        assert_eq!(events["session"]["workspace"]["agent_name"], "report writer", "{events}");
        let page = app.web.get(&session_path(&conn, &key, "activity")).await;
        assert_eq!(page.select_text("main h1").as_deref(), Some("Activity of report writer"));
        assert_eq!(page.select_attr("#activity-session a.conversation", "href"), Some(format!("/conversations/{conv}")));

        // Close (the page): the host forgets the session, the files stay, in these words.
        let r = app.web.post_form(&session_path(&conn, &key, "close"), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert!(files_of(peer, &key).join("notes.txt").is_file(), "Close deleted the files");
        let flash = app.web.get("/sandboxes/running").await;
        let words = flash.select_text(".flash-success").unwrap_or_default();
        assert!(words.contains("Closed the session of report writer") && words.contains("Its files stay"), "{words}");
        let rows = audit(&app, "sandbox_session.closed").await;
        assert!(rows[0].2.contains("its files stay"), "{}", rows[0].2);

        // The next run of the conversation is the one named.
        let run2 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.read(&run2, "notes.txt").await.body, "keep me");
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        assert_eq!(listed(&v, &key).map(|s| s["workspace"]["run_id"].clone()), Some(json!(run2)), "the latest run is named");

        // A `delete_files` that is not a boolean is refused, naming it; nothing is closed.
        let r = o.call(Method::DELETE, &format!("{}?delete_files=maybe", api_path(&conn, &key)), None).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["delete_files"]);
        assert!(is_open_on(peer, &key).await);

        // Close and delete files (the API) of a conversation's session: the host forgets the
        // session and deletes its folder.
        let r = o.call(Method::DELETE, &format!("{}?delete_files=true", api_path(&conn, &key)), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let closed = r.json();
        assert_eq!((closed["files_deleted"].as_bool(), closed["session_id"].as_str()), (Some(true), Some(key.as_str())));
        assert!(!is_open_on(peer, &key).await);
        assert!(!files_of(peer, &key).exists(), "the files are still on the host");
        let rows = audit(&app, "sandbox_session.files_deleted").await;
        assert_eq!(rows.len(), 1);
        assert!(rows[0].0.starts_with(OWNER_EMAIL) && rows[0].0.contains("(token runtime)"), "{}", rows[0].0);
        assert!(rows[0].2.contains("its files were deleted on the host"), "{}", rows[0].2);

        // The conversation's next run starts with empty files, by name: not "lost".
        let run3 = o.run(&agent, Some(&conv), json!({})).await;
        let read = o.read(&run3, "notes.txt").await;
        assert_eq!(read.status, 404, "{}", read.body);
        assert_eq!(o.ws(&run3, Method::GET, "state", None).await.json()["state"], "open");
        assert!(is_open_on(peer, &key).await, "the next run opened it again by name");

        // Closing a session that is gone: 404, page and API.
        assert!(o.call(Method::DELETE, &api_path(&conn, "never-opened"), None).await.problem(404)["detail"].is_string());
        let r = app.web.post_form(&session_path(&conn, "never-opened", "close"), &[]).await;
        assert_eq!(r.status, 404);
        assert!(r.body.contains("no longer open on its host"), "{}", r.body);
        assert!(!app.web.all_bodies().contains(&peer.token));
    }
}

db_test! {
    async fn the_person_of_a_user_workspace_is_plain_text_and_the_delete_dialog_says_what_goes(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("personal assistant", "user")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "diary.txt", "mine").await.status, 204);
        let key = key_of(&o, &run).await;

        let r = app.web.get("/sandboxes/running").await;
        let row = row(&key);
        assert_eq!(r.select_text(&format!("{row} .owner")).as_deref(), Some(OWNER_EMAIL));
        assert!(r.select_text(&format!("{row} .scope")).is_some_and(|t| t.starts_with("one person, across their conversations")));
        assert!(r.select_all(&format!("{row} .scope a")).is_empty(), "the person is a link");
        assert!(r.select_all(&format!("{row} a.conversation")).is_empty(), "a run without a conversation links none");

        // The confirmation, as htmx asks for it: a modal dialog saying what is removed and where.
        let d = hx_get(&app.web, &session_path(&conn, &key, "delete")).await;
        assert_eq!(d.status, 200, "{}", d.body);
        assert!(!d.body.contains("<html"));
        assert!(d.select_attr("dialog#session-delete-dialog", "data-modal").is_some());
        let what = d.select_text("#session-delete-what").unwrap_or_default();
        let host_name = format!("peer-{}", peer.port());
        assert!(what.contains(&host_name) && what.contains("/workspace") && what.contains("cannot be undone"), "{what}");
        let facts = d.select_text("#session-delete-session").unwrap_or_default();
        assert!(facts.contains("personal assistant") && facts.contains(OWNER_EMAIL) && facts.contains(&key), "{facts}");
        assert_eq!(d.select_attr("#session-delete-form", "action"), Some(session_path(&conn, &key, "delete")));
        assert_eq!(d.select_attr("#session-delete-form a[data-close-dialog]", "href").as_deref(), Some("/sandboxes/running"));
        // Without htmx it is a page of its own.
        let p = app.web.get(&session_path(&conn, &key, "delete")).await;
        assert_eq!(p.status, 200);
        assert!(p.select_text("main #session-delete-what").is_some() && p.select_text("nav.sidebar-nav").is_some());
        assert!(is_open_on(peer, &key).await, "asking closed it");

        let r = app.web.post_form(&session_path(&conn, &key, "delete"), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert!(!is_open_on(peer, &key).await);
        assert!(!files_of(peer, &key).exists());
        let rows = audit(&app, "sandbox_session.files_deleted").await;
        assert_eq!(rows.len(), 1);
        assert!(rows[0].2.contains("personal assistant") && rows[0].2.contains(OWNER_EMAIL), "{}", rows[0].2);
        let flash = app.web.get("/sandboxes/running").await.select_text(".flash-success").unwrap_or_default();
        assert!(flash.contains("deleted its files"), "{flash}");
    }
}

db_test! {
    async fn only_operators_close_and_another_organizations_session_is_not_found(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("coder", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.exec(&run, "true").await.status, 200);
        let key = key_of(&o, &run).await;

        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(member.post_form(&session_path(&conn, &key, "close"), &[]).await.status, 403);
        assert_eq!(member.post_form(&session_path(&conn, &key, "delete"), &[]).await.status, 403);
        assert_eq!(member.get(&session_path(&conn, &key, "delete")).await.status, 403);
        member.api(Method::DELETE, &api_path(&conn, &key), None).await.problem(403);
        assert!(is_open_on(peer, &key).await);

        let b = app.other_org_user("b@example.com", "B Corp").await;
        b.api(Method::DELETE, &api_path(&conn, &key), None).await.problem(404);
        assert_eq!(b.post_form(&session_path(&conn, &key, "delete"), &[]).await.status, 404);
        assert_eq!(b.get(&session_path(&conn, &key, "delete")).await.status, 404);
        // Even on a connection of its own to the same host, another tenant's session is not its own.
        let b_token = b.create_token_in_page("b", "owner").await;
        let body = json!({"name": "same host", "address": peer.url, "new_key": peer.token});
        let b_conn = b.bearer(&b_token, Method::POST, "/api/v1/sandbox-connections", Some(body)).await.json();
        let b_conn = b_conn["id"].as_str().expect("id");
        b.bearer(&b_token, Method::DELETE, &api_path(b_conn, &key), None).await.problem(404);
        assert!(is_open_on(peer, &key).await);
        assert!(audit(&app, "sandbox_session.closed").await.is_empty());

        // An operator may.
        let operator = app.member_with_role("op@example.com", "operator").await;
        let r = operator.api(Method::DELETE, &api_path(&conn, &key), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["files_deleted"], false);
        assert!(!is_open_on(peer, &key).await);
        assert_eq!(audit(&app, "sandbox_session.closed").await[0].0, "op@example.com");
    }
}

db_test! {
    async fn a_close_never_sends_a_key_where_it_is_not_bound(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let conn = o.connect(peer).await;
        let agent = o.agent(service_agent("coder", "agent")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.exec(&run, "true").await.status, 200);
        let key = key_of(&o, &run).await;

        // The connection's address changed behind the product's back; its key stayed bound to the peer.
        let evil = Recorder::start().await;
        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query("UPDATE sandbox_connections SET address = $1, updated_at = updated_at + 1 WHERE id = $2")
            .bind(&evil.url)
            .bind(&conn)
            .execute(&mut *c)
            .await
            .expect("moved");
        drop(c);
        let p = o.call(Method::DELETE, &format!("{}?delete_files=true", api_path(&conn, &key)), None).await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("no request was sent")), "{p}");
        let r: Resp = app.web.post_form(&session_path(&conn, &key, "close"), &[]).await;
        assert_eq!(r.status, 409, "{}", r.body);
        assert!(evil.requests().is_empty(), "a request reached the moved address: {:?}", evil.requests());
        assert!(is_open_on(peer, &key).await);
        assert!(files_of(peer, &key).exists());
        assert!(audit(&app, "sandbox_session.files_deleted").await.is_empty());
        assert!(!app.web.all_bodies().contains(&peer.token));
    }
}

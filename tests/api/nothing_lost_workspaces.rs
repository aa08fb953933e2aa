//! Nothing deleted by mistake, nothing written by a look (issue 25), on SQLite and PostgreSQL: a
//! channel's shared workspace belongs to the channel, not to the thread that opened it, and every
//! member of any of its threads sees it in Documents; viewing a conversation page writes no row.

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::TestApp;
use crate::peer;
use crate::support::documents::workspaces_seen_by;
use crate::support::{service_agent, Org};

async fn workspace_ids(app: &TestApp) -> Vec<String> {
    app.scalar_strings("SELECT id FROM sandbox_workspaces ORDER BY id").await
}

async fn user_id(app: &TestApp, email: &str) -> String {
    app.scalar_strings(&format!("SELECT id FROM users WHERE email = '{email}'"))
        .await
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no user {email}"))
}

db_test! {
    async fn a_channel_workspace_stays_while_another_thread_of_the_channel_exists_and_goes_with_the_last(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("channel-helper", "channel")).await;
        let first = o.conversation(&agent, json!({"title": "thread one", "channel_key": "slack:C1"})).await;
        let second = o.conversation(&agent, json!({"title": "thread two", "channel_key": "slack:C1"})).await;
        // Another channel of the same agent has a workspace of its own, untouched throughout.
        let elsewhere = o.conversation(&agent, json!({"title": "elsewhere", "channel_key": "slack:C2"})).await;

        let r1 = o.run(&agent, Some(&first), json!({})).await;
        assert_eq!(o.write(&r1, "shared.txt", "for the whole channel").await.status, 204);
        let state = o.ws(&r1, Method::GET, "state", None).await.json();
        let key = state["session_key"].as_str().expect("key").to_string();
        let workspace = state["workspace_id"].as_str().expect("id").to_string();
        o.finish(&r1).await;
        let r2 = o.run(&agent, Some(&second), json!({})).await;
        assert_eq!(o.read(&r2, "shared.txt").await.body, "for the whole channel", "the threads share it");
        o.finish(&r2).await;
        let r3 = o.run(&agent, Some(&elsewhere), json!({})).await;
        assert_eq!(o.write(&r3, "other.txt", "x").await.status, 204);
        let other_key = o.ws(&r3, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let files = |k: &str| peer.workspace_root.join(k);

        // The confirmation of the first thread's delete counts nothing of the channel's.
        let confirm = app.web.get(&format!("/conversations/{first}/delete")).await;
        assert_eq!(confirm.status, 200, "{}", confirm.body);
        let what = confirm.select_text("#conversation-delete-what").expect("what goes");
        assert!(what.contains("0 workspaces") && !what.contains("destroyed"), "{what}");

        // Deleting the thread that opened it leaves the channel's workspace, its sandbox and files.
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{first}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json(), json!({"workspaces": 0, "sandboxes": 0, "destroyed": 0, "pending": 0}), "{}", r.body);
        assert!(workspace_ids(&app).await.contains(&workspace), "the shared workspace stays");
        assert!(files(&key).exists(), "its files stay at the host");
        assert!(o.sessions_on(peer).await.iter().any(|s| s["session_id"] == key.as_str()), "its session too");
        // It is shown under the thread that is left, and the next run there still reads it.
        let shown = o.call(Method::GET, &format!("/api/v1/documents/workspaces/{workspace}"), None).await;
        assert_eq!(shown.status, 200, "{}", shown.body);
        assert_eq!(shown.json()["workspace"]["conversation_id"], second.as_str(), "{}", shown.body);
        let r4 = o.run(&agent, Some(&second), json!({})).await;
        assert_eq!(o.read(&r4, "shared.txt").await.body, "for the whole channel");
        o.finish(&r4).await;

        // The last thread takes it: the row goes and its sandbox is destroyed at the host.
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{second}"), None).await;
        assert_eq!(r.json(), json!({"workspaces": 1, "sandboxes": 1, "destroyed": 1, "pending": 0}), "{}", r.body);
        assert!(!workspace_ids(&app).await.contains(&workspace), "the last thread took it");
        assert!(!files(&key).exists(), "its files were purged");
        assert!(o.sessions_on(peer).await.iter().all(|s| s["session_id"] != key.as_str()));
        let tombstones = app.count("sandbox_tombstones").await;
        assert_eq!(tombstones, 0, "destroyed at once, so its tombstone went");
        assert!(files(&other_key).exists(), "another channel's workspace stays");
    }
}

db_test! {
    async fn the_last_thread_of_a_channel_whose_host_is_down_leaves_a_tombstone_in_the_same_delete(app: TestApp) {
        let mut peer = crate::peer::Peer::start(crate::peer::PeerOptions::default()).await.expect("peer");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("channel-keeper", "channel")).await;
        let first = o.conversation(&agent, json!({"channel_key": "teams:T9"})).await;
        let second = o.conversation(&agent, json!({"channel_key": "teams:T9"})).await;
        let r1 = o.run(&agent, Some(&first), json!({})).await;
        assert_eq!(o.write(&r1, "a.txt", "a").await.status, 204);
        o.finish(&r1).await;
        peer.stop_now();
        // The thread that opened it goes first and leaves it (the host, down, is not asked);
        // the last one takes it and, the host being down, leaves its tombstone for the sweep.
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{first}"), None).await;
        assert_eq!(r.json(), json!({"workspaces": 0, "sandboxes": 0, "destroyed": 0, "pending": 0}), "{}", r.body);
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{second}"), None).await;
        assert_eq!(r.json(), json!({"workspaces": 1, "sandboxes": 1, "destroyed": 0, "pending": 1}), "{}", r.body);
        assert!(workspace_ids(&app).await.is_empty());
        assert_eq!(app.count("sandbox_tombstones").await, 1);
    }
}

db_test! {
    async fn every_member_of_any_thread_of_a_channel_sees_its_workspace_in_documents(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let alice = app.member_with_role("alice@example.com", "member").await;
        let bob = app.member_with_role("bob@example.com", "member").await;
        let carol = app.member_with_role("carol@example.com", "member").await;
        let (alice_id, bob_id) = (user_id(&app, "alice@example.com").await, user_id(&app, "bob@example.com").await);
        let carol_id = user_id(&app, "carol@example.com").await;
        let agent = o.agent(service_agent("channel-notes", "channel")).await;
        let first = o.conversation(&agent, json!({"title": "alice's thread", "channel_key": "slack:C7", "member_user_ids": [alice_id]})).await;
        let second = o.conversation(&agent, json!({"title": "bob's thread", "channel_key": "slack:C7", "member_user_ids": [bob_id]})).await;
        // Carol talks to the same agent in another channel only.
        let _ = o.conversation(&agent, json!({"title": "carol's", "channel_key": "slack:C8", "member_user_ids": [carol_id]})).await;
        let run = o.run(&agent, Some(&first), json!({})).await;
        assert_eq!(o.write(&run, "minutes.md", "decided").await.status, 204);
        let workspace = o.ws(&run, Method::GET, "state", None).await.json()["workspace_id"].as_str().expect("id").to_string();

        assert_eq!(workspaces_seen_by(&alice).await, std::slice::from_ref(&workspace));
        assert_eq!(workspaces_seen_by(&bob).await, std::slice::from_ref(&workspace), "bob's thread shares the channel's workspace");
        assert!(workspaces_seen_by(&carol).await.is_empty(), "another channel's member sees none of it");
        let one = format!("/api/v1/documents/workspaces/{workspace}");
        let file = bob.api(Method::GET, &format!("{one}/file?path=minutes.md"), None).await;
        assert_eq!((file.status.as_u16(), file.body.as_str()), (200, "decided"));
        carol.api(Method::GET, &one, None).await.problem(404);
        // Bob's conversation page shows the channel's files too.
        let page = bob.get(&format!("/conversations/{second}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.body.contains("minutes.md"), "the thread's page shows the channel's files: {}", page.body);

        // Alice's thread goes: bob still sees the workspace, alice (in no thread left) no longer.
        let r = o.call(Method::DELETE, &format!("/api/v1/conversations/{first}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(workspaces_seen_by(&bob).await, std::slice::from_ref(&workspace));
        assert!(workspaces_seen_by(&alice).await.is_empty());
        let value: Value = bob.api(Method::GET, &one, None).await.json();
        assert_eq!(value["workspace"]["title"], "bob's thread", "{value}");
    }
}

db_test! {
    async fn viewing_a_conversation_page_writes_no_workspace_row(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        for (name, backend) in [("looked-at", "service"), ("looked-at-doc", "state")] {
            let body = if backend == "service" {
                service_agent(name, "conversation")
            } else {
                json!({"name": name, "backend": "state", "scope": "conversation"})
            };
            let agent = o.agent(body).await;
            let conv = o.conversation(&agent, json!({})).await;
            let _run = o.run(&agent, Some(&conv), json!({})).await;
            let before = workspace_ids(&app).await;
            let page = app.web.get(&format!("/conversations/{conv}")).await;
            assert_eq!(page.status, 200, "{}", page.body);
            let url = app.web.url(&format!("/conversations/{conv}/workspace"));
            let fragment = app.web.send(app.web.http.get(url).header("HX-Request", "true")).await;
            assert_eq!(fragment.status, 200, "{}", fragment.body);
            assert_eq!(workspace_ids(&app).await, before, "{backend}: a look wrote a workspace row");
            // The page still says what the workspace will be: not opened yet, shared with whom.
            let status = page.select_attr("#conversation-workspace", "data-state");
            assert_eq!(status.as_deref(), Some("not_opened"), "{backend}: {}", page.body);
        }
    }
}

//! What only Daytona's deletes do, against the FAKE Daytona (tests/peer/daytona/; not Daytona): a
//! key Daytona refuses keeps the tombstone and says so; orphans are only this deployment's and this
//! organization's labelled sandboxes older than 10 minutes that nothing here names, also on a
//! Daytona before v0.180. A host that is down at a delete, its tombstone retried until it is back,
//! is deletes.rs's, run on every kind by `host_test!`. The sweep's clock is driven by the test,
//! never slept on.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::json;

use agenticos::sandbox::hosts::daytona::client::{CreateSandbox, DaytonaClient};
use agenticos::sandbox::tombstones::sweep;

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::deletes::tombstones;
use crate::helpers::TestApp;
use crate::support::Org;

const MINUTE: i64 = 60_000;

/// A sandbox named `name` with `labels`, created at the fake by Daytona's API itself; its id.
async fn labelled_sandbox_at(fake: &FakeDaytona, name: &str, labels: BTreeMap<String, String>) -> String {
    let http = DaytonaClient::default_http().expect("http");
    let url = url::Url::parse(&fake.api_url).expect("url");
    let client = DaytonaClient::new(http, url, fake.api_key.clone().into()).expect("client");
    let create = CreateSandbox { name: Some(name.into()), labels, ..CreateSandbox::default() };
    client.create_sandbox(&create).await.expect("a sandbox").id
}

/// The fake's state of sandbox `id` (destroyed ones too).
fn state_at(fake: &FakeDaytona, id: &str) -> String {
    let all = fake.sandboxes();
    let sb = all.iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("no sandbox {id}: {all:?}"));
    sb["state"].as_str().unwrap_or_default().to_string()
}

/// A Daytona connection at `fake` with `key` (saved even when Daytona refuses it), a `state`
/// agent, a sandbox at the fake and the workspace row a Daytona workspace of that agent holds (its
/// session key is the sandbox's name, its reference the sandbox's id): (agent id, sandbox id).
async fn agent_with_a_sandbox(app: &TestApp, o: &Org<'_>, fake: &FakeDaytona, key: &str) -> (String, String) {
    let conn = o
        .call(
            Method::POST,
            "/api/v1/sandbox-connections",
            Some(json!({"name": "daytona", "kind": "daytona", "address": fake.api_url, "new_key": key, "save_anyway": true})),
        )
        .await;
    assert_eq!(conn.status, 201, "{}", conn.body);
    let conn_id = conn.json()["id"].as_str().expect("id").to_string();
    let agent = o.agent(json!({"name": "doc", "backend": "state", "scope": "agent"})).await;
    let name = format!("xa-{}-{}", &o.org_id[..8], uuid::Uuid::new_v4().simple());
    let mut labels = agenticos::sandbox::hosts::daytona::connections::owner_labels(&app.state, &o.org_id);
    labels.insert(agenticos::sandbox::hosts::daytona::connections::CONNECTION_LABEL.into(), conn_id.clone());
    let id = labelled_sandbox_at(fake, &name, labels).await;
    let now = agenticos::db::now_ms();
    app.execute(&format!(
        "INSERT INTO sandbox_workspaces (id, organization_id, session_key, backend, scope, connection_id, agent_id, \
         session_ref, state, created_at, updated_at) VALUES ('{}', '{}', '{name}', 'daytona', 'agent', '{conn_id}', \
         '{agent}', '{id}', 'open', {now}, {now})",
        uuid::Uuid::new_v4(),
        o.org_id
    ))
    .await;
    (agent, id)
}

// Daytona only: its refusal of a key, in its words (sandboxd's missing key is deletes.rs's).
db_test! {
    async fn a_refused_key_keeps_the_tombstone_and_says_so(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (agent, id) = agent_with_a_sandbox(&app, &o, &fake, "a-key-daytona-refuses").await;
        let r = o.call(Method::DELETE, &format!("/api/v1/agents/{agent}"), None).await;
        assert_eq!(r.json()["pending"], 1, "{}", r.body);
        let (_, next, error, _) = tombstones(&app).await.remove(0);
        assert!(error.as_deref().is_some_and(|e| e.contains("refused the connection's API key")), "{error:?}");
        // Retried with the usual backoff, still refused, still kept; the sandbox is untouched.
        let report = sweep::sweep(&app.state, next).await.expect("sweep");
        assert_eq!((report.claimed, report.failed), (1, 1));
        let (attempts, _, _, _) = tombstones(&app).await.remove(0);
        assert_eq!(attempts, 2);
        assert_eq!(state_at(&fake, &id), "started");
        // The connection's row on the Sandboxes page shows it pending, with why.
        let page = app.web.get("/sandboxes").await;
        assert!(page.body.contains("1 sandbox pending removal"), "{}", page.body);
        assert!(page.body.contains("refused the connection"), "{}", page.body);
    }
}

// Daytona only: an orphan is known by our labels (deployment, organization, connection);
// sandboxd's by its tenant and session name (deletes.rs).
db_test! {
    async fn daytona_orphans_are_only_ours_unnamed_and_older_than_ten_minutes(app: TestApp) {
        use agenticos::sandbox::hosts::daytona::connections::{owner_labels, CONNECTION_LABEL, DEPLOYMENT_LABEL, ORGANIZATION_LABEL};
        use agenticos::sandbox::running::orphans;
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (_, named) = agent_with_a_sandbox(&app, &o, &fake, &fake.api_key).await;
        let conn_id = app.scalar_strings("SELECT id FROM sandbox_connections").await.remove(0);
        let mut ours = owner_labels(&app.state, &o.org_id);
        ours.insert(CONNECTION_LABEL.into(), conn_id.clone());
        // The named one carries our labels too, but its row names it: no orphan.
        let orphan = labelled_sandbox_at(&fake, "orphan", ours.clone()).await;
        let mut other_deployment = ours.clone();
        other_deployment.insert(DEPLOYMENT_LABEL.into(), "another-deployment".into());
        let theirs = labelled_sandbox_at(&fake, "other-deployment", other_deployment).await;
        let mut other_org = ours.clone();
        other_org.insert(ORGANIZATION_LABEL.into(), uuid::Uuid::new_v4().to_string());
        let other = labelled_sandbox_at(&fake, "other-org", other_org).await;
        let now = agenticos::db::now_ms();
        // Younger than 10 minutes: the list is eventually consistent, nothing is an orphan yet.
        let found = orphans::everywhere_at(&app.state, now).await.expect("orphans");
        assert!(found.orphans.is_empty() && found.problems.is_empty(), "{:?} {:?}", found.orphans, found.problems);
        // Later: only ours, unnamed.
        let found = orphans::everywhere_at(&app.state, now + 11 * MINUTE).await.expect("orphans");
        let ids: Vec<&str> = found.orphans.iter().map(|o| o.session_id.as_str()).collect();
        assert_eq!(ids, vec![orphan.as_str()], "{:?}", found.problems);
        let counts = fake.request_counts();
        assert!(counts.get("GET /sandbox").copied().unwrap_or(0) >= 1, "{counts:?}");
        // Purged at Daytona; the others untouched.
        let done = orphans::purge(&app.state, &found.orphans).await.expect("purge");
        assert_eq!((done.purged, done.spared.len(), done.problems.len()), (1, 0, 0), "{done:?}");
        assert_eq!(state_at(&fake, &orphan), "destroyed");
        for id in [&named, &theirs, &other] {
            assert_eq!(state_at(&fake, id), "started");
        }
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: an old Daytona's bare sandbox list.
db_test! {
    async fn a_daytona_older_than_v0_180_with_a_bare_sandbox_list_is_probed_listed_and_swept(app: TestApp) {
        use agenticos::sandbox::hosts::daytona::connections::{owner_labels, CONNECTION_LABEL};
        use agenticos::sandbox::running::orphans;
        let fake = FakeDaytona::start(&[]);
        // `GET /sandbox` answers a bare array, no cursor, as a self-hosted Daytona before v0.180.
        fake.set_hooks(json!({"bareList": true}));
        let o = Org::new(&app).await;
        let (_, named) = agent_with_a_sandbox(&app, &o, &fake, &fake.api_key).await;
        let conn_id = app.scalar_strings("SELECT id FROM sandbox_connections").await.remove(0);
        // The check: the key is accepted (its `GET /sandbox?limit=1` read as one page).
        let p = o.call(Method::POST, &format!("/api/v1/sandbox-connections/{conn_id}/probe"), None).await.json();
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("ok"), Some("healthy")), "{p}");
        // An orphan of ours beside the named sandbox.
        let mut ours = owner_labels(&app.state, &o.org_id);
        ours.insert(CONNECTION_LABEL.into(), conn_id.clone());
        let orphan = labelled_sandbox_at(&fake, "orphan", ours).await;
        // Running lists both.
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let conn = v["daytona"].as_array().expect("daytona").iter().find(|d| d["connection_id"] == conn_id.as_str()).expect("conn").clone();
        assert_eq!(conn["problem"], serde_json::Value::Null, "{conn}");
        let mut listed: Vec<&str> = conn["sandboxes"].as_array().expect("sandboxes").iter().filter_map(|s| s["sandbox_id"].as_str()).collect();
        listed.sort();
        let mut both = vec![named.as_str(), orphan.as_str()];
        both.sort();
        assert_eq!(listed, both, "{conn}");
        // The orphan sweep finds and purges only the unnamed one.
        let found = orphans::everywhere_at(&app.state, agenticos::db::now_ms() + 11 * MINUTE).await.expect("orphans");
        let ids: Vec<&str> = found.orphans.iter().map(|o| o.session_id.as_str()).collect();
        assert_eq!(ids, vec![orphan.as_str()], "{:?}", found.problems);
        let done = orphans::purge(&app.state, &found.orphans).await.expect("purge");
        assert_eq!((done.purged, done.problems.len()), (1, 0), "{done:?}");
        assert_eq!(state_at(&fake, &orphan), "destroyed");
        assert_eq!(state_at(&fake, &named), "started");
        // Every list answer was the old bare array.
        let lists: Vec<serde_json::Value> = fake.log_lines().into_iter().filter(|l| l["route"] == "GET /sandbox").collect();
        assert!(!lists.is_empty() && lists.iter().all(|l| l["bareList"] == true && l["response"].is_array()), "{lists:?}");
        fake.assert_log_matches_the_documents();
    }
}

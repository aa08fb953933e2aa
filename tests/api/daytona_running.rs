//! What only Daytona shows and does on the Running tab (src/sandbox/running/daytona.rs), against
//! the FAKE Daytona (see daytona_fake.rs), on SQLite and PostgreSQL: each sandbox's state,
//! resources and last activity, never another organization's sandbox (even under our labels), a
//! connection Daytona does not answer for as a message of its own, Close stopping a persistent
//! scope's sandbox and deleting a run's without being asked. What every host kind does alike on the tab (whose each is, Close
//! keeping or deleting the files, audited, members 403, other organizations 404) is in
//! running_close.rs, and a delete refused while the workspace is being opened in
//! destroy_race.rs, each run on every kind by `host_test!`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agenticos::sandbox::hosts::daytona::client::{CreateSandbox, DaytonaClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::running_close::audit;
use crate::support::connections::daytona;
use crate::support::{service_agent, Org};

/// The fake's sandbox named `name` (not destroyed).
fn sandbox_named(fake: &FakeDaytona, name: &str) -> Value {
    fake.sandboxes().into_iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no sandbox {name}"))
}

fn sandbox_by_id(fake: &FakeDaytona, id: &str) -> Value {
    fake.sandboxes().into_iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("no sandbox {id}"))
}

async fn key_of(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string()
}

fn close_path(conn: &str, id: &str) -> String {
    format!("/sandboxes/{conn}/sessions/{id}/close")
}

fn api_path(conn: &str, id: &str) -> String {
    format!("/api/v1/sandbox-sessions/{conn}/{id}")
}

fn row(id: &str) -> String {
    format!("tr.daytona-sandbox[data-sandbox-id=\"{id}\"]")
}

/// Waits (bounded) until the fake's sandbox `id` is in `state`.
fn wait_for_state(fake: &FakeDaytona, id: &str, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = sandbox_by_id(fake, id);
        if now["state"] == state {
            return;
        }
        assert!(Instant::now() < deadline, "sandbox {id} never became {state}: {now}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// Daytona only: its states and resources on the tab, ownership by label, an unreachable API in
// its words, Close stopping or deleting by scope (sandboxd's tab is sandbox_running.rs's).
db_test! {
    async fn daytona_sandboxes_show_state_and_resources_never_another_organizations_and_close_as_their_scope_demands(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let conn = daytona(&o, &fake.api_url, &fake.api_key).await;
        // A second Daytona connection where nothing answers: its own message, the first still listed.
        let dead = daytona(&o, "http://127.0.0.1:9/api", "unused-key").await;

        let agent = o.agent(service_agent("report writer", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarterly report"})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.txt", "keep me").await.status, 204);
        let kept = sandbox_named(&fake, &key_of(&o, &run).await);
        let kept_id = kept["id"].as_str().expect("id").to_string();
        let once = o.agent(service_agent("one-off", "run")).await;
        let run1 = o.run(&once, None, json!({})).await;
        assert_eq!(o.write(&run1, "a.txt", "x").await.status, 204);
        let ephemeral_id = sandbox_named(&fake, &key_of(&o, &run1).await)["id"].as_str().expect("id").to_string();
        // Another organization's sandbox under the same key, deployment and connection label.
        let mut foreign_labels: BTreeMap<String, String> = serde_json::from_value(kept["labels"].clone()).expect("labels");
        foreign_labels.insert("agenticos.io/org".into(), "another-organization".into());
        let client = DaytonaClient::new(
            DaytonaClient::default_http().expect("http"),
            url::Url::parse(&fake.api_url).expect("url"),
            secrecy::SecretString::from(fake.api_key.clone()),
        )
        .expect("client");
        let foreign = client
            .create_sandbox(&CreateSandbox { name: Some("theirs".into()), labels: foreign_labels, ..Default::default() })
            .await
            .expect("another organization's sandbox");

        // The page: each sandbox of ours with its state, resources and last activity.
        let r = app.web.get("/sandboxes/running").await;
        assert_eq!(r.status, 200, "{}", r.body);
        let kept_row = row(&kept_id);
        assert_eq!(r.select_text(&format!("{kept_row} .state")).as_deref(), Some("started"));
        let cells: Vec<Option<String>> =
            ["cpu", "memory", "disk"].iter().map(|c| r.select_text(&format!("{kept_row} .{c}"))).collect();
        assert_eq!(cells, [Some("1 core".into()), Some("1 GiB".into()), Some("3 GiB".into())]);
        assert!(r.select_text(&format!("{kept_row} .last-activity")).is_some_and(|t| t.ends_with(" ago")), "{}", r.body);
        assert!(r.select_all(&row(&foreign.id)).is_empty(), "another organization's sandbox is listed");
        let problem = r.select_text(&format!("#daytona-{dead} .host-problem")).unwrap_or_default();
        assert!(problem.contains("Unreachable"), "{problem}");

        // The API the page uses.
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let ours = v["daytona"].as_array().expect("daytona").iter().find(|d| d["connection_id"] == conn.as_str()).expect("conn").clone();
        assert_eq!((ours["problem"].clone(), ours["truncated"].clone()), (Value::Null, json!(false)));
        let listed: Vec<&str> = ours["sandboxes"].as_array().expect("sandboxes").iter().filter_map(|s| s["sandbox_id"].as_str()).collect();
        assert_eq!(listed.len(), 2, "{ours}");
        let s = ours["sandboxes"].as_array().unwrap().iter().find(|s| s["sandbox_id"] == kept_id.as_str()).unwrap();
        assert_eq!((s["state"].as_str(), s["scope"].as_str(), s["memory_gib"].as_f64()), (Some("started"), Some("conversation"), Some(1.0)));
        assert!(s["last_activity_at"].as_i64().is_some_and(|t| t > 0), "{s}");
        let dead_row = v["daytona"].as_array().unwrap().iter().find(|d| d["connection_id"] == dead.as_str()).expect("dead");
        assert!(dead_row["problem"].as_str().is_some_and(|p| p.contains("Unreachable")) && dead_row["sandboxes"] == json!([]));

        // Another organization's sandbox is not ours to close, even under our connection's label.
        o.call(Method::DELETE, &api_path(&conn, &foreign.id), None).await.problem(404);
        assert_eq!(sandbox_by_id(&fake, &foreign.id)["state"], "started");

        // Close (the page) on a persistent scope stops the sandbox, in these words.
        let r = app.web.post_form(&close_path(&conn, &kept_id), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        wait_for_state(&fake, &kept_id, "stopped");
        let flash = app.web.get("/sandboxes/running").await.select_text(".flash-success").unwrap_or_default();
        assert!(flash.contains("Stopped the Daytona sandbox of report writer"), "{flash}");
        let rows = audit(&app, "sandbox_session.closed").await;
        assert!(rows[0].2.contains("report writer") && rows[0].2.contains("stopped"), "{}", rows[0].2);

        // Close (the API) without `delete_files` on a run's sandbox: deleted all the same.
        let r = o.call(Method::DELETE, &api_path(&conn, &ephemeral_id), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let closed = r.json();
        assert_eq!((closed["files_deleted"].as_bool(), closed["sandbox_stopped"].as_bool()), (Some(true), Some(false)));
        assert_eq!(sandbox_by_id(&fake, &ephemeral_id)["desiredState"], "destroyed");
        wait_for_state(&fake, &ephemeral_id, "destroyed");
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        assert!(!v.to_string().contains(&ephemeral_id), "a deleted sandbox is still listed: {v}");
        assert!(!app.web.all_bodies().contains(&fake.api_key));
        fake.assert_log_matches_the_documents();
    }
}

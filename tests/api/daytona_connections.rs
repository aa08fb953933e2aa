//! Daytona connections against the FAKE Daytona (tests/peer/daytona/; not Daytona): the kind, its
//! API URL and its key of purpose `daytona` bound to that URL, the refusals of the dialog and the
//! API, and what asking Daytona finds (see docs/daytona.md).

use reqwest::Method;
use serde_json::{json, Value};

use crate::daytona_fake;
use crate::db_test;
use crate::helpers::Resp;
use crate::support::org::Org;

/// Creates a connection with `body` (a name added), answering the response.
async fn create(o: &Org<'_>, body: Value) -> Resp {
    o.call(Method::POST, "/api/v1/sandbox-connections", Some(body)).await
}

/// A vault key of `purpose`, bound to `address` when given.
async fn secret(o: &Org<'_>, name: &str, purpose: &str, value: &str, address: Option<&str>) -> String {
    let body = json!({"name": name, "purpose": purpose, "value": value, "address": address});
    let r = o.call(Method::POST, "/api/v1/vault/secrets", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["id"].as_str().expect("id").to_string()
}

// Daytona only: its connection's settings (sandboxd's are sandbox_connections.rs's).
db_test! {
    async fn a_daytona_connection_takes_an_api_url_and_a_key_of_purpose_daytona_bound_to_it(app: TestApp) {
        let o = Org::new(&app).await;
        // No URL typed: Daytona's cloud; no key: nothing is asked, saved anyway.
        let r = create(&o, json!({"name": "cloud", "kind": "daytona", "save_anyway": true})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let cloud = r.json();
        assert_eq!(cloud["kind"], "daytona");
        assert_eq!(cloud["address"], "https://app.daytona.io/api");
        assert_eq!(cloud["credential"], "missing");
        // A self-hosted (or test) API over http, with a pasted key and a snapshot name.
        let fake = daytona_fake::shared();
        let r = create(&o, json!({"name": "fake", "kind": "daytona", "address": format!("{}/", fake.api_url),
            "new_key": fake.api_key, "default_runtime": "daytonaio/sandbox:fake", "save_anyway": true})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let saved = r.json();
        assert_eq!(saved["address"], fake.api_url.as_str());
        assert_eq!(saved["default_runtime"], "daytonaio/sandbox:fake");
        // The key is in the vault, of purpose daytona, bound to the API URL; never in an answer.
        let secret_id = saved["credential_secret_id"].as_str().expect("a key");
        let s = o.call(Method::GET, &format!("/api/v1/vault/secrets/{secret_id}"), None).await.json();
        assert_eq!(s["purpose"], "daytona", "{s}");
        assert_eq!(s["bound_address"], fake.api_url.as_str(), "{s}");
        assert!(!r.body.contains(&fake.api_key));
        // Two Daytona connections may share an API URL (each key is its own Daytona organization).
        let again = create(&o, json!({"name": "fake-2", "kind": "daytona", "address": fake.api_url,
            "new_key": "another-daytona-organizations-key", "save_anyway": true})).await;
        assert_eq!(again.status, 201, "{}", again.body);
        // Daytona has no sandboxd policy.
        let id = saved["id"].as_str().expect("id");
        let p = o.call(Method::GET, &format!("/api/v1/sandbox-connections/{id}/policy"), None).await;
        assert!(p.status.is_client_error(), "{}", p.body);
        assert!(p.body.contains("Daytona"), "{}", p.body);
    }
}

// Daytona only: its connection's settings.
db_test! {
    async fn bad_daytona_settings_are_refused_at_their_field_and_nothing_is_saved(app: TestApp) {
        let o = Org::new(&app).await;
        let sandboxd_key = secret(&o, "sbx", "sandboxd", "a-sandboxd-token", Some("https://app.daytona.io/api")).await;
        let cases = [
            (json!({"kind": "daytona", "address": "ftp://daytona.example.com"}), "address", "http://"),
            (json!({"kind": "daytona", "address": "https://user:pw@daytona.example.com/api"}), "address", "credentials"),
            (json!({"kind": "daytona", "address": "http://169.254.169.254/api"}), "address", "link-local"),
            (json!({"kind": "daytona", "default_runtime": "has space; rm -rf"}), "default_runtime", "snapshot name"),
            (json!({"kind": "daytona", "credential_secret_id": sandboxd_key}), "credential_secret_id", "purpose daytona"),
            (json!({"kind": "kubernetes", "address": "http://h:1"}), "kind", "daytona"),
        ];
        for (mut body, field, words) in cases {
            body["name"] = json!("d");
            body["save_anyway"] = json!(true);
            let r = create(&o, body.clone()).await;
            let p = r.problem(422);
            assert_eq!(r.problem_fields(), vec![field.to_string()], "{body}: {p}");
            let message = p["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(message.contains(words), "{body}: {message}");
        }
        assert_eq!(app.count("sandbox_connections").await, 0);
        // The dialog says the same inline, at the field.
        let r = app.web.post_form("/sandboxes", &[("name", "d"), ("kind", "daytona"), ("address", "ftp://x"), ("new_key", "k")]).await;
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("http://")), "{}", r.body);
        assert_eq!(app.count("sandbox_connections").await, 0);
    }
}

// Daytona only: its key's binding to its API URL.
db_test! {
    async fn a_daytona_key_goes_only_to_the_api_url_it_was_saved_for(app: TestApp) {
        let o = Org::new(&app).await;
        let listener = crate::support::recorder::Recorder::start().await;
        let key = secret(&o, "dt", "daytona", "daytona-key-4c1f9e", Some("https://app.daytona.io/api")).await;
        // Another URL: refused at the key's field before any request.
        let r = o.call(Method::POST, "/api/v1/sandbox-connections/probe",
            Some(json!({"kind": "daytona", "address": format!("{}/api", listener.url), "credential_secret_id": key}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["credential_secret_id"]);
        let r = create(&o, json!({"name": "elsewhere", "kind": "daytona", "address": format!("{}/api", listener.url),
            "credential_secret_id": key, "save_anyway": true})).await;
        r.problem(422);
        assert!(listener.requests().is_empty(), "{:?}", listener.requests());
        // Editing a saved connection's URL needs the key again.
        let fake = daytona_fake::shared();
        let saved = create(&o, json!({"name": "fake", "kind": "daytona", "address": fake.api_url,
            "new_key": fake.api_key, "save_anyway": true})).await.json();
        let id = saved["id"].as_str().expect("id");
        let r = o.call(Method::PATCH, &format!("/api/v1/sandbox-connections/{id}"),
            Some(json!({"address": format!("{}/api", listener.url), "save_anyway": true}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["new_key"]);
        assert!(listener.requests().is_empty(), "{:?}", listener.requests());
    }
}

/// "Test this host" through the API; the probe's answer.
async fn probe(o: &Org<'_>, body: Value) -> Value {
    let r = o.call(Method::POST, "/api/v1/sandbox-connections/probe", Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

// Daytona only: what its API answers a probe, in its words.
db_test! {
    async fn asking_daytona_says_in_plain_words_what_it_found(app: TestApp) {
        let o = Org::new(&app).await;
        let fake = daytona_fake::shared();
        let ask = |extra: Value| {
            let mut body = json!({"kind": "daytona", "address": fake.api_url, "new_key": fake.api_key});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            body
        };
        // The key accepted, the default snapshot (GET /config) present.
        let p = probe(&o, ask(json!({}))).await;
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("ok"), Some("healthy")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.contains("default snapshot “daytonaio/sandbox:fake”")), "{p}");
        assert_eq!(p["host_default_runtime"], "daytonaio/sandbox:fake");
        // A chosen snapshot that exists, and one that does not.
        let p = probe(&o, ask(json!({"default_runtime": "fake-python"}))).await;
        assert_eq!(p["status"], "ok", "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.contains("“fake-python” exists")), "{p}");
        let p = probe(&o, ask(json!({"default_runtime": "no-such-snapshot"}))).await;
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("failed"), Some("no_runtime")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.starts_with("Unknown snapshot") && m.contains("no-such-snapshot")), "{p}");
        // A refused key.
        let p = probe(&o, ask(json!({"new_key": "not-the-fakes-key"}))).await;
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("failed"), Some("key_refused")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.starts_with("Key refused")), "{p}");
        // Nothing listening.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = closed.local_addr().expect("addr").port();
        drop(closed);
        let p = probe(&o, ask(json!({"address": format!("http://127.0.0.1:{port}/api")}))).await;
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("failed"), Some("no_answer")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.starts_with("Unreachable")), "{p}");
        // Something that is not Daytona (it answers 404 JSON to everything).
        let other = crate::support::recorder::Recorder::start().await;
        let p = probe(&o, ask(json!({"address": format!("{}/api", other.url)}))).await;
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("failed"), Some("not_a_sandbox_service")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.starts_with("Not Daytona")), "{p}");
        // A save's check refuses at the field the problem is about, unless saved anyway.
        let r = create(&o, json!({"name": "bad", "kind": "daytona", "address": fake.api_url, "new_key": "not-the-fakes-key"})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["new_key"]);
        let r = create(&o, json!({"name": "bad", "kind": "daytona", "address": fake.api_url, "new_key": fake.api_key,
            "default_runtime": "no-such-snapshot"})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["default_runtime"]);
        assert_eq!(app.count("sandbox_connections").await, 0);
        let r = create(&o, json!({"name": "good", "kind": "daytona", "address": fake.api_url, "new_key": fake.api_key})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        // A saved connection is asked with its stored key, and says the same.
        let id = r.json()["id"].as_str().expect("id").to_string();
        let p = o.call(Method::POST, &format!("/api/v1/sandbox-connections/{id}/probe"), None).await.json();
        assert_eq!(p["status"], "ok", "{p}");
        // Nothing of the key in any answer, row or log line.
        assert!(!app.web.all_bodies().contains(&fake.api_key));
        assert!(!crate::helpers::captured_logs().contains(&fake.api_key));
    }
}

// Daytona only: its API's redirect.
db_test! {
    async fn the_daytona_key_never_follows_a_redirect(app: TestApp) {
        let o = Org::new(&app).await;
        let fake = daytona_fake::FakeDaytona::start(&[]);
        let elsewhere = crate::support::recorder::Recorder::start().await;
        fake.set_hooks(json!({"redirect": {"status": 307, "location": format!("{}/api/sandbox", elsewhere.url), "pathPrefix": "/api"}}));
        let p = probe(&o, json!({"kind": "daytona", "address": fake.api_url, "new_key": fake.api_key})).await;
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("failed"), Some("not_a_sandbox_service")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.contains("redirect") && m.contains("never followed")), "{p}");
        assert!(elsewhere.requests().is_empty(), "{:?}", elsewhere.requests());
    }
}

// Daytona only: a sandbox built from an image (its build states).
db_test! {
    async fn a_daytona_image_runtime_saves_without_save_anyway_and_a_workspace_is_built_from_it(app: TestApp) {
        let o = Org::new(&app).await;
        let fake = daytona_fake::FakeDaytona::start(&[]);
        fake.reset_request_counts();
        // No snapshot to look up: the key and its permissions are asked, and the save goes through.
        let r = create(&o, json!({"name": "built", "kind": "daytona", "address": fake.api_url, "new_key": fake.api_key,
            "default_runtime": "image:python:3.12-slim"})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["default_runtime"], "image:python:3.12-slim");
        let id = r.json()["id"].as_str().expect("id").to_string();
        let p = o.call(Method::POST, &format!("/api/v1/sandbox-connections/{id}/probe"), None).await.json();
        assert_eq!((p["status"].as_str(), p["health"].as_str()), (Some("ok"), Some("healthy")), "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.contains("built from the image “python:3.12-slim”")), "{p}");
        let counts = fake.request_counts();
        assert_eq!(counts.get("GET /snapshots/{id}"), None, "{counts:?}");
        assert!(counts.get("GET /sandbox").copied().unwrap_or(0) >= 2, "{counts:?}");
        // A reference Docker would refuse is refused at the field, even saved anyway.
        for bad in ["image:Python:3.12", "image:", "image:python:", "image:a//b"] {
            let r = create(&o, json!({"name": "bad", "kind": "daytona", "address": fake.api_url, "new_key": fake.api_key,
                "default_runtime": bad, "save_anyway": true})).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), vec!["default_runtime"], "{bad}");
        }
        // A refused key still refuses the save.
        let r = create(&o, json!({"name": "bad", "kind": "daytona", "address": fake.api_url, "new_key": "not-the-fakes-key",
            "default_runtime": "image:python:3.12-slim"})).await;
        r.problem(422);
        assert_eq!(app.count("sandbox_connections").await, 1);
        // A workspace on it: Daytona builds the sandbox from the image (pending_build), then runs.
        let agent = o.agent(crate::support::service_agent("builder", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let sb = fake.sandboxes().into_iter().find(|s| s["name"] == key.as_str()).expect("its sandbox");
        assert_eq!(sb["buildInfo"]["dockerfileContent"], "FROM python:3.12-slim\n", "{sb}");
        fake.assert_log_matches_the_documents();
    }
}

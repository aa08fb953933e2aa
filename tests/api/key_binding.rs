//! A stored key is sent only to the address it was saved for (issue 8, item 1), only keys of the
//! host's purpose are sent, and the connection rules around keys and pins. A header-recording
//! listener stands where an attacker would point a connection: no token may ever reach it.

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{captured_logs, Resp, TestApp};
use crate::peer::{self, Peer, PeerOptions};
use crate::support::recorder::Recorder;

/// This deployment's own token in these tests (never a real host's).
const DEPLOYMENT_TOKEN: &str = "deployment-token-5b1e0c9d7f3a";
const LOCAL: &str = "http://sandboxd:8080";

struct Org<'a> {
    app: &'a TestApp,
    owner: String,
    builder: String,
}

impl<'a> Org<'a> {
    async fn new(app: &'a TestApp) -> Org<'a> {
        app.setup_owner().await;
        let owner = app.web.create_token_in_page("owner", "owner").await;
        let builder = app.web.create_token_in_page("builder", "builder").await;
        Org { app, owner, builder }
    }

    async fn as_builder(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.app.web.bearer(&self.builder, method, path, body).await
    }

    async fn as_owner(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.app.web.bearer(&self.owner, method, path, body).await
    }

    async fn connect(&self, name: &str, address: &str, body: Value) -> Value {
        let mut all = json!({"name": name, "address": address});
        if let (Some(a), Some(b)) = (all.as_object_mut(), body.as_object()) {
            a.extend(b.clone());
        }
        let r = self.as_owner(Method::POST, "/api/v1/sandbox-connections", Some(all)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()
    }

    async fn secret(&self, name: &str, purpose: &str, value: &str, address: Option<&str>) -> String {
        let r = self
            .as_owner(
                Method::POST,
                "/api/v1/vault/secrets",
                Some(json!({"name": name, "purpose": purpose, "value": value, "address": address})),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().expect("id").to_string()
    }

    async fn probe(&self, body: Value) -> Resp {
        self.as_builder(Method::POST, "/api/v1/sandbox-connections/probe", Some(body)).await
    }

    async fn audit(&self, action: &str) -> Vec<String> {
        self.app
            .scalar_strings(&format!(
                "SELECT target || ' | ' || detail FROM audit_events WHERE action = '{action}' ORDER BY created_at, id"
            ))
            .await
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}")).to_string()
}

db_test! {
    async fn no_token_reaches_an_address_it_was_not_saved_for(app: TestApp)
        settings(&[("SANDBOXD_TOKEN", DEPLOYMENT_TOKEN), ("SANDBOXD_LOCAL_ADDRESSES", LOCAL)])
    {
        let peer = peer::shared().await;
        let evil = Recorder::start().await;
        let o = Org::new(&app).await;
        let conn = o.connect("peer", &peer.url, json!({"new_key": peer.token})).await;
        let id = str_of(&conn, "id");
        let key = str_of(&conn, "credential_secret_id");

        // The API probe: the host's key, an address of the caller's choosing.
        let r = o.probe(json!({"address": evil.url, "credential_secret_id": key})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["credential_secret_id"]);
        // The page probe, with the key chosen and with the saved connection's key.
        // The dialog shows the refusal at the key's field.
        let r = app.web.post_form("/sandboxes/probe", &[("address", &evil.url), ("credential_secret_id", &key)]).await;
        assert_eq!(r.status, 200);
        assert!(r.field_error("connection-credential").is_some_and(|m| m.contains("saved for another address")), "{}", r.body);
        let r = app.web.post_form("/sandboxes/probe", &[("address", &evil.url), ("connection_id", &id)]).await;
        assert!(r.field_error("connection-credential").is_some_and(|m| m.contains("saved for another address")), "{}", r.body);
        // The key still goes where it was saved for.
        let p = o.probe(json!({"address": peer.url, "credential_secret_id": key})).await;
        assert_eq!(p.json()["status"], "ok", "{}", p.body);

        // A connection at the evil address cannot be saved with the key.
        let r = o.as_builder(Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "evil", "address": evil.url, "credential_secret_id": key}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["credential_secret_id"]);

        // PATCH of the address keeps no key: it needs the key again, or a key saved for the address.
        let path = format!("/api/v1/sandbox-connections/{id}");
        let r = o.as_builder(Method::PATCH, &path, Some(json!({"address": evil.url}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["new_key"]);
        let r = o.as_builder(Method::PATCH, &path, Some(json!({"address": evil.url, "credential_secret_id": key}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["credential_secret_id"]);
        let r = app.web.post_form(&format!("/sandboxes/{id}"), &[("name", "peer"), ("kind", "sandboxd"), ("address", &evil.url), ("credential_secret_id", &key)]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("connection-credential").is_some(), "{}", r.body);
        // … then the saved connection's probe still goes to its own address.
        let p = o.as_builder(Method::POST, &format!("{path}/probe"), None).await;
        assert_eq!(p.json()["status"], "ok", "{}", p.body);

        // A run's workspace operations after the refused PATCH go to the saved address.
        let agent = o.as_owner(Method::POST, "/api/v1/agents", Some(json!({"name": "coder", "backend": "service", "scope": "run", "connection_id": id}))).await;
        assert_eq!(agent.status, 201, "{}", agent.body);
        let agent_id = str_of(&agent.json(), "id");
        let exec_path = |run: &Resp| format!("/api/v1/runs/{}/workspace/exec", str_of(&run.json(), "id"));
        let run = o.as_owner(Method::POST, "/api/v1/runs", Some(json!({"agent_id": agent_id, "started_by": "member"}))).await;
        assert_eq!(run.status, 201, "{}", run.body);
        let r = o.as_owner(Method::POST, &exec_path(&run), Some(json!({"command": "echo hi"}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        // Even a row changed behind the product's back (the address moved, the key did not) sends nothing.
        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query("UPDATE sandbox_connections SET address = $1, updated_at = updated_at + 1 WHERE id = $2")
            .bind(&evil.url).bind(&id).execute(&mut *c).await.expect("moved");
        drop(c);
        let run = o.as_owner(Method::POST, "/api/v1/runs", Some(json!({"agent_id": agent_id, "started_by": "member"}))).await;
        let r = o.as_owner(Method::POST, &exec_path(&run), Some(json!({"command": "echo hi"}))).await;
        let p = r.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("no request was sent")), "{p}");
        let p = o.as_builder(Method::POST, &format!("{path}/probe"), None).await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("no request was sent")), "{p}");
        // `agenticos doctor` does not send it either (it only asks the anonymous /healthz).
        let report = agenticos::sandbox::doctor::run(&app.state).await.expect("doctor");
        assert!(!report.is_healthy());
        let text = report.render();
        assert!(!text.contains(&peer.token));

        // Only keys of purpose sandboxd go to a sandboxd host, even one bound to the address.
        let other = o.secret("other", "other", &peer.token, Some(&evil.url)).await;
        let r = o.probe(json!({"address": evil.url, "credential_secret_id": other})).await;
        r.problem(422);
        assert!(r.body.contains("purpose other"), "{}", r.body);
        let daytona = o.secret("dt", "daytona", &peer.token, None).await;
        o.probe(json!({"address": peer.url, "credential_secret_id": daytona})).await.problem(422);

        // This deployment's token: saved for a compose address, it goes to those addresses only.
        // This deployment's own address does not resolve here: saved anyway.
        let local = o.connect("local", LOCAL, json!({"save_anyway": true})).await;
        let local_id = str_of(&local, "id");
        let local_key = str_of(&local, "credential_secret_id");
        o.probe(json!({"address": evil.url, "credential_secret_id": local_key})).await.problem(422);
        let r = o.as_builder(Method::PATCH, &format!("/api/v1/sandbox-connections/{local_id}"), Some(json!({"address": evil.url}))).await;
        r.problem(422);
        // Without a key, a typed address is never asked.
        assert_eq!(o.probe(json!({"address": evil.url})).await.json()["status"], "not_asked");

        // An unbound key goes nowhere: a probe does not bind it. Bound by the owner, it goes only there.
        let loose = o.secret("loose", "sandboxd", &peer.token, None).await;
        o.probe(json!({"address": peer.url, "credential_secret_id": loose})).await.problem(422);
        let r = o.as_owner(Method::POST, &format!("/api/v1/vault/secrets/{loose}/bind"), Some(json!({"address": peer.url}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let p = o.probe(json!({"address": peer.url, "credential_secret_id": loose})).await;
        assert_eq!(p.json()["status"], "ok", "{}", p.body);
        o.probe(json!({"address": evil.url, "credential_secret_id": loose})).await.problem(422);

        // A key from before binding (unbound, used by a connection) is bound only by that connection.
        let localhost = format!("http://localhost:{}", peer.port());
        let legacy = o.connect("legacy", &localhost, json!({"new_key": peer.token})).await;
        let (legacy_id, legacy_key) = (str_of(&legacy, "id"), str_of(&legacy, "credential_secret_id"));
        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query("UPDATE vault_secrets SET bound_address = NULL WHERE id = $1")
            .bind(&legacy_key).execute(&mut *c).await.expect("unbound");
        drop(c);
        o.probe(json!({"address": evil.url, "credential_secret_id": legacy_key})).await.problem(422);
        let legacy_path = format!("/api/v1/sandbox-connections/{legacy_id}");
        o.as_builder(Method::PATCH, &legacy_path, Some(json!({"address": evil.url}))).await.problem(422);
        // The edit dialog posts the stored key as its choice: at the connection's own address, that binds it.
        let r = app.web.post_form(&format!("/sandboxes/{legacy_id}"), &[("name", "legacy"), ("kind", "sandboxd"), ("address", &localhost), ("credential_secret_id", &legacy_key)]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let p = o.as_builder(Method::POST, &format!("{legacy_path}/probe"), None).await;
        assert_eq!(p.json()["status"], "ok", "{}", p.body);
        let bound = app.scalar_strings(&format!("SELECT bound_address FROM vault_secrets WHERE id = '{legacy_key}'")).await;
        assert_eq!(bound, vec![localhost.clone()]);
        assert_eq!(o.as_owner(Method::DELETE, &legacy_path, None).await.status, 204);

        // A real address change with the key again is audited with both addresses (a host's
        // address is registered once: the other one is elsewhere).
        let elsewhere = Recorder::start().await;
        let c2 = o.connect("moving", &localhost, json!({"new_key": peer.token})).await;
        let r = o.as_builder(Method::PATCH, &format!("/api/v1/sandbox-connections/{}", str_of(&c2, "id")), Some(json!({"address": elsewhere.url, "new_key": "elsewhere-token", "save_anyway": true}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let updates = o.audit("connection.updated").await;
        assert!(updates.iter().any(|u| u.contains(&format!("address {localhost} → {}", elsewhere.url))), "{updates:?}");
        let probes = o.audit("connection.probed").await;
        assert!(probes.iter().any(|p| p.contains(&evil.url) && p.contains("refused")), "{probes:?}");
        assert!(probes.iter().any(|p| p.contains(&peer.url) && p.contains("answered")), "{probes:?}");

        evil.assert_no_token(&[&peer.token, DEPLOYMENT_TOKEN]);
        let paths: Vec<String> = evil.requests().iter().map(|r| r.lines().next().unwrap_or_default().to_string()).collect();
        assert!(paths.iter().all(|p| p.starts_with("GET /healthz ")), "only doctor's anonymous health check: {paths:?}");
        let everything = format!("{}\n{}\n{}", app.web.all_bodies(), probes.join("\n"), updates.join("\n"));
        for t in [&peer.token, DEPLOYMENT_TOKEN] {
            assert!(!everything.contains(t) && !captured_logs().contains(t), "a token leaked");
        }
    }
}

db_test! {
    async fn the_deployments_token_is_one_vault_entry_and_a_used_secret_is_not_deleted(app: TestApp)
        settings(&[("SANDBOXD_TOKEN", DEPLOYMENT_TOKEN), ("SANDBOXD_LOCAL_ADDRESSES", "http://sandboxd:8080,http://sandboxd-2:8080")])
    {
        let o = Org::new(&app).await;
        let a = o.connect("local-a", LOCAL, json!({"save_anyway": true})).await;
        let b = o.connect("local-b", "http://sandboxd-2:8080", json!({"save_anyway": true})).await;
        assert_eq!(a["credential_secret_id"], b["credential_secret_id"]);
        assert_eq!(
            app.scalar_strings("SELECT name FROM vault_secrets").await,
            vec!["sandboxd token (this deployment)".to_string()]
        );
        let key = str_of(&a, "credential_secret_id");
        let r = o.as_builder(Method::DELETE, &format!("/api/v1/vault/secrets/{key}"), None).await;
        let p = r.problem(409);
        let detail = p["detail"].as_str().expect("detail");
        assert!(detail.contains("“local-a”") && detail.contains("“local-b”"), "{detail}");
        let r = app.web.post_form(&format!("/vault/{key}/delete"), &[]).await;
        assert_eq!(r.status, 409);
        assert!(r.select_text("#vault-error").is_some_and(|m| m.contains("local-a")), "{}", r.body);
        assert_eq!(app.count("vault_secrets").await, 1);
        // A secret no connection uses is deleted.
        let free = o.secret("free", "other", "value", None).await;
        assert_eq!(o.as_builder(Method::DELETE, &format!("/api/v1/vault/secrets/{free}"), None).await.status, 204);
    }
}

db_test! {
    async fn a_connection_agents_are_pinned_to_is_not_deleted(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let first = o.connect("first", &peer.url, json!({"new_key": peer.token})).await;
        let pinned = o.connect("pinned", &format!("http://localhost:{}", peer.port()), json!({"new_key": peer.token, "save_anyway": true})).await;
        let id = str_of(&pinned, "id");
        for name in ["coder", "reviewer"] {
            let r = o.as_owner(Method::POST, "/api/v1/agents", Some(json!({"name": name, "backend": "service", "scope": "run", "connection_id": id}))).await;
            assert_eq!(r.status, 201, "{}", r.body);
        }
        let p = o.as_builder(Method::DELETE, &format!("/api/v1/sandbox-connections/{id}"), None).await.problem(409);
        let detail = p["detail"].as_str().expect("detail");
        assert!(detail.contains("“coder”") && detail.contains("“reviewer”"), "{detail}");
        let r = app.web.post_form(&format!("/sandboxes/{id}/delete"), &[]).await;
        assert_eq!(r.status, 409);
        assert!(r.select_text("#connections-error").is_some_and(|m| m.contains("coder")), "{}", r.body);
        let pins = app.scalar_strings(&format!("SELECT name FROM agents WHERE connection_id = '{id}' ORDER BY name")).await;
        assert_eq!(pins, vec!["coder".to_string(), "reviewer".to_string()]);
        // A connection no agent uses is deleted as before.
        assert_eq!(o.as_builder(Method::DELETE, &format!("/api/v1/sandbox-connections/{}", str_of(&first, "id")), None).await.status, 204);
    }
}

db_test! {
    async fn a_host_answering_a_bare_404_on_a_route_we_need_is_a_version_mismatch_on_the_probe(app: TestApp) {
        let o = Org::new(&app).await;
        for route in ["/policy", "/sessions"] {
            let old = Peer::start(PeerOptions::default().drop_route(route)).await.expect("peer");
            let p = o.probe(json!({"address": old.url, "new_key": old.token})).await.json();
            assert_eq!(p["status"], "failed", "{p}");
            let m = p["message"].as_str().expect("message");
            assert!(m.contains(route) && m.contains("ghcr.io/vstorm-co/sandboxd:"), "{route}: {m}");
            assert!(!m.contains(&old.url), "{m}");
        }
    }
}

db_test! {
    async fn a_probe_refused_before_any_request_is_audited_with_its_address_and_reason(app: TestApp) {
        let listener = Recorder::start().await;
        let o = Org::new(&app).await;
        let other_value = "other-purpose-value-91c2e4";
        let elsewhere_value = "bound-elsewhere-value-7d30aa";
        let pasted = "pasted-key-value-4f1b6e";
        let other = o.secret("mail relay", "other", other_value, None).await;
        let elsewhere = o.secret("other host's key", "sandboxd", elsewhere_value, Some("http://10.0.0.9:8080")).await;

        // A key of the wrong purpose, and one bound to another address: 422 at the key's field.
        let r = o.probe(json!({"address": listener.url, "credential_secret_id": other})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["credential_secret_id"]);
        let r = o.probe(json!({"address": listener.url, "credential_secret_id": elsewhere})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["credential_secret_id"]);
        // A blocked address (with a pasted key) and one that is no address: 422 at the address.
        let r = o.probe(json!({"address": "http://169.254.169.254/", "new_key": pasted})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["address"]);
        let r = o.probe(json!({"address": "sandboxd:8080", "new_key": pasted})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["address"]);
        // No key at all: answered, not asked.
        let r = o.probe(json!({"address": listener.url})).await;
        assert_eq!(r.json()["status"], "not_asked", "{}", r.body);
        // A saved connection whose key was bound elsewhere behind its back: 409, nothing sent.
        // (Saving checks the host with the pasted key, at the address it is pasted for: allowed.)
        let requests_before = listener.requests().len();
        let saved = o.connect("moved", &listener.url, json!({"new_key": pasted, "save_anyway": true})).await;
        let requests_after_save = listener.requests().len();
        assert!(requests_after_save > requests_before, "the save's check asked the host");
        let key = str_of(&saved, "credential_secret_id");
        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query("UPDATE vault_secrets SET bound_address = 'http://10.0.0.9:8080' WHERE id = $1")
            .bind(&key).execute(&mut *c).await.expect("rebound");
        drop(c);
        o.as_builder(Method::POST, &format!("/api/v1/sandbox-connections/{}/probe", str_of(&saved, "id")), None).await.problem(409);

        // Each probe is one audit line with its address and the reason, and none of them named a value.
        let probes = o.audit("connection.probed").await;
        // Six refused or not-asked probes, and the save's own check of the host.
        assert_eq!(probes.len(), 7, "{probes:#?}");
        let line = |needle: &str| probes.iter().find(|p| p.contains(needle)).cloned().unwrap_or_default();
        let wrong_purpose = line("“mail relay”");
        assert!(wrong_purpose.starts_with(&format!("{} | {}: refused before any request.", listener.url, listener.url)), "{wrong_purpose}");
        assert!(wrong_purpose.contains("purpose other"), "{wrong_purpose}");
        let bound = line("“other host's key”");
        assert!(bound.contains(&listener.url) && bound.contains("refused") && bound.contains("another address"), "{bound}");
        let blocked = line("169.254.169.254");
        assert!(blocked.contains("refused") && blocked.contains("link-local"), "{blocked}");
        let no_address = line("sandboxd:8080 |");
        assert!(no_address.contains("refused") && no_address.contains("http://"), "{no_address}");
        let not_asked = line("not asked");
        assert!(not_asked.starts_with(&format!("{} | {}: not asked, no key", listener.url, listener.url)), "{not_asked}");
        let moved = probes.iter().find(|p| p.starts_with("moved |") && p.contains("refused")).cloned().unwrap_or_default();
        assert!(moved.contains(&listener.url) && moved.contains("refused before any request"), "{moved}");
        let everything = format!("{}\n{}", probes.join("\n"), app.web.all_bodies());
        for value in [other_value, elsewhere_value, pasted] {
            assert!(!everything.contains(value) && !captured_logs().contains(value), "a key's value leaked: {value}");
        }
        assert_eq!(requests_before, 0, "a refused probe reached the listener: {:?}", listener.requests());
        assert_eq!(
            listener.requests().len(),
            requests_after_save,
            "a refused probe reached the listener: {:?}",
            listener.requests()
        );
    }
}

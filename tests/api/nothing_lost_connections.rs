//! Issue 25, the connections' part: keys a builder cannot move, one address is one connection,
//! switched-off hosts still listed and closable, a switch-off that reaches a live run at once, a
//! host answering 404 is not a sandbox service, a key with a line break is refused, a secret a
//! manifest uses is not deleted, and an edit keeps a runtime only the host offers.

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{Resp, TestApp};
use crate::peer;
use crate::support::connections::same_host_again;
use crate::support::recorder::Recorder;

/// The owner's session (the web client) and a builder's API token.
struct Org<'a> {
    app: &'a TestApp,
    builder: String,
}

impl<'a> Org<'a> {
    async fn new(app: &'a TestApp) -> Org<'a> {
        app.setup_owner().await;
        let builder = app.web.create_token_in_page("builder", "builder").await;
        Org { app, builder }
    }

    /// As the owner (the signed-in web client, through the API).
    async fn owner(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.app.web.api(method, path, body).await
    }

    async fn as_builder(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.app.web.bearer(&self.builder, method, path, body).await
    }

    async fn connect(&self, body: Value) -> Value {
        let r = self.owner(Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()
    }

    /// A `run`-scoped agent on `connection`, a run of it, and one command run there: the session
    /// the product opened for it (its workspace row names the connection). The run's id and the
    /// session id.
    async fn run_on(&self, connection: &str, name: &str) -> (String, String) {
        let agent = self
            .owner(
                Method::POST,
                "/api/v1/agents",
                Some(json!({"name": name, "backend": "service", "scope": "run", "connection_id": connection})),
            )
            .await;
        assert_eq!(agent.status, 201, "{}", agent.body);
        let agent_id = text(&agent.json(), "id");
        let run =
            self.owner(Method::POST, "/api/v1/runs", Some(json!({"agent_id": agent_id, "started_by": "member"}))).await;
        assert_eq!(run.status, 201, "{}", run.body);
        let run_id = text(&run.json(), "id");
        let r = self.exec(&run_id).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let sessions = self
            .app
            .scalar_strings(&format!(
                "SELECT session_ref FROM sandbox_workspaces WHERE connection_id = '{connection}' AND session_ref IS NOT NULL"
            ))
            .await;
        assert_eq!(sessions.len(), 1, "one session opened: {sessions:?}");
        (run_id, sessions[0].clone())
    }

    async fn exec(&self, run_id: &str) -> Resp {
        let path = format!("/api/v1/runs/{run_id}/workspace/exec");
        self.owner(Method::POST, &path, Some(json!({"command": "echo hi"}))).await
    }

    /// The session ids the Running tab's API lists under each connection, as (connection id,
    /// session id).
    async fn listed(&self) -> Vec<(String, String)> {
        let v = self.owner(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let mut out = Vec::new();
        for h in v["connections"].as_array().expect("connections") {
            for s in h["sessions"].as_array().expect("sessions") {
                out.push((text(h, "connection_id"), text(s, "session_id")));
            }
        }
        out
    }
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}")).to_string()
}

db_test! {
    async fn a_builder_cannot_send_a_key_stored_without_an_address_anywhere(app: TestApp) {
        let peer = peer::shared().await;
        let evil = Recorder::start().await;
        let o = Org::new(&app).await;
        // The owner stores the host's key without an address.
        let r = o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "eu host", "purpose": "sandboxd", "value": peer.token}))).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let key = text(&r.json(), "id");

        // A builder probes, saves and saves anyway at an address of their choosing: refused at the
        // key's field, and nothing reaches that address.
        let r = o.as_builder(Method::POST, "/api/v1/sandbox-connections/probe", Some(json!({"address": evil.url, "credential_secret_id": key}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["credential_secret_id"]);
        for save_anyway in [false, true] {
            let body = json!({"name": "evil", "address": evil.url, "credential_secret_id": key, "save_anyway": save_anyway});
            let r = o.as_builder(Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), ["credential_secret_id"]);
        }
        // Even at the host's real address: a builder does not bind it.
        let r = o.as_builder(Method::POST, "/api/v1/sandbox-connections/probe", Some(json!({"address": peer.url, "credential_secret_id": key}))).await;
        let p = r.problem(422);
        assert!(p.to_string().contains("not bound to an address yet"), "{p}");
        // Nor through the explicit route.
        o.as_builder(Method::POST, &format!("/api/v1/vault/secrets/{key}/bind"), Some(json!({"address": evil.url}))).await.problem(403);
        assert!(evil.requests().is_empty(), "the key's address was asked: {:?}", evil.requests());
        let bound = app.scalar_strings(&format!("SELECT COALESCE(bound_address, 'unbound') FROM vault_secrets WHERE id = '{key}'")).await;
        assert_eq!(bound, ["unbound"]);
        assert!(app.scalar_strings("SELECT id FROM audit_events WHERE action = 'vault.secret_bound'").await.is_empty());

        // The owner binds it deliberately (audited); a bound key is never moved.
        let r = o.owner(Method::POST, &format!("/api/v1/vault/secrets/{key}/bind"), Some(json!({"address": peer.url}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["bound_address"], peer.url.as_str());
        let audited = app.scalar_strings("SELECT target || ' | ' || detail FROM audit_events WHERE action = 'vault.secret_bound'").await;
        assert_eq!(audited.len(), 1, "{audited:?}");
        assert!(audited[0].starts_with("eu host | bound to ") && audited[0].contains(&peer.url), "{audited:?}");
        let r = o.owner(Method::POST, &format!("/api/v1/vault/secrets/{key}/bind"), Some(json!({"address": evil.url}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["address"]);
        // Bound, it goes to its address, for the builder too, and still nowhere else.
        let r = o.as_builder(Method::POST, "/api/v1/sandbox-connections/probe", Some(json!({"address": peer.url, "credential_secret_id": key}))).await;
        assert_eq!(r.json()["status"], "ok", "{}", r.body);
        o.as_builder(Method::POST, "/api/v1/sandbox-connections/probe", Some(json!({"address": evil.url, "credential_secret_id": key}))).await.problem(422);

        // The Vault page: the owner's Bind form, with a refusal inline.
        let r = o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "loose", "purpose": "sandboxd", "value": "loose-value-0123456789"}))).await;
        let loose = text(&r.json(), "id");
        let page = app.web.get("/vault").await;
        assert!(page.select_attr(&format!("#secret-{loose} form.secret-bind"), "action").is_some(), "{}", page.body);
        assert!(page.select_attr(&format!("#secret-{key} form.secret-bind"), "action").is_none(), "a bound key offers no Bind");
        let r = app.web.post_form(&format!("/vault/{loose}/bind"), &[("address", "http://169.254.169.254/")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error(&format!("bind-{loose}")).is_some_and(|m| m.contains("link-local")), "{}", r.body);
        let r = app.web.post_form(&format!("/vault/{loose}/bind"), &[("address", &peer.url)]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert!(evil.requests().is_empty(), "the key's address was asked: {:?}", evil.requests());
    }
}

db_test! {
    async fn an_admins_save_with_a_key_stored_without_an_address_binds_it_and_is_audited(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let r = o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "eu host", "purpose": "sandboxd", "value": peer.token}))).await;
        let key = text(&r.json(), "id");
        // A probe never binds, the owner's neither.
        let r = o.owner(Method::POST, "/api/v1/sandbox-connections/probe", Some(json!({"address": peer.url, "credential_secret_id": key}))).await;
        r.problem(422);
        // Saving a connection with it is the owner's deliberate act.
        let conn = o.connect(json!({"name": "eu", "address": peer.url, "credential_secret_id": key})).await;
        assert_eq!(conn["credential_secret_id"], key.as_str());
        let bound = app.scalar_strings(&format!("SELECT bound_address FROM vault_secrets WHERE id = '{key}'")).await;
        assert_eq!(bound, std::slice::from_ref(&peer.url));
        let audited = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'vault.secret_bound'").await;
        assert_eq!(audited, [format!("bound to {} (saved with a connection at this address)", peer.url)]);
    }
}

db_test! {
    async fn one_address_is_one_connection_on_create_and_on_update(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let first = o.connect(json!({"name": "eu", "address": peer.url, "new_key": peer.token})).await;
        // The same address, written another way (a trailing slash, an upper-case scheme and host).
        let port = peer.port();
        for same in [format!("{}/", peer.url), format!("HTTP://127.0.0.1:{port}")] {
            let r = o.owner(Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "again", "address": same, "new_key": peer.token, "save_anyway": true}))).await;
            let p = r.problem(422);
            assert_eq!(r.problem_fields(), ["address"], "{p}");
            assert!(p.to_string().contains("“eu”"), "the problem names the existing connection: {p}");
        }
        // The dialog says it inline.
        let r = app.web.post_form("/sandboxes", &[("name", "again"), ("kind", "sandboxd"), ("address", &peer.url), ("new_key", &peer.token)]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("“eu”")), "{}", r.body);
        // An update onto the address of another connection is refused too.
        let localhost = format!("http://localhost:{port}");
        let second = o.connect(json!({"name": "eu via localhost", "address": localhost, "new_key": peer.token, "save_anyway": true})).await;
        let path = format!("/api/v1/sandbox-connections/{}", text(&second, "id"));
        let r = o.owner(Method::PATCH, &path, Some(json!({"address": peer.url, "new_key": peer.token, "save_anyway": true}))).await;
        let p = r.problem(422);
        assert_eq!(r.problem_fields(), ["address"], "{p}");
        assert!(p.to_string().contains("“eu”"), "{p}");
        let r = app.web.post_form(&format!("/sandboxes/{}", text(&second, "id")), &[("name", "eu via localhost"), ("kind", "sandboxd"), ("address", &peer.url), ("new_key", &peer.token)]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("“eu”")), "{}", r.body);
        // A connection saved again at its own address is no clash.
        let r = o.owner(Method::PATCH, &format!("/api/v1/sandbox-connections/{}", text(&first, "id")), Some(json!({"name": "eu-1"}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let addresses = app.scalar_strings("SELECT address FROM sandbox_connections ORDER BY address").await;
        assert_eq!(addresses, [peer.url.clone(), localhost]);
    }
}

db_test! {
    async fn a_host_registered_twice_shows_each_session_once_and_closes_it_only_under_its_own_connection(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let a = o.connect(json!({"name": "eu", "address": peer.url, "new_key": peer.token})).await;
        let a_id = text(&a, "id");
        let (_, session) = o.run_on(&a_id, "coder").await;
        // An old database: the same host registered again (the same address and key), later.
        let b_id = same_host_again(&app, &a_id, "eu again").await;

        // The API and the Running tab list the session once, under the connection it belongs to.
        let listed: Vec<(String, String)> = o.listed().await.into_iter().filter(|(_, s)| *s == session).collect();
        assert_eq!(listed, [(a_id.clone(), session.clone())]);
        let page = app.web.get("/sandboxes/running").await;
        assert_eq!(page.status, 200, "{}", page.body);
        let rows = page.select_all(&format!("tr.session[data-session-id='{session}']"));
        assert_eq!(rows.len(), 1, "{}", page.body);
        assert_eq!(page.select_all(&format!("#host-{a_id} tr.session[data-session-id='{session}']")).len(), 1);
        assert!(page.select_text(&format!("#host-{b_id} .host-same")).is_some_and(|t| t.contains("“eu”")), "{}", page.body);
        // Under the other connection it cannot be closed, nor its files deleted.
        let r = o.owner(Method::DELETE, &format!("/api/v1/sandbox-sessions/{b_id}/{session}?delete_files=true"), None).await;
        r.problem(404);
        assert_eq!(app.web.get(&format!("/sandboxes/{b_id}/sessions/{session}/delete")).await.status, 404);
        let r = app.web.post_form(&format!("/sandboxes/{b_id}/sessions/{session}/delete"), &[]).await;
        assert_eq!(r.status, 404, "{}", r.body);
        assert!(o.listed().await.contains(&(a_id.clone(), session.clone())), "the session is still open");
        // Home counts it once: one card for the host.
        let home = app.web.get("/").await;
        assert!(home.select_text(&format!("#capacity-{b_id}")).is_none(), "{}", home.body);
        let used = home.select_text(&format!("#capacity-{a_id} .capacity-used")).unwrap_or_default();
        assert!(used.starts_with("used 1"), "{used}");
        // Under its own connection it closes.
        let r = o.owner(Method::DELETE, &format!("/api/v1/sandbox-sessions/{a_id}/{session}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(!o.listed().await.iter().any(|(_, s)| *s == session));
    }
}

db_test! {
    async fn a_switched_off_host_stops_new_work_at_once_and_its_sessions_are_listed_and_closable(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let a = o.connect(json!({"name": "eu", "address": peer.url, "new_key": peer.token})).await;
        let a_id = text(&a, "id");
        let (run, session) = o.run_on(&a_id, "coder").await;
        // The run's next command is resolved from this replica's cache: switching the connection
        // off reaches it at once.
        let r = o.owner(Method::PATCH, &format!("/api/v1/sandbox-connections/{a_id}"), Some(json!({"is_enabled": false}))).await;
        assert_eq!(r.json()["is_enabled"], false, "{}", r.body);
        let p = o.exec(&run).await.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("switched off")), "{p}");

        // What still runs there is listed, marked off, and can be closed.
        let v = o.owner(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let host = v["connections"].as_array().expect("connections").iter().find(|h| h["connection_id"] == a_id.as_str()).cloned();
        let host = host.unwrap_or_else(|| panic!("the switched-off host is listed: {v}"));
        assert_eq!(host["is_enabled"], false);
        assert!(host["sessions"].as_array().expect("sessions").iter().any(|s| s["session_id"] == session.as_str()), "{host}");
        let page = app.web.get("/sandboxes/running").await;
        assert!(page.select_text(&format!("#host-{a_id} .host-off")).is_some(), "{}", page.body);
        assert!(page.select_attr(&format!("#host-{a_id} tr.session[data-session-id='{session}'] .session-delete"), "href").is_some(), "{}", page.body);
        let home = app.web.get("/").await;
        assert!(home.select_text(&format!("#capacity-{a_id} .capacity-off")).is_some(), "{}", home.body);
        assert!(home.select_text(&format!("#capacity-{a_id} .capacity-used")).is_some_and(|u| u.starts_with("used 1")), "{}", home.body);
        let r = app.web.post_form(&format!("/sandboxes/{a_id}/sessions/{session}/close"), &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert!(!o.listed().await.iter().any(|(_, s)| *s == session), "closed");
    }
}

db_test! {
    async fn a_host_answering_404_everywhere_is_not_a_sandbox_service(app: TestApp) {
        let other = Recorder::start().await;
        let o = Org::new(&app).await;
        let r = o.owner(Method::POST, "/api/v1/sandbox-connections/probe", Some(json!({"address": other.url, "new_key": "some-pasted-token-1"}))).await;
        let p = r.json();
        assert_eq!(p["status"], "failed", "{p}");
        let m = p["message"].as_str().unwrap_or_default();
        assert!(m.contains("not like a sandbox service"), "{m}");
        assert_eq!(p["health"], "not_a_sandbox_service", "{p}");
        // The dialog's probe says the same.
        let r = app.web.post_form("/sandboxes/probe", &[("address", &other.url), ("new_key", "some-pasted-token-1")]).await;
        assert!(r.body.contains("not like a sandbox service") && !r.body.contains(">Not Found<"), "{}", r.body);
    }
}

db_test! {
    async fn a_key_with_a_line_break_is_refused_at_its_field(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        for value in ["abc\r\nX-Other: 1", "line-one\nline-two", "trailing-newline-key\n"] {
            let r = o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "k", "purpose": "sandboxd", "value": value}))).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), ["value"]);
            let body = json!({"name": "eu", "address": peer.url, "new_key": value, "save_anyway": true});
            let r = o.owner(Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
            r.problem(422);
            assert_eq!(r.problem_fields(), ["new_key"]);
        }
        // Rotation too.
        let r = o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "k", "purpose": "sandboxd", "value": "a-good-key-0123456789"}))).await;
        let id = text(&r.json(), "id");
        let r = o.owner(Method::POST, &format!("/api/v1/vault/secrets/{id}/rotate"), Some(json!({"value": "new\nkey"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["value"]);
        // The pages say it inline.
        let r = app.web.post_form("/vault", &[("name", "k2"), ("purpose", "sandboxd"), ("value", "one\r\ntwo")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("secret-value").is_some_and(|m| m.contains("line break")), "{}", r.body);
        let r = app.web.post_form(&format!("/vault/{id}/rotate"), &[("value", "one\ntwo")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error(&format!("rotate-{id}")).is_some_and(|m| m.contains("line break")), "{}", r.body);
        let r = app.web.post_form("/sandboxes", &[("name", "eu"), ("kind", "sandboxd"), ("address", &peer.url), ("new_key", "one\ntwo"), ("save_anyway", "true")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("connection-new-key").is_some_and(|m| m.contains("line break")), "{}", r.body);
        // Nothing was stored but the good key.
        assert_eq!(app.scalar_strings("SELECT name FROM vault_secrets").await, ["k"]);
        assert!(app.scalar_strings("SELECT name FROM sandbox_connections").await.is_empty());
    }
}

db_test! {
    async fn a_secret_an_agents_manifest_uses_is_not_deleted(app: TestApp) {
        let o = Org::new(&app).await;
        let r = o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "deploy", "purpose": "other", "value": "deploy-value-0123456789"}))).await;
        let id = text(&r.json(), "id");
        let unused = text(&o.owner(Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "spare", "purpose": "other", "value": "spare-value-0123456789"}))).await.json(), "id");
        for name in ["builder bot", "reviewer"] {
            let manifest = json!({"entries": [{"kind": "env", "name": "DEPLOY_TOKEN", "secret_id": id}]});
            let r = o.owner(Method::POST, "/api/v1/agents", Some(json!({"name": name, "backend": "state", "scope": "conversation", "manifest": manifest}))).await;
            assert_eq!(r.status, 201, "{}", r.body);
        }
        // An agent whose manifest only mentions the id in a plain value does not hold it.
        let manifest = json!({"entries": [{"kind": "env", "name": "NOTE", "value": unused}]});
        let r = o.owner(Method::POST, "/api/v1/agents", Some(json!({"name": "noter", "backend": "state", "scope": "conversation", "manifest": manifest}))).await;
        assert_eq!(r.status, 201, "{}", r.body);

        let p = o.as_builder(Method::DELETE, &format!("/api/v1/vault/secrets/{id}"), None).await.problem(409);
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("“builder bot”") && detail.contains("“reviewer”"), "{detail}");
        let r = app.web.post_form(&format!("/vault/{id}/delete"), &[]).await;
        assert_eq!(r.status, 409, "{}", r.body);
        assert!(r.select_text("#vault-error").is_some_and(|m| m.contains("“reviewer”")), "{}", r.body);
        assert_eq!(app.scalar_strings(&format!("SELECT name FROM vault_secrets WHERE id = '{id}'")).await, ["deploy"]);
        // A secret no manifest gives its commands is deleted as before.
        assert_eq!(o.as_builder(Method::DELETE, &format!("/api/v1/vault/secrets/{unused}"), None).await.status, 204);
    }
}

db_test! {
    async fn editing_a_connection_keeps_a_default_runtime_only_the_host_offers(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        // A runtime this deployment does not ship (the host offered it when it was chosen).
        let conn = o.connect(json!({"name": "eu", "address": peer.url, "new_key": peer.token, "default_runtime": "host-only-rt", "save_anyway": true})).await;
        let id = text(&conn, "id");
        assert_eq!(conn["default_runtime"], "host-only-rt");
        let r = app.web.get(&format!("/sandboxes/{id}/edit")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.select_attr("#connection-runtime input[name=default_runtime][checked]", "value").as_deref(),
            Some("host-only-rt"),
            "{}",
            r.body
        );
        // "Test this host" in the dialog keeps the choice too.
        let r = app.web.post_form("/sandboxes/probe", &[("connection_id", &id), ("address", &peer.url), ("default_runtime", "host-only-rt")]).await;
        assert_eq!(
            r.select_attr("#connection-runtime input[name=default_runtime][checked]", "value").as_deref(),
            Some("host-only-rt"),
            "{}",
            r.body
        );
    }
}

db_test! {
    async fn two_registrations_of_one_address_at_once_leave_one_connection(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let port = peer.port();
        // Eight saves at once, each of the same host written its own way, each saved anyway.
        let saves = (0..8).map(|i| {
            let address = if i % 2 == 0 { format!("{}/", peer.url) } else { format!("HTTP://127.0.0.1:{port}") };
            let body = json!({"name": format!("host {i}"), "address": address, "new_key": peer.token, "save_anyway": true});
            o.owner(Method::POST, "/api/v1/sandbox-connections", Some(body))
        });
        let answers = futures_util::future::join_all(saves).await;
        let created = answers.iter().filter(|r| r.status == 201).count();
        let refused = answers.iter().filter(|r| r.status == 422).count();
        assert_eq!((created, refused), (1, 7), "{:?}", answers.iter().map(|r| (r.status, r.body.clone())).collect::<Vec<_>>());
        assert_eq!(app.count("sandbox_connections").await, 1);
    }
}

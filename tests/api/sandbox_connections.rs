//! Connections and "Test this host" against the real sandboxd peer.

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::helpers::{captured_logs, Client, TestApp};
use crate::peer::{self, Peer, PeerOptions};

async fn admin_token(app: &TestApp) -> String {
    app.setup_owner().await;
    app.web.create_token_in_page("ops", "owner").await
}

async fn probe(c: &Client, token: &str, body: serde_json::Value) -> serde_json::Value {
    let r = c.bearer(token, Method::POST, "/api/v1/sandbox-connections/probe", Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

fn aliases(probe: &serde_json::Value) -> Vec<(String, String)> {
    probe["runtimes"]
        .as_array()
        .expect("runtimes")
        .iter()
        .map(|m| (m["alias"].as_str().unwrap_or_default().to_string(), m["offered"].to_string()))
        .collect()
}

db_test! {
    async fn probing_with_a_vault_key_returns_the_hosts_runtimes(app: TestApp) {
        let peer = peer::shared().await;
        let t = admin_token(&app).await;
        // A key is sent only to the address it is bound to (a probe binds none).
        let secret = app.web.bearer(&t, Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "peer", "purpose": "sandboxd", "value": peer.token, "address": peer.url}))).await.json();
        let p = probe(&app.web, &t, json!({"address": peer.url, "credential_secret_id": secret["id"]})).await;
        assert_eq!(p["status"], "ok", "{p}");
        let marks = aliases(&p);
        assert!(marks.contains(&("workbench".into(), "true".into())), "{marks:?}");
        assert!(marks.contains(&("python".into(), "true".into())), "{marks:?}");
        assert_eq!(p["host_default_runtime"], "workbench");
    }
}

db_test! {
    async fn a_typed_address_without_a_key_is_never_sent_a_request(app: TestApp) {
        let t = admin_token(&app).await;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let address = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
        let p = probe(&app.web, &t, json!({"address": address})).await;
        assert_eq!(p["status"], "not_asked", "{p}");
        assert!(p["message"].as_str().is_some_and(|m| m.contains("No request was sent")));
        // Catalog aliases are offered unmarked.
        assert!(aliases(&p).iter().all(|(_, offered)| offered == "null"));
        // The probe has answered: any request it made would be waiting here.
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("a request arrived at the typed address: {other:?}"),
        }
        // The dialog page itself does not ask typed addresses either (only the compose ones).
        let r = app.web.get("/sandboxes/new").await;
        assert_eq!(r.status, 200);
        assert!(matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
    }
}

/// The peer under the name compose gives this deployment's own host (`localhost`, not `127.0.0.1`).
fn local_address(peer: &Peer) -> String {
    format!("http://localhost:{}", peer.port())
}

db_test! {
    async fn the_deployments_token_is_used_for_the_compose_address_only(app: TestApp)
        settings(&[
            ("SANDBOXD_TOKEN", &peer::shared().await.token),
            ("SANDBOXD_LOCAL_ADDRESSES", &format!("http://sandboxd:8080,{}", local_address(peer::shared().await))),
        ])
    {
        let peer = peer::shared().await;
        let local = local_address(peer);
        let t = admin_token(&app).await;
        let p = probe(&app.web, &t, json!({"address": local})).await;
        assert_eq!(p["status"], "ok", "{p}");
        // The same host under another name is a typed address: no key, no request.
        let p = probe(&app.web, &t, json!({"address": peer.url})).await;
        assert_eq!(p["status"], "not_asked", "{p}");

        // The dialog discovers the local service and prefills it.
        let r = app.web.get("/sandboxes/new").await;
        assert_eq!(r.select_attr("#connection-address", "value").as_deref(), Some(local.as_str()));
        assert!(r.select_text("#connection-address-hint").is_some_and(|h| h.contains("only its /healthz was asked")));

        // Saving without a key stores this deployment's token in the vault first.
        let r = app
            .web
            .post_form(
                "/sandboxes",
                &[("name", "local"), ("kind", "sandboxd"), ("address", &local), ("default_runtime", "workbench")],
            )
            .await;
        assert_eq!(r.status, 303, "{}", r.body);
        let list = app.web.bearer(&t, Method::GET, "/api/v1/sandbox-connections", None).await.json();
        assert_eq!(list[0]["credential"], "in the vault");
        assert_eq!(list[0]["is_default"], true);
        assert_eq!(
            app.scalar_strings("SELECT name FROM vault_secrets").await,
            vec!["sandboxd token (this deployment)".to_string()]
        );
        // A typed address saved without a key: refused (the host cannot be asked), unless saved anyway.
        let typed = [("name", "typed"), ("kind", "sandboxd"), ("address", peer.url.as_str())];
        let r = app.web.post_form("/sandboxes", &typed).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("connection-new-key").is_some_and(|m| m.contains("No key")), "{}", r.body);
        let r = app.web.post_form("/sandboxes", &[&typed[..], &[("save_anyway", "1")]].concat()).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let page = app.web.get("/sandboxes").await;
        let typed_id = app.scalar_strings("SELECT id FROM sandbox_connections WHERE name = 'typed'").await.remove(0);
        assert_eq!(page.select_attr(&format!("#health-{typed_id}"), "data-health").as_deref(), Some("no key"));
        assert!(!page.body.contains(&peer.token) && !captured_logs().contains(&peer.token));
    }
}

db_test! {
    async fn a_wrong_key_is_credential_refused(app: TestApp) {
        let peer = peer::shared().await;
        let t = admin_token(&app).await;
        let p = probe(&app.web, &t, json!({"address": peer.url, "new_key": "not-the-token"})).await;
        assert_eq!(p["status"], "failed");
        assert_eq!(p["health"], "key_refused");
        assert!(p["message"].as_str().is_some_and(|m| m.starts_with("Credential refused")), "{p}");
    }
}

db_test! {
    async fn a_port_serving_html_and_a_silent_address_get_clear_messages(app: TestApp) {
        let t = admin_token(&app).await;
        // Our own console serves HTML: it answers, but not like a sandbox service.
        let p = probe(&app.web, &t, json!({"address": format!("{}/login", app.address), "new_key": "k"})).await;
        assert_eq!(p["status"], "failed");
        assert!(
            p["message"].as_str().is_some_and(|m| m.contains("not like a sandbox service") && m.contains("check the port")),
            "{p}"
        );
        // A port nobody listens on.
        let port = peer::free_port().expect("port");
        let p = probe(&app.web, &t, json!({"address": format!("http://127.0.0.1:{port}"), "new_key": "k"})).await;
        assert_eq!(p["status"], "failed");
        assert!(p["message"].as_str().is_some_and(|m| m.contains("did not answer")), "{p}");
        // A link-local address is refused before anything is sent.
        let r = app
            .web
            .bearer(
                &t,
                Method::POST,
                "/api/v1/sandbox-connections/probe",
                Some(json!({"address": "http://169.254.169.254/", "new_key": "k"})),
            )
            .await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["address"]);
    }
}

db_test! {
    async fn an_older_sandboxd_is_a_version_mismatch_without_its_address(app: TestApp) {
        let old = Peer::start(PeerOptions::default().package_version("0.2.36")).await.expect("0.2.36 peer");
        let t = admin_token(&app).await;
        let p = probe(&app.web, &t, json!({"address": old.url, "new_key": old.token})).await;
        assert_eq!(p["status"], "failed");
        let m = p["message"].as_str().expect("message");
        assert!(
            m.contains("/workspaces/trees")
                && m.contains("expected 0.2.37")
                && m.contains("ghcr.io/vstorm-co/sandboxd:0.2.37"),
            "{m}"
        );
        assert!(!m.contains(&old.url) && !m.contains("127.0.0.1"), "the address leaked: {m}");
        let logs = captured_logs();
        assert!(
            logs.lines().any(|l| l.contains("sandboxd_version_mismatch") && l.contains(&old.url)),
            "no log line with the address"
        );
    }
}

db_test! {
    async fn the_first_connection_is_the_default_and_there_is_only_ever_one(app: TestApp) {
        let peer = peer::shared().await;
        let t = admin_token(&app).await;
        let a = app.web.bearer(&t, Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "a", "address": peer.url, "new_key": peer.token}))).await;
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.json()["is_default"], true);
        assert_eq!(a.json()["credential"], "in the vault");
        // An unknown kind is refused at `kind`, nothing saved.
        let day = app.web.bearer(&t, Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "d", "kind": "kubernetes", "address": "http://h:1"}))).await;
        day.problem(422);
        assert_eq!(day.problem_fields(), vec!["kind"]);
        // The same host under its other name (one address is one connection; another spelling of
        // a connected host is warned about and saved anyway).
        let localhost = format!("http://localhost:{}", peer.port());
        let b = app.web.bearer(&t, Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "b", "address": localhost, "new_key": peer.token, "save_anyway": true}))).await.json();
        assert_eq!(b["is_default"], false);
        assert_eq!(b["credential"], "in the vault");
        let dup = app.web.bearer(&t, Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "a", "address": "http://h:1"}))).await;
        dup.problem(422);
        assert_eq!(dup.problem_fields(), vec!["name"]);
        let b_id = b["id"].as_str().expect("id");
        let r = app.web.bearer(&t, Method::PATCH, &format!("/api/v1/sandbox-connections/{b_id}"), Some(json!({"is_default": true}))).await;
        assert_eq!(r.json()["is_default"], true);
        let defaults = app.scalar_strings("SELECT name FROM sandbox_connections WHERE is_default = 1").await;
        assert_eq!(defaults, vec!["b".to_string()]);
        // The database itself refuses a second default.
        let mut c = app.state.db.conn().await.expect("conn");
        let err = sqlx::query("UPDATE sandbox_connections SET is_default = 1").execute(&mut *c).await;
        assert!(err.is_err(), "two defaults were accepted");
        // Deleting the default hands the role on.
        assert_eq!(app.web.bearer(&t, Method::DELETE, &format!("/api/v1/sandbox-connections/{b_id}"), None).await.status, 204);
        assert_eq!(app.scalar_strings("SELECT name FROM sandbox_connections WHERE is_default = 1").await, vec!["a".to_string()]);
        // Switch off and on.
        let a_id = a.json()["id"].as_str().expect("id").to_string();
        let r = app.web.bearer(&t, Method::PATCH, &format!("/api/v1/sandbox-connections/{a_id}"), Some(json!({"is_enabled": false}))).await;
        assert_eq!(r.json()["is_enabled"], false);
        let probe = app.web.bearer(&t, Method::POST, &format!("/api/v1/sandbox-connections/{a_id}/probe"), None).await.json();
        assert_eq!(probe["status"], "ok", "the stored key is used: {probe}");
    }
}

db_test! {
    async fn bad_connection_input_is_shown_inline_in_the_dialog(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/sandboxes", &[("name", ""), ("kind", "docker"), ("address", "http://user:pw@host:8080")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("connection-name").is_some());
        assert!(r.field_error("connection-kind").is_some());
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("credentials")));
        let r = app.web.post_form("/sandboxes", &[("name", "x"), ("kind", "sandboxd"), ("address", "http://metadata.google.internal/")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("metadata")));
        let r = app.web.post_form("/sandboxes", &[("name", "x"), ("kind", "sandboxd"), ("address", "http://h:1"), ("credential_secret_id", "not-a-secret")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("connection-credential").is_some());
        assert_eq!(app.count("sandbox_connections").await, 0);
        assert_eq!(app.count("vault_secrets").await, 0);
        // An htmx post answers the form alone, for the dialog.
        let tok = app.web.csrf().await;
        let r = app.web.send(app.web.http.post(app.web.url("/sandboxes")).header("hx-request", "true").header("hx-target", "connection-form").header("x-csrf-token", tok).form(&[("name", ""), ("kind", "sandboxd")])).await;
        assert_eq!(r.status, 422);
        assert!(r.body.trim_start().starts_with("<div id=\"connection-form\">"), "{}", &r.body[..80.min(r.body.len())]);
    }
}

db_test! {
    async fn the_token_appears_in_no_response_page_or_log_line(app: TestApp) {
        let peer = peer::shared().await;
        let t = admin_token(&app).await;
        let r = app.web.post_form("/sandboxes", &[("name", "p"), ("kind", "sandboxd"), ("address", &peer.url), ("new_key", &peer.token), ("default_runtime", "python")]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let id = app.scalar_strings("SELECT id FROM sandbox_connections").await.remove(0);
        app.web.get("/sandboxes").await;
        app.web.get(&format!("/sandboxes/{id}/edit")).await;
        app.web.post_form("/sandboxes/probe", &[("address", &peer.url), ("connection_id", &id), ("default_runtime", "python")]).await;
        app.web.bearer(&t, Method::GET, "/api/v1/sandbox-connections", None).await;
        app.web.bearer(&t, Method::POST, &format!("/api/v1/sandbox-connections/{id}/probe"), None).await;
        app.web.bearer(&t, Method::GET, "/api/v1/vault/secrets", None).await;
        app.web.get("/vault").await;
        app.web.get("/audit").await;
        assert!(!app.web.all_bodies().contains(&peer.token), "a response contains the sandbox token");
        assert!(!captured_logs().contains(&peer.token), "a log line contains the sandbox token");
    }
}

db_test! {
    async fn another_organizations_connection_is_404_everywhere(app: TestApp) {
        let peer = peer::shared().await;
        let t = admin_token(&app).await;
        let a = app.web.bearer(&t, Method::POST, "/api/v1/sandbox-connections", Some(json!({"name": "a", "address": peer.url, "new_key": peer.token}))).await.json();
        let id = a["id"].as_str().expect("id").to_string();
        let b = app.other_org_user("b@example.com", "B").await;
        let bt = b.create_token_in_page("b", "owner").await;
        for (m, path, body) in [
            (Method::GET, format!("/api/v1/sandbox-connections/{id}"), None),
            (Method::PATCH, format!("/api/v1/sandbox-connections/{id}"), Some(json!({"name": "stolen"}))),
            (Method::DELETE, format!("/api/v1/sandbox-connections/{id}"), None),
            (Method::POST, format!("/api/v1/sandbox-connections/{id}/probe"), None),
        ] {
            b.bearer(&bt, m, &path, body).await.problem(404);
        }
        assert_eq!(b.get(&format!("/sandboxes/{id}/edit")).await.status, 404);
        for action in ["enable", "disable", "default", "delete"] {
            assert_eq!(b.post_form(&format!("/sandboxes/{id}/{action}"), &[]).await.status, 404, "{action}");
        }
        assert_eq!(b.post_form(&format!("/sandboxes/{id}"), &[("name", "x"), ("kind", "sandboxd"), ("address", "http://h:1")]).await.status, 404);
        // Probing with another organization's stored key or connection is refused too.
        let r = b.post_form("/sandboxes/probe", &[("address", &peer.url), ("connection_id", &id)]).await;
        assert_eq!(r.status, 404);
        let list = b.bearer(&bt, Method::GET, "/api/v1/sandbox-connections", None).await.json();
        assert_eq!(list.as_array().map(Vec::len), Some(0));
        assert_eq!(app.scalar_strings("SELECT name FROM sandbox_connections").await, vec!["a".to_string()]);
    }
}

db_test! {
    async fn operators_see_connections_and_members_do_not(app: TestApp) {
        app.setup_owner().await;
        let op = app.member_with_role("op@example.com", "operator").await;
        let r = op.get("/sandboxes").await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#add-connection").is_none(), "operators cannot add");
        assert!(r.select_text(".empty-state h2").is_some_and(|t| t.contains("No sandbox host")));
        assert_eq!(op.get("/sandboxes/new").await.status, 403);
        assert_eq!(op.post_form("/sandboxes", &[("name", "x"), ("kind", "sandboxd"), ("address", "http://h:1")]).await.status, 403);
        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(member.get("/sandboxes").await.status, 403);
        member.api(Method::GET, "/api/v1/sandbox-connections", None).await.problem(403);
    }
}

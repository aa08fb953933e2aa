//! Honest connection health (issue 9, Connections): a save checks the host and is refused with
//! the probe's reason unless saved anyway; the table shows each row's live health without waiting
//! for a host; the dialog puts each message at its field; the Vault says which connections use a
//! key; a connection is deleted with its key when asked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{Client, Resp, TestApp};
use crate::peer;
use crate::support::connections::same_host_again;
use crate::support::htmx::hx_get;
use crate::support::sandbox_hosts::dead_address;

async fn owner_token(app: &TestApp) -> String {
    app.setup_owner().await;
    app.web.create_token_in_page("ops", "owner").await
}

async fn create(app: &TestApp, token: &str, body: Value) -> Resp {
    app.web.bearer(token, Method::POST, "/api/v1/sandbox-connections", Some(body)).await
}

fn id_of(r: &Resp) -> String {
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["id"].as_str().expect("id").to_string()
}

/// The Connections table's poll, as htmx sends it.
async fn health_poll(c: &Client) -> Resp {
    hx_get(c, "/sandboxes/health").await
}

fn health_of(r: &Resp, id: &str) -> Option<String> {
    r.select_attr(&format!("#health-{id}"), "data-health")
}

db_test! {
    async fn a_save_the_host_refuses_is_a_422_with_the_probes_reason_unless_saved_anyway(app: TestApp) {
        let peer = peer::shared().await;
        let t = owner_token(&app).await;

        // A wrong pasted key: refused at `new_key`, in the host's words; nothing is written.
        let localhost = format!("http://localhost:{}", peer.port());
        let wrong = json!({"name": "wrong", "address": localhost, "new_key": "not-the-token-0123456789"});
        let r = create(&app, &t, wrong.clone()).await;
        let p = r.problem(422);
        assert_eq!(p["type"], "https://agenticos.dev/problems/host-check-failed", "{p}");
        assert_eq!(r.problem_fields(), vec!["new_key"]);
        assert!(p["detail"].as_str().is_some_and(|d| d.starts_with("Credential refused")), "{p}");
        assert_eq!(app.count("sandbox_connections").await, 0);
        assert_eq!(app.count("vault_secrets").await, 0, "the pasted key was not kept");
        // Its audit line names no key that was never stored (issue 49): a pasted one.
        let probed = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'connection.probed'").await;
        assert!(probed.len() == 1 && probed[0].contains("with a pasted key before saving"), "{probed:?}");
        assert!(!probed[0].contains("vault key"), "{probed:?}");

        // Saved anyway: 201, and the table shows why at once.
        let mut anyway = wrong.clone();
        anyway["save_anyway"] = json!(true);
        let id = id_of(&create(&app, &t, anyway).await);
        let page = app.web.get("/sandboxes").await;
        assert_eq!(health_of(&page, &id).as_deref(), Some("key refused"), "{}", page.body);
        let secret = app.scalar_strings("SELECT id FROM vault_secrets").await.remove(0);
        let rotate = format!("#health-{id} a[href='/vault#rotate-{secret}']");
        assert!(page.select_text(&rotate).is_some_and(|t| t == "Rotate key"), "{}", page.body);
        // The audit log says it was saved anyway, and what the check found.
        let created = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'connection.created'").await;
        assert!(created[0].contains("saved anyway: key refused"), "{created:?}");

        // Nothing answers: refused at `address`; a stored key the host refuses: at `credential_secret_id`.
        let r = create(&app, &t, json!({"name": "dead", "address": dead_address(), "new_key": peer.token})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["address"]);
        assert!(r.json()["detail"].as_str().is_some_and(|d| d.contains("did not answer")), "{}", r.body);
        // (One address is one connection: the row saved anyway goes first.)
        let r = app.web.bearer(&t, Method::DELETE, &format!("/api/v1/sandbox-connections/{id}"), None).await;
        assert_eq!(r.status, 204, "{}", r.body);
        let r = create(&app, &t, json!({"name": "again", "address": localhost, "credential_secret_id": secret})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["credential_secret_id"]);

        // A default runtime the host does not offer: at `default_runtime`.
        let r = create(&app, &t, json!({"name": "ghostly", "address": peer.url, "new_key": peer.token, "default_runtime": "ghost"})).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["default_runtime"]);
        assert!(r.json()["detail"].as_str().is_some_and(|d| d.contains("“ghost”")), "{}", r.body);

        // A good connection is saved; editing it to a runtime the host lacks is refused the same way.
        let good = id_of(&create(&app, &t, json!({"name": "good", "address": peer.url, "new_key": peer.token})).await);
        let path = format!("/api/v1/sandbox-connections/{good}");
        let r = app.web.bearer(&t, Method::PATCH, &path, Some(json!({"default_runtime": "ghost"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["default_runtime"]);
        let r = app.web.bearer(&t, Method::PATCH, &path, Some(json!({"default_runtime": "ghost", "save_anyway": true}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let page = app.web.get("/sandboxes").await;
        assert_eq!(health_of(&page, &good).as_deref(), Some("no runtime"));
        assert_eq!(app.count("sandbox_connections").await, 1);
        assert!(!app.web.all_bodies().contains(&peer.token), "a response carried the token");
    }
}

db_test! {
    async fn the_dialog_shows_a_refused_save_at_its_field_and_offers_save_anyway(app: TestApp) {
        let peer = peer::shared().await;
        app.setup_owner().await;
        let fields = [("name", "eu"), ("kind", "sandboxd"), ("address", peer.url.as_str()), ("new_key", "not-the-token-0123456789"), ("default_runtime", "python")];
        let r = app.web.post_form("/sandboxes", &fields).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("connection-new-key").is_some_and(|m| m.starts_with("Credential refused")), "{}", r.body);
        assert!(r.field_error("connection-address").is_none() && r.field_error("connection-runtime").is_none(), "{}", r.body);
        assert!(r.select_text("#save-refused").is_some_and(|m| m.contains("New token")), "{}", r.body);
        assert_eq!(r.select_attr("#save-anyway", "value").as_deref(), Some("1"));
        // The host answered with its policy refused: the runtime cards stay unmarked, python still chosen.
        assert_eq!(r.select_attr("#connection-runtime-python", "checked").as_deref(), Some(""));
        assert_eq!(app.count("sandbox_connections").await, 0);

        let r = app.web.post_form("/sandboxes", &[&fields[..], &[("save_anyway", "1")]].concat()).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let id = app.scalar_strings("SELECT id FROM sandbox_connections").await.remove(0);
        let page = app.web.get("/sandboxes").await;
        assert_eq!(health_of(&page, &id).as_deref(), Some("key refused"));
        let edit = format!("#health-{id} a[href='/sandboxes/{id}/edit']");
        assert!(page.select_text(&edit).is_some(), "an Edit link fixes it: {}", page.body);
    }
}

db_test! {
    async fn test_this_host_redraws_the_whole_form_with_each_message_at_its_field(app: TestApp) {
        let peer = peer::shared().await;
        app.setup_owner().await;
        let hx = |fields: Vec<(&'static str, String)>| {
            let web = &app.web;
            async move {
                let tok = web.csrf().await;
                let rb = web
                    .http
                    .post(web.url("/sandboxes/probe"))
                    .header("hx-request", "true")
                    .header("hx-target", "connection-form")
                    .header("x-csrf-token", tok)
                    .form(&fields);
                web.send(rb).await
            }
        };
        // An address error: at Address only, the whole form comes back.
        let r = hx(vec![("name", "eu".into()), ("address", "http://169.254.169.254/".into()), ("new_key", "k".into())]).await;
        assert_eq!(r.status, 200);
        assert!(r.body.trim_start().starts_with("<div id=\"connection-form\">"), "{}", r.body);
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("link-local")), "{}", r.body);
        assert_eq!(r.select_attr("#connection-name", "value").as_deref(), Some("eu"), "the form keeps what was typed");
        assert!(r.select_text("#probe-result").is_none() && r.field_error("connection-runtime").is_none());

        // A wrong key: at the key, never at Default runtime, and no address message left over.
        let r = hx(vec![("address", peer.url.clone()), ("new_key", "not-the-token-0123456789".into()), ("default_runtime", "python".into())]).await;
        assert!(r.field_error("connection-new-key").is_some_and(|m| m.contains("Credential refused")), "{}", r.body);
        assert!(r.field_error("connection-address").is_none() && r.field_error("connection-runtime").is_none(), "{}", r.body);

        // The right key: the outcome, the cards marked, no message anywhere.
        let r = hx(vec![("address", peer.url.clone()), ("new_key", peer.token.clone()), ("default_runtime", "python".into())]).await;
        assert!(r.select_text("#probe-result").is_some_and(|m| m.contains("accepted the key")), "{}", r.body);
        assert!(r.select_all(".field-error").is_empty(), "{}", r.body);
        assert_eq!(r.select_attr("#connection-runtime-python-card", "data-mark").as_deref(), Some("offered by this host"));
        let card = r.select_text("#connection-runtime-workbench-card").expect("the workbench card");
        assert!(card.contains("builds on first use") && card.contains("base image python:3.12"), "{card}");
        assert!(r.select_text("#connection-runtime-host-card").is_some_and(|t| t.contains("(workbench)")), "the host's default is named");
        assert!(!r.body.contains(&peer.token), "the pasted token came back");

        // A runtime the host does not offer: at Default runtime.
        let r = hx(vec![("address", peer.url.clone()), ("new_key", peer.token.clone()), ("default_runtime", "ghost".into())]).await;
        assert!(r.field_error("connection-runtime").is_some_and(|m| m.contains("“ghost”")), "{}", r.body);
        assert!(r.field_error("connection-new-key").is_none());

        // The one credential control: the key's warning and the header it is sent as.
        let r = app.web.get("/sandboxes/new").await;
        let warning = r.select_text("#connection-token-warning").expect("the warning");
        assert!(warning.contains("root on the host") && warning.contains("X-Sandbox-Token"), "{warning}");
        assert_eq!(r.select_attr("#connection-credential option[value='']", "value").as_deref(), Some(""));
        // Daytona is offered; choosing it redraws the form in Daytona's words (its key going only
        // to its API URL: browser_attach's dialog test), so sandboxd's form says the fields follow
        // the kind and names no Daytona key.
        assert_eq!(r.select_attr("#connection-kind option[value='daytona']", "disabled"), None);
        let hint = r.select_text("#connection-kind-hint").expect("the kind's hint");
        assert!(hint.contains("Changing the kind changes the fields below") && !hint.contains("API URL"), "{hint}");
    }
}

db_test! {
    async fn the_table_never_waits_for_a_host_and_its_poll_asks_each_host_briefly_and_rarely(app: TestApp) {
        let peer = peer::shared().await;
        let t = owner_token(&app).await;
        let org_id = app.scalar_strings("SELECT id FROM organizations").await.remove(0);
        // A host that accepts connections and never answers, counting them.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let silent_url = format!("http://127.0.0.1:{}", silent.local_addr().expect("addr").port());
        let accepted = Arc::new(AtomicUsize::new(0));
        let seen = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = silent.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                held.push(socket);
            }
        });
        let good = id_of(&create(&app, &t, json!({"name": "good", "address": peer.url, "new_key": peer.token})).await);
        // The silent host's row is written directly (a save would ask it), with a key for its address.
        let key = app
            .web
            .bearer(&t, Method::POST, "/api/v1/vault/secrets", Some(json!({"name": "silent key", "purpose": "sandboxd", "value": "some-token-0123456789", "address": silent_url})))
            .await
            .json()["id"]
            .as_str()
            .expect("id")
            .to_string();
        let slow = uuid::Uuid::new_v4().to_string();
        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query(
            "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
             default_runtime, is_default, is_enabled, created_at, updated_at) VALUES ($1, $2, 'slow', 'sandboxd', $3, $4, NULL, 0, 1, 1, 1)",
        )
        .bind(&slow).bind(&org_id).bind(&silent_url).bind(&key)
        .execute(&mut *c).await.expect("the slow row");
        drop(c);
        // The same host under its other name (one address is one connection; the same host under
        // another spelling is warned about and saved anyway).
        let localhost = format!("http://localhost:{}", peer.port());
        let off = id_of(&create(&app, &t, json!({"name": "off", "address": localhost, "new_key": peer.token, "save_anyway": true})).await);
        let r = app.web.bearer(&t, Method::PATCH, &format!("/api/v1/sandbox-connections/{off}"), Some(json!({"is_enabled": false}))).await;
        assert_eq!(r.status, 200, "{}", r.body);

        // The page renders without asking the silent host: its cell is still checking, and polls.
        let page = app.web.get("/sandboxes").await;
        assert_eq!(page.status, 200);
        assert_eq!(accepted.load(Ordering::SeqCst), 0, "the page asked the silent host");
        assert_eq!(health_of(&page, &slow).as_deref(), Some("checking"));
        assert_eq!(health_of(&page, &good).as_deref(), Some("healthy"), "the save's check is reused");
        assert_eq!(health_of(&page, &off).as_deref(), Some("switched off"));
        let poll = page.select_attr("#connections-health-poll", "hx-trigger").expect("the poller");
        assert!(poll.starts_with("load") && poll.contains("every 10s"), "{poll}");

        // The poll: every cell, out of band; the silent host is "no answer" within the bound.
        let r = health_poll(&app.web).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.header("vary").as_deref(), Some("HX-Request"));
        assert_eq!(health_of(&r, &slow).as_deref(), Some("no answer"), "{}", r.body);
        assert!(r.select_text(&format!("#health-{slow}")).is_some_and(|t| t.contains("within 4 seconds")), "{}", r.body);
        assert_eq!(health_of(&r, &good).as_deref(), Some("healthy"));
        assert_eq!(r.select_attr(&format!("#health-{good}"), "hx-swap-oob").as_deref(), Some("true"));
        let asked = accepted.load(Ordering::SeqCst);
        assert!(asked > 0, "the poll asked the silent host");
        // Asked again at once: the answer is reused, the host is not asked again.
        let r = health_poll(&app.web).await;
        assert_eq!(health_of(&r, &slow).as_deref(), Some("no answer"));
        assert_eq!(accepted.load(Ordering::SeqCst), asked, "the cached answer was not reused");
        // Without htmx, the poll's URL is the table.
        let r = app.web.get("/sandboxes/health").await;
        assert_eq!(r.status, 303);
        assert_eq!(r.location().as_deref(), Some("/sandboxes"));
        // An operator sees the health, without the links that change things.
        let op = app.member_with_role("op@example.com", "operator").await;
        let r = op.get("/sandboxes").await;
        assert_eq!(health_of(&r, &off).as_deref(), Some("switched off"));
        assert!(r.select_text(&format!("#health-{off} form")).is_none(), "{}", r.body);
        let r = app.web.get("/sandboxes").await;
        assert!(r.select_text(&format!("#health-{off} form button")).is_some_and(|b| b == "Switch on"), "{}", r.body);
        // Once in its row (issue 49: it showed twice), and the rows' Delete is no solid red button.
        let switch_on = r.select_all(&format!("#connection-{off} button")).into_iter().filter(|b| b == "Switch on").count();
        assert_eq!(switch_on, 1, "{}", r.body);
        assert!(r.select_all("#connections-table .btn-danger").is_empty(), "{}", r.body);
    }
}

db_test! {
    async fn the_vault_names_each_keys_connections_and_a_connection_is_deleted_with_its_key(app: TestApp) {
        let peer = peer::shared().await;
        let t = owner_token(&app).await;
        let a = create(&app, &t, json!({"name": "a", "address": peer.url, "new_key": peer.token})).await;
        let (a_id, shared_key) = (id_of(&a), a.json()["credential_secret_id"].as_str().expect("key").to_string());
        // Two connections share a key only in an old database (one address is one connection
        // now, and a key goes to one address): written directly.
        let b_id = same_host_again(&app, &a_id, "b").await;
        let localhost = format!("http://localhost:{}", peer.port());
        let c = create(&app, &t, json!({"name": "c", "address": localhost, "new_key": peer.token, "save_anyway": true})).await;
        let (c_id, own_key) = (id_of(&c), c.json()["credential_secret_id"].as_str().expect("key").to_string());

        let vault = app.web.get("/vault").await;
        let used_by = |key: &str| vault.select_text(&format!("#secret-{key} .secret-used-by")).unwrap_or_default();
        assert_eq!(used_by(&shared_key), "a, b");
        assert_eq!(used_by(&own_key), "c");
        let link = format!("#secret-{shared_key} .secret-used-by a[href='/sandboxes#connection-{b_id}']");
        assert!(vault.select_text(&link).is_some(), "{}", vault.body);

        // The confirmation offers the key only when no other connection uses it.
        let r = app.web.get(&format!("/sandboxes/{a_id}/delete")).await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#delete-key").is_none());
        assert!(r.select_text("#delete-key-kept").is_some_and(|t| t.contains("“b”")), "{}", r.body);
        let r = app.web.get(&format!("/sandboxes/{c_id}/delete")).await;
        assert_eq!(r.select_attr("#delete-key", "name").as_deref(), Some("delete_key"));
        let r = app.web.send(app.web.http.get(app.web.url(&format!("/sandboxes/{c_id}/delete"))).header("hx-request", "true")).await;
        assert!(r.body.trim_start().starts_with("<dialog"), "htmx gets the dialog: {}", r.body);

        // Deleted with its key: both gone, both audited.
        let r = app.web.post_form(&format!("/sandboxes/{c_id}/delete"), &[("delete_key", "1")]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let keys = app.scalar_strings("SELECT id FROM vault_secrets").await;
        assert_eq!(keys, vec![shared_key.clone()]);
        let deleted = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'vault.secret_deleted'").await;
        assert_eq!(deleted, vec!["with the connection “c”".to_string()]);
        let gone = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'connection.deleted'").await;
        assert!(gone[0].contains("deleted too"), "{gone:?}");

        // Asked to, a key another connection uses stays, and the flash says so.
        let r = app.web.post_form(&format!("/sandboxes/{a_id}/delete"), &[("delete_key", "1")]).await;
        assert_eq!(r.status, 303);
        let flash = app.web.get("/sandboxes").await;
        assert!(flash.select_text(".flash").is_some_and(|f| f.contains("stays in the vault") && f.contains("“b”")), "{}", flash.body);
        assert_eq!(app.count("vault_secrets").await, 1);
        // Without the box ticked the key stays; through the API `delete_key=true` deletes it.
        let other = app.other_org_user("x@example.com", "X").await;
        assert_eq!(other.get(&format!("/sandboxes/{b_id}/delete")).await.status, 404);
        let r = app.web.bearer(&t, Method::DELETE, &format!("/api/v1/sandbox-connections/{b_id}?delete_key=true"), None).await;
        assert_eq!(r.status, 204, "{}", r.body);
        assert_eq!(app.count("vault_secrets").await, 0);
        assert_eq!(app.count("sandbox_connections").await, 0);
    }
}

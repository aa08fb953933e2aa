//! Issue 45, item 2: one host under two spellings. A host is known by its identity, not by how its
//! address is spelled: `localhost`, `127.0.0.1` and `[::1]`, a trailing dot, an explicit default
//! port, and a second address of the same host (a port forward, known by a session both list). A
//! new address reaching a connected host is warned about (dialog and API) naming that connection;
//! a session shows once, under the connection its key names, and no other connection closes it or
//! deletes its files; the dialog does not offer this deployment's service again under another of its
//! compose addresses. Against the real sandboxd peer, on both databases.

use reqwest::Method;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};

use crate::db_test;
use crate::peer::{self, Peer};
use crate::support::sandbox_hosts::dead_address;
use crate::support::{service_agent, Org};

/// A port forward to `peer` on another loopback port (a second address of the same host, as a
/// proxy or an SSH tunnel gives one): every connection is copied both ways until either side
/// closes. Its address.
async fn forward_to(peer: &Peer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let target = format!("127.0.0.1:{}", peer.port());
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

async fn create(o: &Org<'_>, body: Value) -> crate::helpers::Resp {
    o.call(Method::POST, "/api/v1/sandbox-connections", Some(body)).await
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("id in {v}")).to_string()
}

/// (connection id, session id) of each session the API lists.
async fn listed(o: &Org<'_>) -> Vec<(String, String)> {
    let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
    let mut out = Vec::new();
    for h in v["connections"].as_array().expect("connections") {
        for s in h["sessions"].as_array().expect("sessions") {
            out.push((
                h["connection_id"].as_str().expect("id").to_string(),
                s["session_id"].as_str().expect("id").to_string(),
            ));
        }
    }
    out
}

async fn key_of(o: &Org<'_>, run: &str) -> String {
    o.ws(run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("session key").to_string()
}

db_test! {
    async fn every_spelling_of_a_connected_host_is_warned_naming_the_connection(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let port = peer.port();
        let eu = create(&o, json!({"name": "eu", "address": peer.url, "new_key": peer.token})).await;
        assert_eq!(eu.status, 201, "{}", eu.body);

        // localhost, a trailing dot, IPv6 loopback (the peer listens on 127.0.0.1 only: the host
        // check fails there, and the warning is said beside its failure).
        for (spelling, field) in [
            (format!("http://localhost:{port}"), "address"),
            (format!("http://LocalHost.:{port}/"), ""),
            (format!("http://[::1]:{port}"), ""),
        ] {
            let r = create(&o, json!({"name": "again", "address": spelling, "new_key": peer.token})).await;
            let p = r.problem(422);
            let detail = p["detail"].as_str().unwrap_or_default();
            assert!(detail.contains("same host as the connection “eu”"), "{spelling}: {p}");
            if !field.is_empty() {
                assert_eq!(r.problem_fields(), [field], "{spelling}: {p}");
            }
        }
        assert_eq!(app.count("sandbox_connections").await, 1, "nothing saved");

        // The dialog says it at the address, naming the connection, and offers "Save anyway".
        let localhost = format!("http://localhost:{port}");
        let form = [("name", "eu via localhost"), ("kind", "sandboxd"), ("address", localhost.as_str()), ("new_key", peer.token.as_str())];
        let r = app.web.post_form("/sandboxes", &form).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("connection-address").is_some_and(|m| m.contains("“eu”")), "{}", r.body);
        assert!(r.select_text("#save-anyway").is_some(), "{}", r.body);
        // Saved anyway, it is kept, and the audit log says beside which connection.
        let r = app.web.post_form("/sandboxes", &[&form[..], &[("save_anyway", "1")]].concat()).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let detail = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'connection.created' AND target = 'eu via localhost'").await;
        assert!(detail.len() == 1 && detail[0].contains("beside “eu”"), "{detail:?}");

        // An explicit default port is the default port: `http://localhost:80` is `http://127.0.0.1`.
        let web = create(&o, json!({"name": "web", "address": "http://127.0.0.1", "new_key": peer.token, "save_anyway": true})).await;
        assert_eq!(web.status, 201, "{}", web.body);
        let r = create(&o, json!({"name": "web again", "address": "http://localhost:80/", "new_key": peer.token})).await;
        let p = r.problem(422);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("same host as the connection “web”")), "{p}");

        // An edit onto another spelling is warned about too; one that keeps its address is not.
        let path = format!("/api/v1/sandbox-connections/{}", id_of(&web.json()));
        let r = o.call(Method::PATCH, &path, Some(json!({"address": format!("http://localhost.:{port}"), "new_key": peer.token}))).await;
        let p = r.problem(422);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("“eu”")), "{p}");
        let r = o.call(Method::PATCH, &format!("/api/v1/sandbox-connections/{}", id_of(&eu.json())), Some(json!({"name": "eu-1"}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

db_test! {
    async fn a_second_address_of_the_host_is_known_by_a_session_both_list(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let eu = create(&o, json!({"name": "eu", "address": peer.url, "new_key": peer.token})).await;
        assert_eq!(eu.status, 201, "{}", eu.body);
        let agent = o.agent(service_agent("coder", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "a.txt", "x").await.status, 204);
        let key = key_of(&o, &run).await;

        // Another port, another canonical form, another resolution: the same host all the same.
        let forwarded = forward_to(peer).await;
        let r = create(&o, json!({"name": "tunnel", "address": forwarded, "new_key": peer.token})).await;
        let p = r.problem(422);
        assert_eq!(r.problem_fields(), ["address"], "{p}");
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("same host as the connection “eu”") && detail.contains("both list the session"), "{p}");
        assert_eq!(app.count("sandbox_connections").await, 1);

        // Saved anyway, the Running tab lists the session once, under the connection that opened
        // it, and marks the second connection as the same host.
        let r = create(&o, json!({"name": "tunnel", "address": forwarded, "new_key": peer.token, "save_anyway": true})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let tunnel = id_of(&r.json());
        let ours: Vec<(String, String)> = listed(&o).await.into_iter().filter(|(_, s)| *s == key).collect();
        assert_eq!(ours, [(id_of(&eu.json()), key.clone())]);
        let page = app.web.get("/sandboxes/running").await;
        assert!(page.select_text(&format!("#host-{tunnel} .host-same")).is_some_and(|t| t.contains("“eu”")), "{}", page.body);

        // The connection that opened it can no longer read the host (its address changed behind
        // our back): the session shows under the second connection marked as the first one's,
        // offered for nothing there, and the second connection still may not close it.
        let eu = id_of(&eu.json());
        let mut c = app.state.db.conn().await.expect("conn");
        sqlx::query("UPDATE sandbox_connections SET address = $1, updated_at = updated_at + 1 WHERE id = $2")
            .bind(dead_address())
            .bind(&eu)
            .execute(&mut *c)
            .await
            .expect("moved");
        drop(c);
        let v = o.call(Method::GET, "/api/v1/sandbox-sessions", None).await.json();
        let hosts = v["connections"].as_array().expect("connections");
        let under_tunnel = hosts.iter().find(|h| h["connection_id"] == tunnel.as_str()).expect("the tunnel");
        let s = under_tunnel["sessions"].as_array().expect("sessions").iter().find(|s| s["session_id"] == key.as_str());
        assert_eq!(s.map(|s| s["owned_by"].clone()), Some(json!("eu")), "{v}");
        assert!(s.is_some_and(|s| s["orphaned"] == false), "{v}");
        let page = app.web.get("/sandboxes/running").await;
        let row = format!("#host-{tunnel} tr.session[data-session-id='{key}']");
        assert!(page.select_text(&format!("{row} .owned-by")).is_some_and(|t| t.contains("“eu”")), "{}", page.body);
        assert!(page.select_all(&format!("{row} form")).is_empty() && page.select_all(&format!("{row} a.session-delete")).is_empty(), "{}", page.body);
        let r = o.call(Method::DELETE, &format!("/api/v1/sandbox-sessions/{tunnel}/{key}?delete_files=true"), None).await;
        assert!(r.problem(404)["detail"].as_str().is_some_and(|d| d.contains("“eu”")), "{}", r.body);
        assert!(peer.workspace_root.join(&key).join("workspace").join("a.txt").is_file(), "the files were deleted");
    }
}

db_test! {
    async fn two_connections_to_one_host_list_each_session_once_and_only_its_owner_closes_it(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let eu = create(&o, json!({"name": "eu", "address": peer.url, "new_key": peer.token})).await;
        assert_eq!(eu.status, 201, "{}", eu.body);
        let eu = id_of(&eu.json());
        // The same host under another spelling (as a database from before the warning holds).
        let localhost = format!("http://localhost:{}", peer.port());
        let r = create(&o, json!({"name": "eu via localhost", "address": localhost, "new_key": peer.token, "save_anyway": true})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let other = id_of(&r.json());

        // A member's personal workspace on "eu", with a file; another agent's on the second one.
        let mine = o.agent(service_agent("personal assistant", "user")).await;
        let run = o.run(&mine, None, json!({})).await;
        assert_eq!(o.write(&run, "diary.txt", "mine").await.status, 204);
        let key = key_of(&o, &run).await;
        let pinned = o.agent(json!({"name": "pinned", "backend": "service", "scope": "user", "connection_id": other})).await;
        let run2 = o.run(&pinned, None, json!({})).await;
        assert_eq!(o.write(&run2, "b.txt", "theirs").await.status, 204);
        let key2 = key_of(&o, &run2).await;

        // Each is listed once, under the connection its key names (API and page).
        let all = listed(&o).await;
        assert_eq!(all.iter().filter(|(_, s)| *s == key).collect::<Vec<_>>(), [&(eu.clone(), key.clone())], "{all:?}");
        assert_eq!(all.iter().filter(|(_, s)| *s == key2).collect::<Vec<_>>(), [&(other.clone(), key2.clone())], "{all:?}");
        let page = app.web.get("/sandboxes/running").await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(page.select_all(&format!("tr.session[data-session-id='{key}']")).len(), 1, "{}", page.body);
        assert_eq!(page.select_all(&format!("#host-{eu} tr.session[data-session-id='{key}']")).len(), 1);
        assert_eq!(page.select_all(&format!("#host-{other} tr.session[data-session-id='{key2}']")).len(), 1);
        assert!(page.select_all(".orphaned").is_empty(), "{}", page.body);

        // Through the other connection: no close, no delete of files, no activity (API and page),
        // each refusal naming the connection it belongs to.
        let r = o.call(Method::DELETE, &format!("/api/v1/sandbox-sessions/{other}/{key}?delete_files=true"), None).await;
        let p = r.problem(404);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("“eu”")), "{p}");
        let r = o.call(Method::DELETE, &format!("/api/v1/sandbox-sessions/{eu}/{key2}"), None).await;
        assert!(r.problem(404)["detail"].as_str().is_some_and(|d| d.contains("“eu via localhost”")), "{}", r.body);
        assert_eq!(o.call(Method::GET, &format!("/api/v1/sandbox-sessions/{other}/{key}/events"), None).await.status, 404);
        assert_eq!(app.web.get(&format!("/sandboxes/{other}/sessions/{key}/delete")).await.status, 404);
        let r = app.web.post_form(&format!("/sandboxes/{other}/sessions/{key}/delete"), &[]).await;
        assert_eq!(r.status, 404, "{}", r.body);
        assert!(r.body.contains("“eu”"), "{}", r.body);
        let r = app.web.post_form(&format!("/sandboxes/{other}/sessions/{key}/close"), &[]).await;
        assert_eq!(r.status, 404, "{}", r.body);

        // The member's workspace is open and keeps its files.
        assert!(peer.workspace_root.join(&key).join("workspace").join("diary.txt").is_file());
        let read = o.read(&run, "diary.txt").await;
        assert_eq!((read.status.as_u16(), read.body.as_str()), (200, "mine"));
        assert!(listed(&o).await.contains(&(eu.clone(), key.clone())));
        // Under its own connection it closes.
        let r = o.call(Method::DELETE, &format!("/api/v1/sandbox-sessions/{eu}/{key}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

db_test! {
    async fn the_dialog_does_not_offer_this_deployments_service_again_under_another_compose_address(app: TestApp)
        settings(&[
            ("SANDBOXD_TOKEN", &peer::shared().await.token),
            ("SANDBOXD_LOCAL_ADDRESSES", &format!("{},http://localhost:{}", peer::shared().await.url, peer::shared().await.port())),
        ])
    {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        let r = app.web.get("/sandboxes/new").await;
        assert_eq!(r.select_attr("#connection-address", "value").as_deref(), Some(peer.url.as_str()), "{}", r.body);
        let localhost = format!("http://localhost:{}", peer.port());
        let r = create(&o, json!({"name": "local", "address": localhost})).await;
        assert_eq!(r.status, 201, "{}", r.body);
        // Connected under one compose address, the other is not offered.
        let r = app.web.get("/sandboxes/new").await;
        assert_eq!(r.select_attr("#connection-address", "value").unwrap_or_default(), "", "{}", r.body);
        let hint = r.select_text("#connection-address-hint").unwrap_or_default();
        assert!(hint.contains("already connected as “local”"), "{hint}");
    }
}

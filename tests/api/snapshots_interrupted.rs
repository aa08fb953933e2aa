//! Snapshots that fail halfway leave nothing half-done (issue 50), each on SQLite and PostgreSQL
//! against the real sandboxd peer: a host killed while a snapshot reads it, and an S3 store cut
//! once an upload began (a relay in front of the S3-compatible server), list no archive and store
//! no object, and the next snapshot is whole; an archive whose file was changed in the store is
//! refused at restore, naming the file, and nothing of it is written into the new workspace. The
//! moments are held by `snapshots::hold`, never slept for.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, OnceLock};

use reqwest::Method;
use serde_json::json;

use agenticos::sandbox::snapshots::hold::Point;

use crate::db_test;
use crate::peer::{self, Peer, PeerOptions};
use crate::s3_server;
use crate::snapshots::{binary, put_bytes, snapshots_of};
use crate::support::source_files::files_under;
use crate::support::tcp_relay::TcpRelay;
use crate::support::{service_agent, Org};

pub(crate) async fn workspace_and_session(app: &crate::helpers::TestApp, o: &Org<'_>, run: &str) -> (String, String) {
    let st = o.ws(run, Method::GET, "state", None).await.json();
    let workspace = st["workspace_id"].as_str().expect("workspace").to_string();
    let session = app
        .scalar_strings(&format!("SELECT session_ref FROM sandbox_workspaces WHERE id = '{workspace}'"))
        .await
        .pop()
        .expect("the session's reference");
    (workspace, session)
}

fn local_store(app: &crate::helpers::TestApp) -> std::path::PathBuf {
    match &app.state.config.snapshots.store {
        agenticos::config::SnapshotStoreConfig::Local(d) => d.clone(),
        other => panic!("{other:?}"),
    }
}

pub(crate) async fn take(o: &Org<'_>, workspace: &str) -> crate::helpers::Resp {
    o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await
}

db_test! {
    async fn a_snapshot_whose_host_dies_halfway_lists_no_archive_and_the_next_one_is_whole(app: TestApp) {
        let mut peer = Peer::start(PeerOptions::default()).await.expect("a peer of this test's own");
        let o = Org::new(&app).await;
        o.connect(&peer).await;
        let agent = o.agent(service_agent("dies", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "first.txt", "first").await.status, 204);
        let (workspace, session) = workspace_and_session(&app, &o, &r1).await;
        // More files than are read at once, and more bytes than two of the parts a live session's
        // sandbox packs them into (one is read ahead of the one taken apart), so the host is
        // still needed after the first file either way.
        let root = peer.workspace_root.join(&session).join("workspace");
        for i in 0..60u8 {
            std::fs::write(root.join(format!("f{i:02}.txt")), vec![b'a' + i % 26; 160 * 1024]).expect("a file");
        }
        const { assert!(60 * 160 * 1024 > 2 * agenticos::sandbox::hosts::sandboxd::workspaces::pack::PART) };

        let held = app.state.snapshot_hold.arm(Point::FirstFile, &session);
        let taking = {
            let (base, token) = (app.web.url(&format!("/api/v1/workspaces/{workspace}/snapshots")), o.token.clone());
            tokio::spawn(async move { reqwest::Client::new().post(base).bearer_auth(token).send().await })
        };
        held.reached.notified().await;
        peer.stop_now();
        held.release.notify_one();
        let answer = taking.await.expect("the request").expect("an answer");
        let status = answer.status().as_u16();
        let body = answer.text().await.expect("body");
        assert!((502..=504).contains(&status), "{status} {body}");
        assert!(body.contains("detail"), "a problem: {body}");
        assert!(snapshots_of(&o, &workspace).await.is_empty(), "no archive is listed");
        assert!(files_under(&local_store(&app).join(&o.org_id), None).is_empty(), "no object is stored");

        // The host back: the next snapshot holds every file.
        peer.start_again().await.expect("the peer again");
        let r = take(&o, &workspace).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["file_count"], 61, "{}", r.body);
        assert_eq!(snapshots_of(&o, &workspace).await.len(), 1);
    }
}

/// Relays in front of the S3-compatible server, by the port the console is given.
fn relays() -> &'static Mutex<HashMap<u16, Arc<TcpRelay>>> {
    static RELAYS: OnceLock<Mutex<HashMap<u16, Arc<TcpRelay>>>> = OnceLock::new();
    RELAYS.get_or_init(Default::default)
}

/// The S3 settings with the endpoint behind a new relay (one per app: the two databases' runs
/// never cut each other's store).
async fn s3_behind_a_relay() -> &'static [(&'static str, &'static str)] {
    let target: std::net::SocketAddr = ([127, 0, 0, 1], s3_server::port()).into();
    let relay = Arc::new(TcpRelay::start(target).await);
    let port = relay.port();
    relays().lock().expect("relays").insert(port, relay);
    let endpoint: &'static str = Box::leak(format!("http://127.0.0.1:{port}").into_boxed_str());
    let settings: Vec<(&'static str, &'static str)> = s3_server::settings()
        .iter()
        .map(|(k, v)| if *k == "AGENTICOS_SNAPSHOT_S3_ENDPOINT" { (*k, endpoint) } else { (*k, *v) })
        .chain([("AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS", "5")])
        .collect();
    Box::leak(settings.into_boxed_slice())
}

fn relay_of(app: &crate::helpers::TestApp) -> Arc<TcpRelay> {
    let endpoint = match &app.state.config.snapshots.store {
        agenticos::config::SnapshotStoreConfig::S3 { endpoint, .. } => endpoint.clone().expect("an endpoint"),
        other => panic!("{other:?}"),
    };
    let port: u16 = endpoint.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    relays().lock().expect("relays").get(&port).cloned().expect("this app's relay")
}

db_test! {
    async fn a_store_cut_once_the_upload_began_lists_no_archive_and_stores_no_object(app: TestApp) settings(s3_behind_a_relay().await) {
        assert_eq!(app.state.snapshots.kind, "s3");
        let relay = relay_of(&app);
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("cut", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        put_bytes(&o, &r1, "data/blob.bin", binary()).await;
        let (workspace, _) = workspace_and_session(&app, &o, &r1).await;
        // This workspace's objects only: the other tests store in the same bucket meanwhile.
        let prefix = format!("{}/{workspace}/", o.org_id);
        let objects_before = s3_server::objects_under(&prefix);

        let held = app.state.snapshot_hold.arm(Point::UploadStarted, &workspace);
        let taking = {
            let (base, token) = (app.web.url(&format!("/api/v1/workspaces/{workspace}/snapshots")), o.token.clone());
            tokio::spawn(async move { reqwest::Client::new().post(base).bearer_auth(token).send().await })
        };
        held.reached.notified().await;
        relay.cut();
        held.release.notify_one();
        let answer = taking.await.expect("the request").expect("an answer");
        let status = answer.status().as_u16();
        let body = answer.text().await.expect("body");
        assert!(status == 502 || status == 504, "{status} {body}");
        assert!(body.contains("snapshot store") && body.contains("nothing was saved"), "{body}");
        assert!(snapshots_of(&o, &workspace).await.is_empty(), "no archive is listed");
        assert_eq!(s3_server::objects_under(&prefix), objects_before, "no object is stored");

        relay.restore();
        let r = take(&o, &workspace).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(snapshots_of(&o, &workspace).await.len(), 1);
    }
}

/// The archive with `path`'s bytes changed (same size) and everything else, its manifest too, as
/// it was.
fn tampered(gz: &[u8], path: &str) -> Vec<u8> {
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    let mut out = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for e in a.entries().expect("a tar") {
        let mut e = e.expect("an entry");
        let mut header = e.header().clone();
        let name = e.path().expect("path").to_string_lossy().to_string();
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).expect("read");
        if name == path {
            bytes[0] ^= 0xff;
        }
        out.append_data(&mut header, &name, bytes.as_slice()).expect("append");
    }
    out.into_inner().expect("tar").finish().expect("gzip")
}

db_test! {
    async fn a_restore_from_a_tampered_archive_is_refused_naming_the_file_and_writes_nothing(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("tampered", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "notes/plan.md", "# Plan\n").await.status, 204);
        put_bytes(&o, &r1, "data/blob.bin", binary()).await;
        let (workspace, _) = workspace_and_session(&app, &o, &r1).await;
        let r = take(&o, &workspace).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.json()["id"].as_str().expect("id").to_string();

        // Untouched, it restores (the manifest matches).
        let conv2 = o.conversation(&agent, json!({})).await;
        let r2 = o.run(&agent, Some(&conv2), json!({"snapshot_id": id})).await;
        assert_eq!(o.read(&r2, "notes/plan.md").await.body, "# Plan\n");

        // One file changed in the store: refused, named, nothing written.
        let objects = files_under(&local_store(&app).join(&o.org_id), None);
        assert_eq!(objects.len(), 1, "{objects:?}");
        let gz = std::fs::read(&objects[0]).expect("the archive");
        std::fs::write(&objects[0], tampered(&gz, "data/blob.bin")).expect("tamper");
        let conv3 = o.conversation(&agent, json!({})).await;
        let r3 = o.run(&agent, Some(&conv3), json!({"snapshot_id": id})).await;
        let refused = o.read(&r3, "notes/plan.md").await;
        assert!(refused.status.as_u16() >= 400, "{}", refused.body);
        let detail = refused.json()["detail"].as_str().unwrap_or_default().to_string();
        assert!(detail.contains("data/blob.bin") && detail.contains("manifest"), "{detail}");
        assert!(!detail.contains("notes/plan.md"), "only the file that differs is named: {detail}");
        let session_key = app
            .scalar_strings(&format!(
                "SELECT session_key FROM sandbox_workspaces WHERE conversation_id = '{conv3}'"
            ))
            .await
            .pop()
            .expect("the new workspace's session key");
        let written = peer.workspace_root.join(&session_key).join("workspace");
        assert!(!written.join("notes").exists() && !written.join("data").exists(), "nothing of the archive was written");
        // The sandbox's stage, written while the archive was checked, is removed too.
        let stages = std::fs::read_dir(written.join(".agenticos"))
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("restore-")).count())
            .unwrap_or(0);
        assert_eq!(stages, 0, "no stage is left");
    }
}

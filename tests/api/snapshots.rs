//! Workspace snapshots against the real sandboxd peer, each on SQLite and PostgreSQL: a snapshot
//! taken when a run finishes restores byte-identical files (without `node_modules/`) into a new
//! run (on each host kind: `host_test!`, the Daytona fake too); a workspace whose files the host lost comes back from its latest snapshot, and the run
//! says so; `session_state` continues a workspace and is refused across organizations, agents and
//! after the workspace is deleted; the S3 path (an S3-compatible server, moto, run here) passes the
//! same round trip as the local folder.

use std::collections::BTreeMap;
use std::io::Read;

use reqwest::Method;
use serde_json::{json, Value};

use agenticos::sandbox::snapshots::pending;

use crate::hosts::{Host, HostKind};
use crate::peer;
use crate::s3_server;
use crate::support::source_files::files_under;
use crate::support::{row, service_agent, urlencode, Org};
use crate::{db_test, host_test};

/// Bytes that are not UTF-8, so "byte-identical" means something.
pub(crate) fn binary() -> Vec<u8> {
    (0..=255u8).cycle().take(70_000).collect()
}

pub(crate) async fn put_bytes(o: &Org<'_>, run: &str, path: &str, bytes: Vec<u8>) {
    let url = o.app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path={}", urlencode(path)));
    let r = o.app.web.send(reqwest::Client::new().put(url).bearer_auth(&o.token).body(bytes)).await;
    assert_eq!(r.status, 204, "{}", r.body);
}

pub(crate) async fn get_bytes(o: &Org<'_>, path: &str) -> (u16, Vec<u8>) {
    let r = reqwest::Client::new().get(o.app.web.url(path)).bearer_auth(&o.token).send().await.expect("get");
    let status = r.status().as_u16();
    (status, r.bytes().await.expect("bytes").to_vec())
}

async fn set_snapshots(o: &Org<'_>, agent: &str, mode: &str) {
    let r = o
        .call(Method::PUT, &format!("/api/v1/agents/{agent}/snapshot-settings"), Some(json!({"snapshots": mode})))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["snapshots"], mode);
}

async fn workspace_of(o: &Org<'_>, run: &str) -> Value {
    o.ws(run, Method::GET, "state", None).await.json()
}

/// Finishes the run, then waits for its snapshot's background upload (a finish does not).
async fn finish(o: &Org<'_>, run: &str) -> Value {
    let r = o.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    pending::wait_for_run(&o.app.state, run).await;
    r.json()
}

pub(crate) async fn snapshots_of(o: &Org<'_>, workspace: &str) -> Vec<Value> {
    let r = o.call(Method::GET, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json().as_array().expect("list").clone()
}

/// The files of a downloaded archive: path → bytes (folders end in `/`, with no bytes).
pub(crate) fn archive_files(gz: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    for e in a.entries().expect("a tar") {
        let mut e = e.expect("an entry");
        let path = e.path().expect("path").to_string_lossy().to_string();
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).expect("read");
        out.insert(path, bytes);
    }
    out
}

/// The seed's archive (the files both backends' snapshot tests write): the text and binary files
/// byte for byte, the empty folder, and nothing of `node_modules/`.
pub(crate) async fn assert_archive_holds_the_seed(o: &Org<'_>, snapshot_id: &str) {
    let (status, gz) = get_bytes(o, &format!("/api/v1/snapshots/{snapshot_id}/archive")).await;
    assert_eq!(status, 200);
    let files = archive_files(&gz);
    assert_eq!(files.get("notes/plan.md").map(Vec::as_slice), Some(&b"# Plan\nship it\n"[..]));
    assert_eq!(files.get("data/blob.bin"), Some(&binary()));
    assert!(files.contains_key("empty/inside/"), "{:?}", files.keys());
    assert!(!files.keys().any(|k| k.contains("node_modules")), "{:?}", files.keys());
}

/// A run restored from the seed's snapshot reads its files back, byte for byte, and not
/// `node_modules/`.
pub(crate) async fn assert_run_reads_the_seed(o: &Org<'_>, run: &str) {
    assert_eq!(o.read(run, "notes/plan.md").await.body, "# Plan\nship it\n");
    let (status, blob) =
        get_bytes(o, &format!("/api/v1/runs/{run}/workspace/files?path={}", urlencode("data/blob.bin"))).await;
    assert_eq!((status, blob), (200, binary()));
    o.read(run, "node_modules/left-pad/index.js").await.problem(404);
}

/// The round trip both stores pass: files written in a run, a snapshot at its end, the archive
/// downloadable (without `node_modules/`), and a new run in a new conversation that names the
/// snapshot reads the same bytes.
async fn round_trip(app: &crate::helpers::TestApp, host: &Host) {
    let o = Org::new(app).await;
    host.connect(&o).await;
    let agent = o.agent(service_agent("saver", "conversation")).await;
    set_snapshots(&o, &agent, "on_finish").await;
    let conv = o.conversation(&agent, json!({})).await;
    let r1 = o.run(&agent, Some(&conv), json!({})).await;
    assert_eq!(o.write(&r1, "notes/plan.md", "# Plan\nship it\n").await.status, 204);
    put_bytes(&o, &r1, "data/blob.bin", binary()).await;
    assert_eq!(o.write(&r1, "node_modules/left-pad/index.js", "module.exports = 1").await.status, 204);
    assert_eq!(o.write(&r1, "app/node_modules/x.js", "x").await.status, 204);
    assert_eq!(o.ws(&r1, Method::POST, "mkdir", Some(json!({"path": "empty/inside"}))).await.status, 204);
    let first = workspace_of(&o, &r1).await;
    let workspace = first["workspace_id"].as_str().expect("id").to_string();
    let finished = finish(&o, &r1).await;
    assert_eq!(finished["status"], "finished");
    assert!(finished["session_state"].as_str().is_some_and(|s| s.len() > 20), "{finished}");

    let list = snapshots_of(&o, &workspace).await;
    assert_eq!(list.len(), 1, "{list:?}");
    let s = &list[0];
    assert_eq!(s["taken_by"], "finish");
    assert_eq!(s["file_count"], 2, "{s}");
    assert!(s["size_bytes"].as_i64().is_some_and(|n| n > 0), "{s}");
    let id = s["id"].as_str().expect("id").to_string();
    // A live sandboxd session packs its workspace in its own `.agenticos/` stage, removed before
    // the snapshot is listed.
    let saved = host.files_of(first["session_key"].as_str().expect("key")).await.expect("the workspace's files");
    assert!(saved.join("notes/plan.md").exists() && !saved.join(".agenticos").exists(), "{}", saved.display());

    assert_archive_holds_the_seed(&o, &id).await;

    // A new conversation (a new workspace) starts from the snapshot.
    let conv2 = o.conversation(&agent, json!({})).await;
    let r2 = o.run(&agent, Some(&conv2), json!({"snapshot_id": id})).await;
    assert_run_reads_the_seed(&o, &r2).await;
    let st = workspace_of(&o, &r2).await;
    assert_ne!(st["workspace_id"], workspace.as_str());
    assert_ne!(st["session_key"], first["session_key"], "its own workspace on the host");
    assert!(st["started_from"].as_str().is_some_and(|s| s.starts_with("restored from the snapshot of ")), "{st}");
    let ls = o.ws(&r2, Method::GET, "ls?path=empty", None).await.json();
    assert_eq!(ls[0]["name"], "inside", "{ls}");
    // Unpacked by the sandbox in one go, and recorded as if written one by one; the stage and
    // the manifest are gone.
    let rows = o.rows(&r2).await;
    assert!(rows.contains(&row("write", "/workspace/notes/plan.md", true, "15 bytes")), "{rows:?}");
    assert!(rows.contains(&row("mkdir", "/workspace/empty/inside", true, "")), "{rows:?}");
    let key = app
        .scalar_strings(&format!("SELECT session_key FROM sandbox_workspaces WHERE conversation_id = '{conv2}'"))
        .await
        .pop()
        .expect("the new workspace's session key");
    let restored = host.files_of(&key).await.expect("the new workspace's files on the host");
    assert!(restored.join("notes/plan.md").exists(), "{}", restored.display());
    assert!(!restored.join(".agenticos").exists(), "the stage and the manifest are removed");

    // A member who is not in the conversation sees none of it either (Documents' visibility).
    let member = app.member_with_role("snap-member@example.com", "member").await;
    member.api(Method::GET, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await.problem(404);
    member.api(Method::GET, &format!("/api/v1/snapshots/{id}/archive"), None).await.problem(404);
    let token = member.csrf().await;
    let take = member
        .send(
            member
                .http
                .post(member.url(&format!("/api/v1/workspaces/{workspace}/snapshots")))
                .header("x-csrf-token", token),
        )
        .await;
    take.problem(404);
    assert_eq!(snapshots_of(&o, &workspace).await.len(), 1, "a member's refused request took none");

    // Another organization sees none of it.
    let b = app.other_org_user("snap-b@example.com", "B Corp").await;
    let tb = b.create_token_in_page("b", "owner").await;
    b.bearer(&tb, Method::GET, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await.problem(404);
    b.bearer(&tb, Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await.problem(404);
    b.bearer(&tb, Method::GET, &format!("/api/v1/snapshots/{id}/archive"), None).await.problem(404);
}

host_test! {
    async fn a_snapshot_taken_at_finish_restores_byte_identical_files_into_a_new_run(app: TestApp, host: &Host) {
        round_trip(&app, host).await;
    }
}

db_test! {
    async fn the_s3_store_passes_the_same_snapshot_round_trip(app: TestApp) settings(s3_server::settings()) {
        assert_eq!(app.state.snapshots.kind, "s3");
        round_trip(&app, &Host::start(HostKind::Sandboxd).await).await;
        // The archive is in the S3-compatible server's bucket.
        assert!(s3_server::object_count() > 0);
    }
}

db_test! {
    async fn a_workspace_the_host_lost_comes_back_from_its_latest_snapshot_and_the_run_says_so(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("keeper", "conversation")).await;
        set_snapshots(&o, &agent, "on_finish_when_changed").await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "work.txt", "important").await.status, 204);
        let workspace = workspace_of(&o, &r1).await["workspace_id"].as_str().expect("id").to_string();
        finish(&o, &r1).await;
        // A run that changed nothing takes none.
        let quiet = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.read(&quiet, "work.txt").await.body, "important");
        finish(&o, &quiet).await;
        let list = snapshots_of(&o, &workspace).await;
        assert_eq!(list.len(), 1, "{list:?}");
        let time = list[0]["created_at"].as_i64().expect("time");

        o.purge_behind_our_back(peer, &r1).await;
        let r2 = o.run(&agent, Some(&conv), json!({})).await;
        o.read(&r2, "work.txt").await.problem(410);
        finish(&o, &r2).await;
        let r3 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.read(&r3, "work.txt").await.body, "important");
        let st = workspace_of(&o, &r3).await;
        assert_eq!(st["workspace_id"], workspace.as_str());
        let label = agenticos::sandbox::snapshots::model::time_label(time);
        assert_eq!(st["started_from"], format!("restored from the snapshot of {label}"), "{st}");

        // Without a snapshot, the run says it started empty.
        let bare = o.agent(service_agent("bare", "conversation")).await;
        let c2 = o.conversation(&bare, json!({})).await;
        let b1 = o.run(&bare, Some(&c2), json!({})).await;
        assert_eq!(o.write(&b1, "work.txt", "x").await.status, 204);
        finish(&o, &b1).await;
        o.purge_behind_our_back(peer, &b1).await;
        let b2 = o.run(&bare, Some(&c2), json!({})).await;
        o.read(&b2, "work.txt").await.problem(410);
        finish(&o, &b2).await;
        let b3 = o.run(&bare, Some(&c2), json!({})).await;
        o.read(&b3, "work.txt").await.problem(404);
        assert_eq!(workspace_of(&o, &b3).await["started_from"], "started empty");
    }
}

db_test! {
    async fn session_state_continues_a_workspace_and_is_refused_elsewhere(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("cont", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "kept.txt", "continued").await.status, 204);
        let workspace = workspace_of(&o, &r1).await["workspace_id"].clone();
        let state = finish(&o, &r1).await["session_state"].as_str().expect("state").to_string();

        // A later run in another conversation continues in the same workspace.
        let conv2 = o.conversation(&agent, json!({})).await;
        let r2 = o.run(&agent, Some(&conv2), json!({"session_state": state})).await;
        assert_eq!(workspace_of(&o, &r2).await["workspace_id"], workspace);
        assert_eq!(o.read(&r2, "kept.txt").await.body, "continued");
        finish(&o, &r2).await;

        // Tampered: 422 naming the field.
        let mut bad = state.clone();
        bad.replace_range(2..3, if &state[2..3] == "A" { "B" } else { "A" });
        let body = json!({"agent_id": agent, "conversation_id": conv2, "started_by": "member", "session_state": bad});
        let r = o.call(Method::POST, "/api/v1/runs", Some(body)).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["session_state".to_string()]);

        // Another agent of the same organization: 404.
        let other = o.agent(service_agent("other", "run")).await;
        let body = json!({"agent_id": other, "started_by": "member", "session_state": state});
        o.call(Method::POST, "/api/v1/runs", Some(body)).await.problem(404);

        // Another organization: 404.
        let b = app.other_org_user("state-b@example.com", "B Corp").await;
        let tb = b.create_token_in_page("b", "owner").await;
        let b_agent = b.bearer(&tb, Method::POST, "/api/v1/agents", Some(json!({"name": "x", "backend": "state", "scope": "run"}))).await;
        let b_agent = b_agent.json()["id"].as_str().expect("id").to_string();
        let body = json!({"agent_id": b_agent, "started_by": "member", "session_state": state});
        b.bearer(&tb, Method::POST, "/api/v1/runs", Some(body)).await.problem(404);

        // After the workspace is deleted (with its conversation): 404.
        let d = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert!(d.status.is_success(), "{}", d.body);
        let body = json!({"agent_id": agent, "conversation_id": conv2, "started_by": "member", "session_state": state});
        o.call(Method::POST, "/api/v1/runs", Some(body)).await.problem(404);
    }
}

db_test! {
    async fn snapshots_are_deleted_from_the_store_with_their_workspace(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("gone", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "a.txt", "a").await.status, 204);
        let workspace = workspace_of(&o, &r1).await["workspace_id"].as_str().expect("id").to_string();
        // On demand, twice; the agent keeps the last one only.
        let r = o.call(Method::PUT, &format!("/api/v1/agents/{agent}/snapshot-settings"), Some(json!({"snapshots": "never", "keep_last": 1}))).await;
        assert_eq!(r.json()["keep_last"], 1, "{}", r.body);
        for _ in 0..2 {
            let r = o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
            assert_eq!(r.status, 201, "{}", r.body);
            assert_eq!(r.json()["taken_by"], "on_demand");
        }
        assert_eq!(snapshots_of(&o, &workspace).await.len(), 1);
        let dir = match &app.state.config.snapshots.store {
            agenticos::config::SnapshotStoreConfig::Local(d) => d.clone(),
            other => panic!("{other:?}"),
        };
        let objects = || files_under(&dir.join(&o.org_id), None);
        assert_eq!(objects().len(), 1, "{:?}", objects());
        // A bad setting names its field.
        let bad = o.call(Method::PUT, &format!("/api/v1/agents/{agent}/snapshot-settings"), Some(json!({"snapshots": "sometimes", "keep_last": 0}))).await;
        bad.problem(422);
        assert_eq!(bad.problem_fields(), vec!["snapshots".to_string(), "keep_last".to_string()]);

        finish(&o, &r1).await;
        let d = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert!(d.status.is_success(), "{}", d.body);
        assert!(objects().is_empty(), "{:?}", objects());
        let rows = app.scalar_strings(&format!("SELECT id FROM snapshots WHERE workspace_id = '{workspace}'")).await;
        assert!(rows.is_empty(), "{rows:?}");
    }
}

/// An S3 endpoint that accepts connections and never answers (a listener on 127.0.0.1:0, each
/// connection held open and never read), and how many connections it accepted.
struct SilentStore {
    settings: Vec<(&'static str, &'static str)>,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn silent_store() -> &'static SilentStore {
    static STORE: std::sync::OnceLock<SilentStore> = std::sync::OnceLock::new();
    STORE.get_or_init(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
        let endpoint: &'static str = Box::leak(format!("http://127.0.0.1:{port}").into_boxed_str());
        let settings = vec![
            ("AGENTICOS_SNAPSHOT_S3_BUCKET", "silent"),
            ("AGENTICOS_SNAPSHOT_S3_ENDPOINT", endpoint),
            ("AGENTICOS_SNAPSHOT_S3_ACCESS_KEY_ID", "testing"),
            ("AGENTICOS_SNAPSHOT_S3_SECRET_ACCESS_KEY", "testing"),
            ("AGENTICOS_SNAPSHOT_CONNECT_TIMEOUT_SECONDS", "1"),
            ("AGENTICOS_SNAPSHOT_REQUEST_TIMEOUT_SECONDS", "3"),
            ("AGENTICOS_SNAPSHOT_TIMEOUT_SECONDS", "60"),
        ];
        SilentStore { settings, accepted }
    })
}

/// (attempts, last error, next attempt) of each pending snapshot.
async fn pending_rows(app: &crate::helpers::TestApp) -> Vec<(i64, Option<String>, i64)> {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_as("SELECT attempts, last_error, next_attempt_at FROM pending_snapshots ORDER BY created_at")
        .fetch_all(&mut *c)
        .await
        .expect("pending snapshots")
}

db_test! {
    async fn a_store_that_does_not_answer_is_a_504_naming_it_and_a_finish_does_not_wait_on_it(app: TestApp) settings(&silent_store().settings) {
        let silent = silent_store();
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("stalled", "conversation")).await;
        set_snapshots(&o, &agent, "on_finish").await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "keep.txt", "worth keeping").await.status, 204);
        let workspace = workspace_of(&o, &r1).await["workspace_id"].as_str().expect("id").to_string();

        // On demand: a problem naming the store, never "Something went wrong".
        let before = silent.accepted.load(std::sync::atomic::Ordering::SeqCst);
        let r = o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
        let problem = r.problem(504);
        assert_eq!(problem["type"], "https://agenticos.dev/problems/store-timeout", "{problem}");
        let detail = problem["detail"].as_str().expect("detail");
        assert!(detail.contains("snapshot store") && detail.contains("did not answer"), "{detail}");
        assert!(silent.accepted.load(std::sync::atomic::Ordering::SeqCst) > before, "the store was asked");
        assert!(snapshots_of(&o, &workspace).await.is_empty());
        // The page says the same, inline.
        let page = app.web.post_form(&format!("/documents/workspaces/{workspace}/snapshots"), &[]).await;
        let shown = page.select_text("#snapshots-error").expect("an inline error");
        assert!(shown.contains("did not answer") && !shown.contains("Something went wrong"), "{shown}");

        // A finish answers while the store still has not: the snapshot's upload is under way in
        // the background when it does.
        let r = o.call(Method::POST, &format!("/api/v1/runs/{r1}/finish"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["status"], "finished");
        assert!(pending::is_uploading(&o.app.state, &r1), "the finish answered before the store did");
        pending::wait_for_run(&o.app.state, &r1).await;
        // Its failure is recorded, named, and shown on the workspace's page.
        let rows = pending_rows(&app).await;
        assert_eq!(rows.len(), 1, "{rows:?}");
        let (attempts, error, next) = rows[0].clone();
        assert_eq!(attempts, 1);
        let error = error.expect("the failure is recorded");
        assert!(error.contains("snapshot store") && error.contains("did not answer"), "{error}");
        let list = app.web.get(&format!("/documents/workspaces/{workspace}/snapshots")).await;
        let pending = list.select_text("[data-pending-snapshot]").expect("the waiting snapshot is shown");
        assert!(pending.contains("not saved yet") && pending.contains("did not answer") && pending.contains("1 attempt"), "{pending}");

        // The sweep retries it when due (not before), and records the next failure.
        let _ = agenticos::sandbox::snapshots::service::sweep(&app.state, next - 1).await.expect("sweep");
        assert_eq!(pending_rows(&app).await[0].0, 1, "not due yet");
        let _ = agenticos::sandbox::snapshots::service::sweep(&app.state, next).await.expect("sweep");
        let rows = pending_rows(&app).await;
        assert_eq!(rows[0].0, 2, "{rows:?}");
        assert!(rows[0].2 > next, "the next attempt is later");

        // The archive waits in a private folder; it goes with the workspace.
        let dir = app.state.config.snapshots.pending_dir.clone();
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&dir).expect("pending dir").permissions().mode() & 0o777, 0o700);
        let files = files_under(&dir, None);
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(std::fs::metadata(&files[0]).expect("archive").permissions().mode() & 0o777, 0o600);
        let d = o.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        assert_eq!(d.status, 200, "{}", d.body);
        assert!(pending_rows(&app).await.is_empty());
        assert!(files_under(&dir, None).is_empty(), "{:?}", files_under(&dir, None));
    }
}

db_test! {
    async fn local_snapshot_archives_are_readable_by_the_console_alone(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("private", "conversation")).await;
        let conv = o.conversation(&agent, json!({})).await;
        let r1 = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&r1, "secret.txt", "mine").await.status, 204);
        let workspace = workspace_of(&o, &r1).await["workspace_id"].as_str().expect("id").to_string();
        let r = o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let dir = match &app.state.config.snapshots.store {
            agenticos::config::SnapshotStoreConfig::Local(d) => d.clone(),
            other => panic!("{other:?}"),
        };
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &std::path::Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        let files = files_under(&dir.join(&o.org_id), None);
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(mode(&files[0]), 0o600, "the archive");
        let mut folder = files[0].parent().expect("folder").to_path_buf();
        while folder.starts_with(&dir) {
            assert_eq!(mode(&folder), 0o700, "{}", folder.display());
            if !folder.pop() {
                break;
            }
        }
    }
}

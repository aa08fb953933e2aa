//! Snapshots of Daytona workspaces in bulk requests (issue 50), against the FAKE Daytona
//! (tests/peer/daytona/fake_daytona.py), on SQLite and PostgreSQL: a snapshot of a few hundred
//! files reads them in a few `POST /files/bulk-download` requests and a restore writes them in a
//! few `POST /files/bulk-upload` requests (not one request per file), byte for byte; a file
//! removed while the snapshot reads is left out; one the daemon cannot open fails the snapshot
//! and nothing is kept; a daemon without the bulk download is read file by file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{json, Value};

use agenticos::sandbox::snapshots::hold::Point;

use crate::daytona_fake::FakeDaytona;
use crate::db_test;
use crate::snapshots::{archive_files, get_bytes, snapshots_of};
use crate::support::connections::daytona;
use crate::support::{service_agent, Org};

const BULK_DOWNLOAD: &str = "POST /toolbox/{sandboxId}/files/bulk-download";
const BULK_UPLOAD: &str = "POST /toolbox/{sandboxId}/files/bulk-upload";
const DOWNLOAD: &str = "GET /toolbox/{sandboxId}/files/download";

fn count(fake: &FakeDaytona, route: &str) -> u64 {
    fake.request_counts().get(route).copied().unwrap_or(0)
}

/// The workspace folder of the sandbox of run `run`.
async fn workspace_dir(o: &Org<'_>, fake: &FakeDaytona, run: &str) -> (PathBuf, String, String) {
    let st = o.ws(run, Method::GET, "state", None).await.json();
    let key = st["session_key"].as_str().expect("key").to_string();
    let sb = fake.sandboxes().into_iter().find(|s| s["name"] == key.as_str()).expect("the run's sandbox");
    let dir = Path::new(sb["dir"].as_str().expect("dir")).join("workspace");
    (dir, sb["id"].as_str().expect("id").to_string(), st["workspace_id"].as_str().expect("workspace").to_string())
}

/// Every file under `dir`: relative path → bytes.
fn files_in(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("a folder") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, std::fs::read(&p).expect("a file"));
            }
        }
    }
    out
}

/// `n` files under `many/` (sizes from 0 to a few KiB, bytes that are not all text), written
/// straight into the sandbox's folder.
fn seed(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir.join("many/deeper")).unwrap();
    for i in 0..n {
        let bytes: Vec<u8> = (0..(i * 37) % 5000).map(|j| ((i + j) % 251) as u8).collect();
        let sub = if i % 3 == 0 { "many/deeper" } else { "many" };
        std::fs::write(dir.join(format!("{sub}/f{i:04}.bin")), bytes).unwrap();
    }
    std::fs::create_dir_all(dir.join("empty/inside")).unwrap();
    std::fs::create_dir_all(dir.join("node_modules/x")).unwrap();
    std::fs::write(dir.join("node_modules/x/index.js"), "left out").unwrap();
}

/// A run on a fresh fake Daytona whose workspace holds the notes file written through our API.
async fn daytona_run<'a>(o: &Org<'a>, fake: &FakeDaytona) -> (String, String) {
    daytona(o, &fake.api_url, &fake.api_key).await;
    let agent = o.agent(service_agent("saver", "conversation")).await;
    let conv = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conv), json!({})).await;
    assert_eq!(o.write(&run, "notes/plan.md", "# Plan\n").await.status, 204);
    (agent, run)
}

async fn take(o: &Org<'_>, workspace: &str) -> crate::helpers::Resp {
    o.call(Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await
}

async fn archive_of(o: &Org<'_>, snapshot: &Value) -> BTreeMap<String, Vec<u8>> {
    let (status, gz) = get_bytes(o, &format!("/api/v1/snapshots/{}/archive", snapshot["id"].as_str().unwrap())).await;
    assert_eq!(status, 200);
    archive_files(&gz)
}

// Daytona only: its toolbox's bulk download and upload (sandboxd packs in the sandbox).
db_test! {
    async fn a_daytona_snapshot_and_its_restore_of_hundreds_of_files_go_in_a_few_bulk_requests(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (agent, r1) = daytona_run(&o, &fake).await;
        let (dir, _, workspace) = workspace_dir(&o, &fake, &r1).await;
        seed(&dir, 300);
        let mut originals = files_in(&dir);
        originals.remove("node_modules/x/index.js");

        fake.reset_request_counts();
        let r = take(&o, &workspace).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let snapshot = r.json();
        assert_eq!(snapshot["file_count"], 301, "{snapshot}");
        let reads = count(&fake, BULK_DOWNLOAD);
        // 301 files, at most 64 a request.
        assert!((5..=8).contains(&reads), "{reads} bulk downloads: {:?}", fake.request_counts());
        assert_eq!(count(&fake, DOWNLOAD), 0, "no file read on its own");
        let archived = archive_of(&o, &snapshot).await;
        for (path, bytes) in &originals {
            assert_eq!(archived.get(path), Some(bytes), "{path} in the archive");
        }
        assert!(archived.contains_key("empty/inside/"), "{:?}", archived.keys().take(5).collect::<Vec<_>>());
        assert!(!archived.keys().any(|k| k.contains("node_modules")));

        // A new conversation starts from the snapshot: its files arrive a few requests at a time.
        fake.reset_request_counts();
        let conv2 = o.conversation(&agent, json!({})).await;
        let r2 = o.run(&agent, Some(&conv2), json!({"snapshot_id": snapshot["id"]})).await;
        assert_eq!(o.read(&r2, "notes/plan.md").await.body, "# Plan\n");
        let writes = count(&fake, BULK_UPLOAD);
        // At most 64 files a request; fewer when the archive's reader had no more ready.
        assert!((5..=30).contains(&writes), "{writes} bulk uploads: {:?}", fake.request_counts());
        let (dir2, _, _) = workspace_dir(&o, &fake, &r2).await;
        assert_eq!(files_in(&dir2), originals, "the restored files are the originals");
        assert!(dir2.join("empty/inside").is_dir(), "the empty folder too");
        let st = o.ws(&r2, Method::GET, "state", None).await.json();
        assert!(st["started_from"].as_str().is_some_and(|s| s.starts_with("restored from the snapshot of ")), "{st}");
        fake.assert_log_matches_the_documents();
    }
}

// Daytona only: the bulk download's error parts.
db_test! {
    async fn a_file_removed_mid_snapshot_is_left_out_and_one_the_daemon_cannot_open_fails_it(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (_, r1) = daytona_run(&o, &fake).await;
        let (dir, sandbox_id, workspace) = workspace_dir(&o, &fake, &r1).await;
        seed(&dir, 300);
        // Listed last (the walk is breadth-first, by name): read in a later batch than the first.
        std::fs::create_dir_all(dir.join("zz")).unwrap();
        std::fs::write(dir.join("zz/gone.txt"), "soon gone").unwrap();
        std::fs::write(dir.join("zz/kept.txt"), "kept").unwrap();

        let held = app.state.snapshot_hold.arm(Point::FirstFile, &sandbox_id);
        fake.reset_request_counts();
        let (r, ()) = tokio::join!(take(&o, &workspace), async {
            held.reached.notified().await;
            std::fs::remove_file(dir.join("zz/gone.txt")).unwrap();
            held.release.notify_one();
        });
        assert_eq!(r.status, 201, "{}", r.body);
        let snapshot = r.json();
        assert_eq!(snapshot["file_count"], 302, "{snapshot}");
        assert_eq!(count(&fake, DOWNLOAD), 0, "the removed file was asked in a bulk request");
        let archived = archive_of(&o, &snapshot).await;
        assert!(!archived.contains_key("zz/gone.txt"));
        assert_eq!(archived.get("zz/kept.txt").map(Vec::as_slice), Some(&b"kept"[..]));

        // The daemon cannot open one file: the snapshot fails, and nothing of it is kept.
        let before = snapshots_of(&o, &workspace).await.len();
        let objects = store_objects(&app);
        fake.set_hooks(json!({"unreadable": ["workspace/zz/kept.txt"]}));
        let p = take(&o, &workspace).await.problem(403);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("may not")), "{p}");
        assert_eq!(snapshots_of(&o, &workspace).await.len(), before);
        assert_eq!(store_objects(&app), objects, "no archive was stored");
        fake.set_hooks(json!({"unreadable": null}));
    }
}

// Daytona only: an old daemon without the bulk download.
db_test! {
    async fn a_daemon_without_the_bulk_download_is_read_file_by_file(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let o = Org::new(&app).await;
        let (_, r1) = daytona_run(&o, &fake).await;
        let (dir, _, workspace) = workspace_dir(&o, &fake, &r1).await;
        seed(&dir, 9);
        // What the proxy answers for a route the daemon lacks.
        fake.set_hooks(json!({"fail": [{"route": BULK_DOWNLOAD, "status": 404, "empty": true, "times": 100}]}));
        fake.reset_request_counts();
        let r = take(&o, &workspace).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["file_count"], 10);
        assert_eq!(count(&fake, BULK_DOWNLOAD), 1, "asked once, then never again");
        assert_eq!(count(&fake, DOWNLOAD), 10);
        let archived = archive_of(&o, &r.json()).await;
        assert_eq!(archived.get("notes/plan.md").map(Vec::as_slice), Some(&b"# Plan\n"[..]));
        fake.set_hooks(json!({"fail": null}));
    }
}

/// The files in the local snapshot store.
fn store_objects(app: &crate::helpers::TestApp) -> usize {
    let agenticos::config::SnapshotStoreConfig::Local(d) = &app.state.config.snapshots.store else {
        panic!("a local store")
    };
    fn walk(p: &Path) -> usize {
        std::fs::read_dir(p).map_or(0, |rd| {
            rd.filter_map(Result::ok).map(|e| if e.path().is_dir() { walk(&e.path()) } else { 1 }).sum()
        })
    }
    walk(Path::new(d))
}

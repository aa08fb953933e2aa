//! The packed snapshot's fallbacks (issue 50), each on SQLite and PostgreSQL against the real
//! sandboxd peer. A live session's workspace is packed by its sandbox's `tar`; where it cannot
//! be, the workspace is read file by file, and the archive must hold what the packed path gives:
//! the same folders, files and bytes, and the same manifest (each file's size and SHA-256).
//!
//! - a sandbox without `tar` (a peer whose `PATH` has every tool of this machine but `tar`): the
//!   snapshot reads file by file, and the restore writes file by file;
//! - a host whose native read limit is below the packed archive's first part (the read is handed
//!   back): the snapshot reads file by file;
//! - a closed session (nothing to pack in): the snapshot reads its stored workspace file by file,
//!   and holds what the packed snapshot of the same workspace held;
//! - symbolic links and a hard link: both paths keep the same (docs/workspaces.md, Snapshots, "What a
//!   snapshot holds"): a symbolic link is left out, never followed (to a file, to a folder, out of
//!   the workspace, to nothing); each name of a hard link is a file holding its bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::Method;
use secrecy::SecretString;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use agenticos::sandbox::hosts::sandboxd::client::{RunRequest, SandboxdClient};
use agenticos::sandbox::hosts::sandboxd::workspaces::restore::UNPACK;

use crate::db_test;
use crate::peer::{self, Peer, PeerOptions};
use crate::snapshots::{archive_files, binary, get_bytes};
use crate::snapshots_interrupted::{take, workspace_and_session};
use crate::support::{service_agent, urlencode, Org};

const MANIFEST: &str = ".agenticos/snapshot-manifest.json";

/// A text file large enough that, with `data/blob.bin`, the packed archive is over
/// [`SMALL_READ_LIMIT`].
fn text() -> Vec<u8> {
    b"a line of text that compresses well\n".iter().copied().cycle().take(40_000).collect()
}

/// The seed's files, on the peer's disk under `root` (the session's workspace folder) but for
/// `notes/plan.md`, written through the API (which opens the session). With `links`: a hard link
/// to `data/blob.bin`, and symbolic links to a file, to a folder, out of the workspace and to
/// nothing.
fn seed_on_disk(root: &Path, links: bool) {
    std::fs::create_dir_all(root.join("data")).expect("data/");
    std::fs::create_dir_all(root.join("empty/inside")).expect("empty/inside/");
    std::fs::create_dir_all(root.join("node_modules/pkg")).expect("node_modules/");
    std::fs::write(root.join("data/blob.bin"), binary()).expect("blob");
    std::fs::write(root.join("data/more.txt"), text()).expect("text");
    std::fs::write(root.join("node_modules/pkg/index.js"), "left out").expect("node_modules");
    if links {
        std::fs::hard_link(root.join("data/blob.bin"), root.join("data/hard.bin")).expect("a hard link");
        for (name, target) in
            [("to-file", "notes/plan.md"), ("to-folder", "notes"), ("to-outside", "/etc"), ("dangling", "gone")]
        {
            std::os::unix::fs::symlink(target, root.join(name)).expect("a symbolic link");
        }
    }
}

/// What an archive of the seed holds, whichever way the workspace was read (folders end in `/`,
/// with no bytes), the manifest left out.
fn expected(links: bool) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::from([
        ("data/".to_string(), Vec::new()),
        ("data/blob.bin".to_string(), binary()),
        ("data/more.txt".to_string(), text()),
        ("empty/".to_string(), Vec::new()),
        ("empty/inside/".to_string(), Vec::new()),
        ("notes/".to_string(), Vec::new()),
        ("notes/plan.md".to_string(), b"# Plan\n".to_vec()),
    ]);
    if links {
        files.insert("data/hard.bin".to_string(), binary());
    }
    files
}

/// An archive's entries (the manifest left out) and its manifest's files as (path, size,
/// SHA-256), by path.
type Taken = (BTreeMap<String, Vec<u8>>, Vec<(String, u64, String)>);

fn split_manifest(mut files: BTreeMap<String, Vec<u8>>) -> Taken {
    let body = files.remove(MANIFEST).expect("the archive ends with its manifest");
    let manifest: Value = serde_json::from_slice(&body).expect("the manifest is JSON");
    let mut listed: Vec<(String, u64, String)> = manifest["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            let path = f["path"].as_str().expect("path").to_string();
            (path, f["size"].as_u64().expect("size"), f["sha256"].as_str().expect("sha256").to_string())
        })
        .collect();
    listed.sort();
    (files, listed)
}

/// The manifest the files of `files` call for.
fn manifest_of(files: &BTreeMap<String, Vec<u8>>) -> Vec<(String, u64, String)> {
    files
        .iter()
        .filter(|(path, _)| !path.ends_with('/'))
        .map(|(path, bytes)| (path.clone(), bytes.len() as u64, hex::encode(Sha256::digest(bytes))))
        .collect()
}

/// Takes a snapshot of `workspace` now and downloads it: its entries and manifest.
async fn snapshot(o: &Org<'_>, workspace: &str) -> (String, Taken) {
    let r = take(o, workspace).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    let (status, gz) = get_bytes(o, &format!("/api/v1/snapshots/{id}/archive")).await;
    assert_eq!(status, 200);
    (id, split_manifest(archive_files(&gz)))
}

/// The archive holds the seed as the packed path gives it, and its manifest lists exactly its
/// files.
fn assert_holds_the_seed(taken: &Taken, links: bool) {
    let want = expected(links);
    assert_eq!(taken.0.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    assert!(taken.0 == want, "the same bytes in every file");
    assert_eq!(taken.1, manifest_of(&want));
}

/// An organization with a conversation agent on `peer`, a run whose workspace holds the seed:
/// (the agent, the workspace's id, the session's id).
async fn seeded(o: &Org<'_>, peer: &Peer, links: bool) -> (String, String, String) {
    o.connect(peer).await;
    let agent = o.agent(service_agent("fallback", "conversation")).await;
    let conv = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conv), json!({})).await;
    assert_eq!(o.write(&run, "notes/plan.md", "# Plan\n").await.status, 204);
    let (workspace, session) = workspace_and_session(o.app, o, &run).await;
    seed_on_disk(&peer.workspace_root.join(&session).join("workspace"), links);
    (agent, workspace, session)
}

/// A new run in a new conversation, started from snapshot `id`, reads the seed back.
async fn assert_restores_the_seed(o: &Org<'_>, agent: &str, id: &str) {
    let conv = o.conversation(agent, json!({})).await;
    let run = o.run(agent, Some(&conv), json!({"snapshot_id": id})).await;
    assert_eq!(o.read(&run, "notes/plan.md").await.body, "# Plan\n");
    for (path, want) in [("data/blob.bin", binary()), ("data/more.txt", text())] {
        let got = get_bytes(o, &format!("/api/v1/runs/{run}/workspace/files?path={}", urlencode(path))).await;
        assert_eq!(got, (200, want), "{path}");
    }
    let ls = o.ws(&run, Method::GET, "ls?path=empty", None).await.json();
    assert_eq!(ls[0]["name"], "inside", "{ls}");
    o.read(&run, "node_modules/pkg/index.js").await.problem(404);
}

/// A folder of links to every program on this machine's `PATH` but those named in `without`.
fn path_without(without: &[&str]) -> tempfile::TempDir {
    let farm = tempfile::tempdir().expect("a folder");
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let link: PathBuf = farm.path().join(&name);
            if without.iter().any(|w| name == *w) || link.symlink_metadata().is_ok() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), &link);
        }
    }
    farm
}

fn client_of(peer: &Peer) -> SandboxdClient {
    SandboxdClient::new(
        SandboxdClient::default_http().expect("http"),
        url::Url::parse(&peer.url).expect("url"),
        SecretString::from(peer.token.clone()),
    )
}

db_test! {
    async fn a_sandbox_without_tar_is_snapshotted_and_restored_file_by_file_with_the_same_archive(app: TestApp) {
        let farm = path_without(&["tar"]);
        let path = farm.path().to_str().expect("utf-8").to_string();
        let peer = Peer::start(PeerOptions::default().env("PATH", path)).await.expect("a peer without tar");
        let o = Org::new(&app).await;
        let (agent, workspace, session) = seeded(&o, &peer, false).await;
        let ran = client_of(&peer).run(&session, &tar_probe()).await.expect("a command");
        assert_eq!(ran.exit_code, Some(127), "the sandbox has no tar: {ran:?}");

        let (id, taken) = snapshot(&o, &workspace).await;
        assert_holds_the_seed(&taken, false);
        assert_restores_the_seed(&o, &agent, &id).await;
    }
}

/// `command -v tar` in the sandbox: 127 when there is none.
fn tar_probe() -> RunRequest {
    RunRequest::new(["/bin/sh", "-c", "command -v tar || exit 127"])
}

/// The peer's native read limit in the refused-read test: over each file of the seed, under the
/// packed archive of them all (its first part).
const SMALL_READ_LIMIT: usize = 100_000;

db_test! {
    async fn a_host_that_hands_the_packed_archive_back_is_read_file_by_file_with_the_same_archive(app: TestApp) {
        const { assert!(70_000 + 40_000 > SMALL_READ_LIMIT) };
        let options = PeerOptions::default().env("SANDBOXD_MAX_READ_BYTES", SMALL_READ_LIMIT.to_string());
        let peer = Peer::start(options).await.expect("a peer with a small read limit");
        let o = Org::new(&app).await;
        let (agent, workspace, _) = seeded(&o, &peer, false).await;

        let (id, taken) = snapshot(&o, &workspace).await;
        assert_holds_the_seed(&taken, false);
        assert_restores_the_seed(&o, &agent, &id).await;
    }
}

/// Snapshots the seed (with `links` or not) on the shared peer while its session is live (packed
/// by the sandbox), then once the session is closed (read file by file): (the agent, the packed
/// archive, the id and archive of the one read file by file).
async fn packed_then_closed(o: &Org<'_>, links: bool) -> (String, Taken, String, Taken) {
    let peer = peer::shared().await;
    let (agent, workspace, session) = seeded(o, peer, links).await;
    let (_, packed) = snapshot(o, &workspace).await;
    client_of(peer).delete_session(&session, false).await.expect("the session closed, its files kept");
    let (id, read) = snapshot(o, &workspace).await;
    (agent, packed, id, read)
}

db_test! {
    async fn a_closed_session_is_read_file_by_file_into_the_archive_the_packed_snapshot_gave(app: TestApp) {
        let o = Org::new(&app).await;
        let (agent, packed, id, read) = packed_then_closed(&o, false).await;
        assert_holds_the_seed(&packed, false);
        assert_eq!(read, packed);
        assert_restores_the_seed(&o, &agent, &id).await;
    }
}

db_test! {
    async fn links_are_archived_alike_packed_and_file_by_file(app: TestApp) {
        let o = Org::new(&app).await;
        let (_, packed, _, read) = packed_then_closed(&o, true).await;
        // A symbolic link is left out, never followed; each name of a hard link holds its bytes.
        assert_holds_the_seed(&packed, true);
        assert!(!packed.0.keys().any(|k| k.starts_with("to-") || k == "dangling"), "{:?}", packed.0.keys());
        assert_eq!(read, packed);
    }
}

/// Runs the restore's unpacking script in `work` (the stage `.agenticos/restore-t` in parts) with
/// `path` as its `PATH`: its exit status.
fn unpack_in(work: &Path, path: &Path) -> i32 {
    let status = std::process::Command::new("/bin/sh")
        .args(["-c", UNPACK, "sh", "t"])
        .current_dir(work)
        .env_clear()
        .env("PATH", path)
        .status()
        .expect("sh runs");
    status.code().unwrap_or(-1)
}

/// The seed's folders and files as a tar.gz, cut in two parts under `work`'s stage.
fn stage_in(work: &Path) {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (path, bytes) in expected(false) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(if path.ends_with('/') { tar::EntryType::Directory } else { tar::EntryType::Regular });
        h.set_mode(if path.ends_with('/') { 0o755 } else { 0o644 });
        h.set_size(bytes.len() as u64);
        tar.append_data(&mut h, &path, bytes.as_slice()).expect("an entry");
    }
    let gz = tar.into_inner().expect("tar").finish().expect("gzip");
    let stage = work.join(".agenticos/restore-t");
    std::fs::create_dir_all(&stage).expect("the stage");
    let (first, second) = gz.split_at(gz.len() / 2);
    std::fs::write(stage.join("part-00000"), first).expect("a part");
    std::fs::write(stage.join("part-00001"), second).expect("a part");
    std::fs::write(work.join(MANIFEST), "{}").expect("the manifest");
}

/// The restore's `tar -x` runs at the lowest priority where the sandbox has `nice`; without it,
/// it unpacks all the same; without `tar` it says 127 (the restore writes file by file then).
/// Either way the stage and the manifest are gone.
#[test]
fn the_restores_unpacking_runs_without_nice_and_says_127_without_tar() {
    for (without, status) in [("nice", 0), ("tar", 127)] {
        let farm = path_without(&[without]);
        let work = tempfile::tempdir().expect("a workspace");
        stage_in(work.path());
        assert_eq!(unpack_in(work.path(), farm.path()), status, "without {without}");
        assert!(!work.path().join(".agenticos").exists(), "without {without}: the stage is removed");
        let unpacked = work.path().join("data/blob.bin").exists();
        assert_eq!(unpacked, status == 0, "without {without}");
        if unpacked {
            assert_eq!(std::fs::read(work.path().join("data/more.txt")).expect("unpacked"), text());
            assert!(work.path().join("empty/inside").is_dir());
        }
    }
}

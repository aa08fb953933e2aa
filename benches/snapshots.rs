//! `cargo bench --bench snapshots [-- --files N --mib N]`: a snapshot and a restore of a workspace
//! of 5,000 files / 200 MiB (defaults) against the real sandboxd peer (`tests/peer/run.sh`, no
//! Docker), through the same code the console runs: the archive is built from the host's
//! stored-workspace routes (`ls` + `read_bytes`), uploaded to the local-folder object store,
//! downloaded again and written file by file into a new session. Reports the time of each step,
//! the archive's size and this process's peak memory (`VmHWM`) before and after, which stays flat
//! however large the workspace is (the archive and the files are never held in memory at once).
//! The files are written straight into the peer's workspace folder (setting up is not measured);
//! half of them are text, half random bytes, so the compression ratio is neither best nor worst.

#[path = "../tests/api/peer.rs"]
mod peer;
#[path = "support/proc_status.rs"]
mod proc_status;

use std::time::Instant;

use agenticos::config::{SnapshotConfig, SnapshotStoreConfig};
use agenticos::sandbox::client::{OpenSession, SandboxdClient, OPEN_WAIT};
use agenticos::sandbox::snapshots::archive::{self, Item, TempFile};
use agenticos::sandbox::snapshots::objects::Objects;
use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use secrecy::SecretString;

fn peak_rss_kib() -> u64 {
    proc_status::status_kib("self", "VmHWM")
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn open(client: &SandboxdClient, id: &str) -> String {
    let request = OpenSession {
        session_id: Some(id.into()),
        runtime: None,
        tenant: Some("bench".into()),
        reuse: true,
        attach: false,
    };
    client.open_session(&request, OPEN_WAIT).await.expect("open a session").session.session_id
}

#[tokio::main]
async fn main() {
    let (files, mib) = (arg("--files", 5000), arg("--mib", 200));
    let peer = peer::Peer::start(peer::PeerOptions::default()).await.expect("peer");
    let http = SandboxdClient::default_http().expect("http");
    let client =
        SandboxdClient::new(http, url::Url::parse(&peer.url).expect("url"), SecretString::from(peer.token.clone()));
    let src = open(&client, "bench-src").await;

    // Setting up: files straight into the peer's workspace folder.
    let root = peer.workspace_root.join(&src).join("workspace");
    let size = mib * 1024 * 1024 / files.max(1);
    let mut rng = StdRng::seed_from_u64(14);
    for i in 0..files {
        let dir = root.join(format!("d{:02}", i % 50));
        std::fs::create_dir_all(&dir).expect("dir");
        let bytes: Vec<u8> = if i % 2 == 0 {
            (0..size).map(|_| rng.gen()).collect()
        } else {
            format!("line {i} of a text file that compresses well\n").bytes().cycle().take(size).collect()
        };
        std::fs::write(dir.join(format!("f{i}.dat")), bytes).expect("write");
    }
    std::fs::create_dir_all(root.join("node_modules/pkg")).expect("dir");
    std::fs::write(root.join("node_modules/pkg/index.js"), "left out").expect("write");
    println!("workspace: {files} files, {} MiB (+ node_modules/, left out)", files * size / 1024 / 1024);
    let rss_before = peak_rss_kib();

    let started = Instant::now();
    let built = archive::build(&client, &src).await.expect("snapshot");
    let t_build = started.elapsed();
    let store_dir = tempfile::tempdir().expect("tmp");
    let config = SnapshotConfig::with_store(SnapshotStoreConfig::Local(store_dir.path().to_path_buf()));
    let objects = Objects::from_config(&config).expect("store");
    let started = Instant::now();
    objects.put_file("bench/snapshot.tar.gz", &built.file.0).await.expect("upload");
    let t_upload = started.elapsed();
    let rss_after_snapshot = peak_rss_kib();

    let dst = open(&client, "bench-dst").await;
    let started = Instant::now();
    let download = TempFile::new();
    objects.get_to_file("bench/snapshot.tar.gz", &download.0).await.expect("download");
    let mut rx = archive::entries(download);
    let mut restored = 0;
    while let Some(item) = rx.recv().await {
        match item.expect("entry") {
            Item::Dir(p) => client.mkdir(&dst, &p.absolute()).await.expect("mkdir"),
            Item::File(p, bytes) => {
                client.write_file(&dst, &p.absolute(), &bytes).await.expect("write");
                restored += 1;
            }
        }
    }
    let t_restore = started.elapsed();
    let rss_after_restore = peak_rss_kib();
    assert_eq!(built.files as usize, files);
    assert_eq!(restored, files);
    assert!(!peer.workspace_root.join(&dst).join("workspace/node_modules").exists());

    println!(
        "snapshot: {:.1} s to read {} files from the host and write the archive, {:.1} s to upload",
        t_build.as_secs_f64(),
        built.files,
        t_upload.as_secs_f64()
    );
    println!(
        "archive: {:.1} MiB ({:.0}% of the files' bytes)",
        built.size as f64 / 1048576.0,
        100.0 * built.size as f64 / (files * size) as f64
    );
    println!("restore: {:.1} s to download and write {restored} files into a new session", t_restore.as_secs_f64());
    println!(
        "peak memory of this process (VmHWM): {} MiB before, {} MiB after the snapshot, {} MiB after the restore",
        rss_before / 1024,
        rss_after_snapshot / 1024,
        rss_after_restore / 1024
    );
}

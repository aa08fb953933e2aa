//! `cargo bench --bench snapshots [-- --files 2000,5000 --kib 40]`: issue 50's goal lines, against
//! the real sandboxd peer (`tests/peer/run.sh`, no Docker), through the same code the console runs.
//! For each workspace size (2,000 and 5,000 files of 40 KiB by default, half of them random bytes,
//! half text, and a `node_modules/` that must be left out):
//!
//! - `tar -cz` of the same folder on the peer's disk: the yardstick;
//! - the snapshot, `--rounds` times (3 by default; its median time): the archive built from the
//!   live session's workspace packed by its sandbox's `tar` and read out in a few large reads
//!   (`--snapshot-per-file`: from the host's stored-workspace routes, `ls` + `read_bytes`, several
//!   files at once), and uploaded to the local-folder object store;
//! - the restore up to the first read, `--rounds` times (its median time), each into a new session:
//!   the archive downloaded, checked against its manifest, unpacked by the sandbox's `tar`
//!   (`--per-file`: its files written one by one, several at once) and one of them read back;
//! - a 1 KiB read of another session on the same host (what a proxied read asks of the host),
//!   every 20 ms: alone for 2 s before each snapshot, during the snapshots, during the restores;
//!   its p95 alone, during the snapshots and during the restores each over all rounds (alone and
//!   during interleave, so a loaded machine's swings fall on both);
//! - this process's peak memory (`VmHWM`).
//!
//! Goals (issue 50): snapshot and restore each at most 1.25 × `tar -cz` + 0.5 s; the read's p95
//! during either at most 2 × without; peak memory at most 64 MiB. Each goal line says met or not.
//! The files are written straight into the peer's workspace folder (setting up is not measured).

#[path = "../tests/api/peer.rs"]
mod peer;
#[path = "support/proc_status.rs"]
mod proc_status;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agenticos::config::{SnapshotConfig, SnapshotStoreConfig};
use agenticos::sandbox::hosts::sandboxd::client::{OpenSession, SandboxdClient, OPEN_WAIT};
use agenticos::sandbox::hosts::sandboxd::workspaces::restore::unpack as unpack_snapshot;
use agenticos::sandbox::snapshots::archive::Item;
use agenticos::sandbox::snapshots::hold::SnapshotHold;
use agenticos::sandbox::snapshots::objects::Objects;
use agenticos::sandbox::snapshots::{reading, reading_packed, restore};
use agenticos::sandbox::workspaces::error::WorkspaceError;
use agenticos::sandbox::workspaces::Unpacked;
use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use secrecy::SecretString;

fn peak_rss_kib() -> u64 {
    proc_status::status_kib("self", "VmHWM")
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
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

/// Reads a 1 KiB file of session `probe` every 20 ms while `running`; the latencies.
fn probe(client: SandboxdClient, probe: String, running: Arc<AtomicBool>) -> tokio::task::JoinHandle<Vec<Duration>> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        while running.load(Ordering::Relaxed) {
            let started = Instant::now();
            let bytes = client.read_file(&probe, "/workspace/probe.txt").await.expect("probe read");
            assert_eq!(bytes.len(), 1024);
            out.push(started.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        out
    })
}

fn p95(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get((v.len() * 95 / 100).min(v.len().saturating_sub(1))).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// Runs `work` while the probe reads; (its result, its time, the probe's latencies).
async fn probed<T>(
    client: &SandboxdClient,
    probe_id: &str,
    work: impl std::future::Future<Output = T>,
) -> (T, Duration, Vec<Duration>) {
    let running = Arc::new(AtomicBool::new(true));
    let handle = probe(client.clone(), probe_id.to_string(), running.clone());
    let started = Instant::now();
    let out = work.await;
    let took = started.elapsed();
    running.store(false, Ordering::Relaxed);
    (out, took, handle.await.expect("probe"))
}

/// One restore up to the first read into session `dst`: the archive downloaded, then checked while
/// it is staged in the sandbox and unpacked by its `tar` (or, `per_file`, checked, then written
/// file by file), and one file read back; (the files it holds, the time to download and check it).
async fn restore_once(
    client: &SandboxdClient,
    objects: &Objects,
    key: &str,
    dst: &str,
    per_file: bool,
    size: usize,
) -> (usize, Duration) {
    let started = Instant::now();
    let file = restore::download_from(objects, key).await.expect("download");
    // Checked while the sandbox's stage is written, as the console does (`restoring.rs`).
    let (checked_tx, checked_rx) = tokio::sync::oneshot::channel();
    let checking = async {
        let check = restore::check("bench", &file.0).await.expect("check");
        let _ = checked_tx.send(check.checked);
        (check, started.elapsed())
    };
    let unpacking = async {
        if per_file {
            return Ok(Unpacked::NoShell);
        }
        unpack_snapshot(client, dst, &file.0, async { checked_rx.await.unwrap_or(false) }).await
    };
    let ((check, t_fetch), unpacked) = tokio::join!(checking, unpacking);
    assert!(check.checked);
    let files_in = check.entries.iter().filter(|(_, size)| size.is_some()).count();
    let unpacked = unpacked.expect("unpack");
    let fetched = restore::Fetched { file, checked: check.checked, entries: check.entries };
    if let Unpacked::NoShell = unpacked {
        restore::write_entries(fetched.into_entries(), |item| async move {
            match item {
                Item::Dir(p) => client.mkdir(dst, &p.absolute()).await.map_err(|e| WorkspaceError::Host(e.into())),
                Item::File(p, bytes) => {
                    client.write_file(dst, &p.absolute(), &bytes).await.map_err(|e| WorkspaceError::Host(e.into()))
                }
            }
        })
        .await
        .expect("restore");
    }
    let first = client.read_file(dst, "/workspace/d01/f1.dat").await.expect("the first read");
    assert_eq!(first.len(), size);
    (files_in, t_fetch)
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = arg("--files")
        .unwrap_or_else(|| "2000,5000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("--files N[,N]"))
        .collect();
    let kib: usize = arg("--kib").map(|s| s.parse().expect("--kib N")).unwrap_or(40);
    // `--per-file`: the restore writes file by file (a sandbox without `tar`) instead of unpacking.
    let per_file = std::env::args().any(|a| a == "--per-file");
    // `--rounds N`: snapshots taken one after another, each after 2 s of the probe alone; the
    // probe's p95 alone and during are each over all rounds (a loaded machine's swings fall on both).
    let rounds: usize = arg("--rounds").map(|s| s.parse().expect("--rounds N")).unwrap_or(3).max(1);
    // `--snapshot-per-file`: the snapshot reads file by file (a closed session) instead of having
    // the live session's sandbox pack the workspace.
    let snapshot_per_file = std::env::args().any(|a| a == "--snapshot-per-file");
    let peer = peer::Peer::start(peer::PeerOptions::default()).await.expect("peer");
    let http = SandboxdClient::default_http().expect("http");
    let client =
        SandboxdClient::new(http, url::Url::parse(&peer.url).expect("url"), SecretString::from(peer.token.clone()));
    let probe_id = open(&client, "bench-probe").await;
    client.write_file(&probe_id, "/workspace/probe.txt", &[b'p'; 1024]).await.expect("probe file");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at the start: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let rss_start = peak_rss_kib();

    for (round, files) in sizes.into_iter().enumerate() {
        let src = open(&client, &format!("bench-src-{round}")).await;
        let root = peer.workspace_root.join(&src).join("workspace");
        let size = kib * 1024;
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
        println!();
        println!("workspace: {files} files of {kib} KiB, {} MiB (+ node_modules/, left out)", files * size / 1048576);

        // The yardstick: tar -cz of the same folder.
        let tar_out = tempfile::NamedTempFile::new().expect("tmp");
        let started = Instant::now();
        let status = std::process::Command::new("tar")
            .arg("-czf")
            .arg(tar_out.path())
            .arg("--exclude=node_modules")
            .arg("-C")
            .arg(&root)
            .arg(".")
            .status()
            .expect("tar");
        assert!(status.success());
        let t_tar = started.elapsed();
        drop(tar_out);

        // The snapshot: read into an archive, uploaded; each round after the probe alone.
        let store_dir = tempfile::tempdir().expect("tmp");
        let config = SnapshotConfig::with_store(SnapshotStoreConfig::Local(store_dir.path().to_path_buf()));
        let objects = Objects::from_config(&config).expect("store");
        let key = "bench/snapshot.tar.gz";
        let hold = SnapshotHold::default();
        let (mut alone, mut during, mut taken) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (_, _, idle) = probed(&client, &probe_id, tokio::time::sleep(Duration::from_secs(2))).await;
            alone.extend(idle);
            let ((built, t_read), t_snapshot, probes) = probed(&client, &probe_id, async {
                let started = Instant::now();
                let built = if snapshot_per_file {
                    reading::file_by_file(&hold, &client, &src).await
                } else {
                    reading_packed::from_sandboxd(&hold, &client, &src).await
                };
                let built = built.expect("snapshot");
                let t_read = started.elapsed();
                objects.put_file(key, &built.file.0, &hold).await.expect("upload");
                (built, t_read)
            })
            .await;
            assert_eq!(built.files as usize, files);
            during.extend(probes);
            taken.push((t_snapshot, t_read, built));
        }
        let (p95_idle, p95_snapshot) = (p95(alone), p95(during));
        // The median round.
        taken.sort_by_key(|(t, _, _)| *t);
        let times: Vec<String> = taken.iter().map(|(t, _, _)| format!("{:.2}", t.as_secs_f64())).collect();
        let (t_snapshot, t_read, built) = taken.swap_remove(rounds / 2);

        // The restore up to the first read, `--rounds` times, each into a new session: downloaded,
        // checked, written, read.
        let (mut restores, mut during_restore, mut dsts) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let dst = open(&client, &format!("bench-dst-{round}-{r}")).await;
            let (restored, t_restore, probes) =
                probed(&client, &probe_id, restore_once(&client, &objects, key, &dst, per_file, size)).await;
            during_restore.extend(probes);
            restores.push((t_restore, restored));
            dsts.push(dst);
        }
        restores.sort_by_key(|(t, _)| *t);
        let restore_times: Vec<String> = restores.iter().map(|(t, _)| format!("{:.2}", t.as_secs_f64())).collect();
        let (t_restore, (restored, t_fetch)) = restores.swap_remove(rounds / 2);
        let p95_restore = p95(during_restore);
        assert_eq!(restored, files);
        for dst in &dsts {
            assert!(!peer.workspace_root.join(dst).join("workspace/node_modules").exists());
        }
        let peak = peak_rss_kib();

        let goal = |t: Duration| t_tar.mul_f64(1.25) + Duration::from_millis(500) >= t;
        let bound = t_tar.as_secs_f64() * 1.25 + 0.5;
        println!("tar -cz of the folder: {:.2} s", t_tar.as_secs_f64());
        println!(
            "snapshot ({}): {:.2} s, the median of {rounds} ({} s; {:.2} s to read {} files and write the archive, {:.1} MiB, {:.0}% of the files' bytes; the rest uploading)",
            if snapshot_per_file { "file by file" } else { "packed by the sandbox's tar" },
            t_snapshot.as_secs_f64(),
            times.join(", "),
            t_read.as_secs_f64(),
            built.files,
            built.size as f64 / 1048576.0,
            100.0 * built.size as f64 / (files * size) as f64
        );
        println!(
            "restore up to the first read: {:.2} s, the median of {rounds} ({} s; {:.2} s to download the archive and check it against its manifest, then {restored} files {})",
            t_restore.as_secs_f64(),
            restore_times.join(", "),
            t_fetch.as_secs_f64(),
            if per_file { "written one by one" } else { "unpacked by the sandbox's tar" }
        );
        println!(
            "1 KiB read p95: {:.1} ms alone, {:.1} ms during the snapshots, {:.1} ms during the restores",
            ms(p95_idle),
            ms(p95_snapshot),
            ms(p95_restore)
        );
        println!(
            "goal {files} files: snapshot {:.2} s <= 1.25 x tar + 0.5 s = {bound:.2} s: {}",
            t_snapshot.as_secs_f64(),
            met(goal(t_snapshot))
        );
        println!(
            "goal {files} files: restore {:.2} s <= 1.25 x tar + 0.5 s = {bound:.2} s: {}",
            t_restore.as_secs_f64(),
            met(goal(t_restore))
        );
        let latency = |during: Duration| during <= p95_idle * 2;
        println!(
            "goal {files} files: read p95 during the snapshot {:.1} ms <= 2 x {:.1} ms: {}",
            ms(p95_snapshot),
            ms(p95_idle),
            met(latency(p95_snapshot))
        );
        println!(
            "goal {files} files: read p95 during the restore {:.1} ms <= 2 x {:.1} ms: {}",
            ms(p95_restore),
            ms(p95_idle),
            met(latency(p95_restore))
        );
        println!(
            "goal {files} files: peak memory {} MiB (at the start {} MiB) <= 64 MiB: {}",
            peak / 1024,
            rss_start / 1024,
            met(peak <= 64 * 1024)
        );
        let _ = client.delete_session(&src, true).await;
        for dst in &dsts {
            let _ = client.delete_session(dst, true).await;
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!();
    println!("load average at the end: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
}

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
//!
//! `--daytona`: the same rounds against the FAKE Daytona (tests/peer/daytona/fake_daytona.py; no
//! Daytona can run here), through Daytona's snapshot and restore code: the files read many a
//! request (`POST /files/bulk-download`) and written many a request (`POST /files/bulk-upload`);
//! the probe is a 1 KiB `GET /files/download` of a sandbox on a second fake (each Daytona sandbox
//! has a daemon of its own; `--probe-shared`: on the same fake; `--source-nice`: the snapshot's
//! own fake at `nice 19`) (`support/snapshots_daytona.rs`).
//! The fake is local, so the figures measure our side.

#[path = "../tests/api/daytona_fake.rs"]
mod daytona_fake;
#[path = "../tests/api/peer.rs"]
mod peer;
#[path = "support/proc_status.rs"]
mod proc_status;
#[path = "support/snapshots_daytona.rs"]
mod snapshots_daytona;

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agenticos::config::{SnapshotConfig, SnapshotStoreConfig};
use agenticos::sandbox::hosts::sandboxd::client::{OpenSession, SandboxdClient, OPEN_WAIT};
use agenticos::sandbox::hosts::sandboxd::snapshots::{file_by_file, packed};
use agenticos::sandbox::hosts::sandboxd::workspaces::restore::unpack as unpack_snapshot;
use agenticos::sandbox::snapshots::archive::Item;
use agenticos::sandbox::snapshots::hold::SnapshotHold;
use agenticos::sandbox::snapshots::objects::Objects;
use agenticos::sandbox::snapshots::reading::Built;
use agenticos::sandbox::snapshots::restore;
use agenticos::sandbox::workspaces::error::WorkspaceError;
use agenticos::sandbox::workspaces::Unpacked;
use futures_util::future::BoxFuture;
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

/// Runs `read` (a 1 KiB read of another session) every 20 ms while `running`; the latencies.
fn probe<F, Fut>(read: F, running: Arc<AtomicBool>) -> tokio::task::JoinHandle<Vec<Duration>>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut out = Vec::new();
        while running.load(Ordering::Relaxed) {
            let started = Instant::now();
            read().await;
            out.push(started.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        out
    })
}

/// Reads `/workspace/probe.txt` of sandboxd session `probe_id`.
fn sandboxd_read(
    client: &SandboxdClient,
    probe_id: &str,
) -> impl Fn() -> BoxFuture<'static, ()> + Clone + Send + 'static {
    let (client, probe_id) = (client.clone(), probe_id.to_string());
    move || {
        let (client, probe_id) = (client.clone(), probe_id.clone());
        Box::pin(async move {
            let bytes = client.read_file(&probe_id, "/workspace/probe.txt").await.expect("probe read");
            assert_eq!(bytes.len(), 1024);
        })
    }
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

/// Runs `work` while the probe reads with `read`; (its result, its time, the probe's latencies).
async fn probed<T, F, Fut>(read: F, work: impl Future<Output = T>) -> (T, Duration, Vec<Duration>)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let running = Arc::new(AtomicBool::new(true));
    let handle = probe(read, running.clone());
    let started = Instant::now();
    let out = work.await;
    let took = started.elapsed();
    running.store(false, Ordering::Relaxed);
    (out, took, handle.await.expect("probe"))
}

/// `files` files of `kib` KiB under `root` (in 50 folders; half random bytes, half text), and a
/// `node_modules/` that must be left out.
fn seed(root: &Path, files: usize, kib: usize) {
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
}

/// A size's workspace, written, and its yardstick.
struct Workload {
    files: usize,
    file_bytes: usize,
    /// `tar -cz` of the folder.
    t_tar: Duration,
}

/// Seeds `root` ([`seed`]) and times `tar -cz` of it.
fn workload(root: &Path, files: usize, kib: usize) -> Workload {
    seed(root, files, kib);
    Workload { files, file_bytes: kib * 1024, t_tar: tar_cz(root) }
}

/// A snapshot store in a temporary folder (kept while the folder is) and the archive's key.
fn local_store() -> (tempfile::TempDir, Objects, &'static str) {
    let store_dir = tempfile::tempdir().expect("tmp");
    let config = SnapshotConfig::with_store(SnapshotStoreConfig::Local(store_dir.path().to_path_buf()));
    let objects = Objects::from_config(&config).expect("store");
    (store_dir, objects, "bench/snapshot.tar.gz")
}

/// The yardstick: how long `tar -cz` of the folder `root` takes.
fn tar_cz(root: &Path) -> Duration {
    let tar_out = tempfile::NamedTempFile::new().expect("tmp");
    let started = Instant::now();
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(tar_out.path())
        .arg("--exclude=node_modules")
        .arg("-C")
        .arg(root)
        .arg(".")
        .status()
        .expect("tar");
    assert!(status.success());
    started.elapsed()
}

fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// A size's snapshot rounds: the median round and the probe's p95 alone and during.
struct Rounds {
    /// The median snapshot, and each round's time.
    t_snapshot: Duration,
    times: Vec<Duration>,
    /// The median round's time to read the files and write the archive.
    t_read: Duration,
    built: Built,
    p95_idle: Duration,
    p95_snapshot: Duration,
}

/// `rounds` snapshots one after another, each after 2 s of the probe (`read`) alone: `take`
/// builds the archive (of `files` files), then it is uploaded to `objects` at `key`.
async fn snapshot_rounds<R, T, TF>(
    rounds: usize,
    files: usize,
    read: R,
    objects: &Objects,
    key: &str,
    take: T,
) -> Rounds
where
    R: Fn() -> BoxFuture<'static, ()> + Clone + Send + 'static,
    T: Fn() -> TF,
    TF: Future<Output = Result<Built, WorkspaceError>>,
{
    let hold = SnapshotHold::default();
    let (mut alone, mut during, mut taken) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (_, _, idle) = probed(read.clone(), tokio::time::sleep(Duration::from_secs(2))).await;
        alone.extend(idle);
        let ((built, t_read), t_snapshot, probes) = probed(read.clone(), async {
            let started = Instant::now();
            let built = take().await.expect("snapshot");
            let t_read = started.elapsed();
            objects.put_file(key, &built.file.0, &hold).await.expect("upload");
            (built, t_read)
        })
        .await;
        assert_eq!(built.files as usize, files);
        during.extend(probes);
        taken.push((t_snapshot, t_read, built));
    }
    // The median round.
    taken.sort_by_key(|(t, _, _)| *t);
    let times: Vec<Duration> = taken.iter().map(|(t, _, _)| *t).collect();
    let (t_snapshot, t_read, built) = taken.swap_remove(rounds / 2);
    Rounds { t_snapshot, times, t_read, built, p95_idle: p95(alone), p95_snapshot: p95(during) }
}

/// One size's figures, printed as the goal lines.
struct Figures {
    work: Workload,
    snap: Rounds,
    snapshot_how: &'static str,
    t_restore: Duration,
    t_fetch: Duration,
    restored: usize,
    restore_how: &'static str,
    p95_restore: Duration,
}

/// Prints `f`'s figures and goal lines; the peak memory now, against `start_kib` at the start.
fn report(f: &Figures, start_kib: u64) {
    let (files, snap, t_tar) = (f.work.files, &f.snap, f.work.t_tar);
    let peak_kib = peak_rss_kib();
    let goal = |t: Duration| t_tar.mul_f64(1.25) + Duration::from_millis(500) >= t;
    let bound = t_tar.as_secs_f64() * 1.25 + 0.5;
    let times: Vec<String> = snap.times.iter().map(|t| format!("{:.2}", t.as_secs_f64())).collect();
    println!("tar -cz of the folder: {:.2} s", t_tar.as_secs_f64());
    println!(
        "snapshot ({}): {:.2} s, the median of {} ({} s; {:.2} s to read {} files and write the archive, {:.1} MiB, {:.0}% of the files' bytes; the rest uploading)",
        f.snapshot_how,
        snap.t_snapshot.as_secs_f64(),
        snap.times.len(),
        times.join(", "),
        snap.t_read.as_secs_f64(),
        snap.built.files,
        snap.built.size as f64 / 1048576.0,
        100.0 * snap.built.size as f64 / (files * f.work.file_bytes) as f64
    );
    println!(
        "restore up to the first read: {:.2} s ({:.2} s to download the archive and check it against its manifest, then {} files {})",
        f.t_restore.as_secs_f64(),
        f.t_fetch.as_secs_f64(),
        f.restored,
        f.restore_how
    );
    println!(
        "1 KiB read p95: {:.1} ms alone, {:.1} ms during the snapshots, {:.1} ms during the restore",
        ms(snap.p95_idle),
        ms(snap.p95_snapshot),
        ms(f.p95_restore)
    );
    println!(
        "goal {files} files: snapshot {:.2} s <= 1.25 x tar + 0.5 s = {bound:.2} s: {}",
        snap.t_snapshot.as_secs_f64(),
        met(goal(snap.t_snapshot))
    );
    println!(
        "goal {files} files: restore {:.2} s <= 1.25 x tar + 0.5 s = {bound:.2} s: {}",
        f.t_restore.as_secs_f64(),
        met(goal(f.t_restore))
    );
    let latency = |during: Duration| during <= snap.p95_idle * 2;
    println!(
        "goal {files} files: read p95 during the snapshot {:.1} ms <= 2 x {:.1} ms: {}",
        ms(snap.p95_snapshot),
        ms(snap.p95_idle),
        met(latency(snap.p95_snapshot))
    );
    println!(
        "goal {files} files: read p95 during the restore {:.1} ms <= 2 x {:.1} ms: {}",
        ms(f.p95_restore),
        ms(snap.p95_idle),
        met(latency(f.p95_restore))
    );
    println!(
        "goal {files} files: peak memory {} MiB (at the start {} MiB) <= 64 MiB: {}",
        peak_kib / 1024,
        start_kib / 1024,
        met(peak_kib <= 64 * 1024)
    );
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = arg("--files")
        .unwrap_or_else(|| "2000,5000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("--files N[,N]"))
        .collect();
    let kib: usize = arg("--kib").map(|s| s.parse().expect("--kib N")).unwrap_or(40);
    // `--rounds N`: snapshots taken one after another, each after 2 s of the probe alone; the
    // probe's p95 alone and during are each over all rounds (a loaded machine's swings fall on both).
    let rounds: usize = arg("--rounds").map(|s| s.parse().expect("--rounds N")).unwrap_or(3).max(1);
    if std::env::args().any(|a| a == "--daytona") {
        snapshots_daytona::run(&sizes, kib, rounds).await;
    } else {
        sandboxd(&sizes, kib, rounds).await;
    }
    println!();
    println!("load average at the end: {}", load_average());
}

async fn sandboxd(sizes: &[usize], kib: usize, rounds: usize) {
    // `--per-file`: the restore writes file by file (a sandbox without `tar`) instead of unpacking.
    let per_file = std::env::args().any(|a| a == "--per-file");
    // `--snapshot-per-file`: the snapshot reads file by file (a closed session) instead of having
    // the live session's sandbox pack the workspace.
    let snapshot_per_file = std::env::args().any(|a| a == "--snapshot-per-file");
    let peer = peer::Peer::start(peer::PeerOptions::default()).await.expect("peer");
    let http = SandboxdClient::default_http().expect("http");
    let client =
        SandboxdClient::new(http, url::Url::parse(&peer.url).expect("url"), SecretString::from(peer.token.clone()));
    let probe_id = open(&client, "bench-probe").await;
    client.write_file(&probe_id, "/workspace/probe.txt", &[b'p'; 1024]).await.expect("probe file");
    println!("load average at the start: {}", load_average());
    let rss_start = peak_rss_kib();

    for (round, &files) in sizes.iter().enumerate() {
        let src = open(&client, &format!("bench-src-{round}")).await;
        let root = peer.workspace_root.join(&src).join("workspace");
        let work = workload(&root, files, kib);
        // The snapshot: read into an archive, uploaded; each round after the probe alone.
        let (_store, objects, key) = local_store();
        let snap = snapshot_rounds(rounds, files, sandboxd_read(&client, &probe_id), &objects, key, || async {
            let hold = SnapshotHold::default();
            if snapshot_per_file {
                file_by_file::file_by_file(&hold, &client, &src).await
            } else {
                packed::from_sandboxd(&hold, &client, &src).await
            }
        })
        .await;

        // The restore up to the first read, `--rounds` times, each into a new session: downloaded,
        // checked while staged, unpacked (or written), one file read back.
        let (mut restores, mut during_restore, mut dsts) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let dst = open(&client, &format!("bench-dst-{round}-{r}")).await;
            let (restored, t_restore, probes) = probed(
                sandboxd_read(&client, &probe_id),
                restore_once(&client, &objects, key, &dst, per_file, work.file_bytes),
            )
            .await;
            during_restore.extend(probes);
            restores.push((t_restore, restored));
            dsts.push(dst);
        }
        restores.sort_by_key(|(t, _)| *t);
        let (t_restore, (restored, t_fetch)) = restores.swap_remove(rounds / 2);
        assert_eq!(restored, files);
        for dst in &dsts {
            assert!(!peer.workspace_root.join(dst).join("workspace/node_modules").exists());
        }
        report(
            &Figures {
                work,
                snap,
                snapshot_how: if snapshot_per_file { "file by file" } else { "packed by the sandbox's tar" },
                t_restore,
                t_fetch,
                restored,
                restore_how: if per_file { "written one by one" } else { "unpacked by the sandbox's tar" },
                p95_restore: p95(during_restore),
            },
            rss_start,
        );
        let _ = client.delete_session(&src, true).await;
        for dst in &dsts {
            let _ = client.delete_session(dst, true).await;
        }
    }
}

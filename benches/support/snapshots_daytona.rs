//! `cargo bench --bench snapshots -- --daytona`: the snapshot rounds against the FAKE Daytona
//! (tests/api/daytona_fake.rs starts tests/peer/daytona/fake_daytona.py; no Daytona can run here),
//! through Daytona's own snapshot and restore code. Each sandbox is created through our client
//! with the `workspace` root label and opened as a snapshot opens it (`stored::open_with`); the
//! files are written straight into its folder on the fake's disk, where `tar -cz` runs too.
//!
//! - the snapshot: `hosts::daytona::snapshots::from_daytona` (the files read in bulk downloads), the
//!   archive uploaded to the local-folder store, as `hosts::daytona::snapshots::archive` does;
//! - the restore up to the first read: `restore::fetch_checked`, then the archive written by bulk
//!   uploads (`Stored::unpack`, what a restore into a Daytona workspace runs), then one file read;
//! - the probe: a 1 KiB `GET /files/download` of a sandbox on a second fake (`--probe-shared`:
//!   on the same fake, whose one Python process then serves both).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agenticos::sandbox::hosts::daytona::client::labels::{ROOT, ROOT_WORKSPACE};
use agenticos::sandbox::hosts::daytona::client::{CreateSandbox, DaytonaClient};
use agenticos::sandbox::hosts::daytona::snapshots::from_daytona;
use agenticos::sandbox::hosts::daytona::workspaces::known::KnownSandboxes;
use agenticos::sandbox::hosts::daytona::workspaces::stored::{open_with, Start, Stored};
use agenticos::sandbox::snapshots::hold::SnapshotHold;
use agenticos::sandbox::snapshots::restore;
use agenticos::sandbox::workspaces::backend::READ_MAX;
use agenticos::sandbox::workspaces::Unpacked;
use futures_util::future::BoxFuture;
use secrecy::SecretString;

use crate::daytona_fake::FakeDaytona;
use crate::{load_average, local_store, p95, peak_rss_kib, probed, report, snapshot_rounds, workload, Figures};

/// A sandbox named `name`, created on the fake with the workspace folder as its root and opened
/// as a snapshot opens it (waiting for it to start); its workspace folder on the fake's disk.
async fn sandbox(client: &DaytonaClient, known: &KnownSandboxes, name: &str) -> (String, Stored, PathBuf) {
    let create = CreateSandbox {
        name: Some(name.into()),
        labels: BTreeMap::from([(ROOT.to_string(), ROOT_WORKSPACE.to_string())]),
        ..CreateSandbox::default()
    };
    let created = client.create_sandbox(&create).await.expect("create a sandbox");
    let stored = open_with(client, known, &created.id, Start::IfStopped).await.expect("open the sandbox");
    let home = client.toolbox(&client.get_sandbox(&created.id).await.expect("the sandbox")).await.expect("toolbox");
    let home = home.user_home_dir().await.expect("its home");
    let root = PathBuf::from(home).join("workspace");
    std::fs::create_dir_all(&root).expect("the workspace folder");
    (created.id, stored, root)
}

/// Reads the probe sandbox's `probe.txt` (1 KiB).
fn daytona_read(probe: &Arc<Stored>) -> impl Fn() -> BoxFuture<'static, ()> + Clone + Send + 'static {
    let probe = probe.clone();
    move || {
        let probe = probe.clone();
        Box::pin(async move {
            let bytes = probe.read("probe.txt", READ_MAX).await.expect("probe read");
            assert_eq!(bytes.len(), 1024);
        })
    }
}

pub async fn run(sizes: &[usize], kib: usize, rounds: usize) {
    let fake = FakeDaytona::start(&[]);
    let http = DaytonaClient::default_http().expect("http");
    let api = url::Url::parse(&fake.api_url).expect("url");
    let client = DaytonaClient::new(http, api, SecretString::from(fake.api_key.clone())).expect("client");
    let known = KnownSandboxes::default();
    // The probe's sandbox is on a second fake: each Daytona sandbox has a daemon of its own, where
    // the fake serves every sandbox from one Python process (one interpreter lock), so a bulk
    // request of one sandbox would delay another's reads there as no Daytona would.
    // `--probe-shared`: on the same fake, to see that.
    let shared = std::env::args().any(|a| a == "--probe-shared");
    // `--source-nice`: the snapshot's own fake at the lowest priority. It stands for a daemon on
    // Daytona's machines, not ours; here it shares the two cores with the probe's fake and with
    // our side, and this shows how much of the probe's wait is that sharing.
    if std::env::args().any(|a| a == "--source-nice") {
        let status = std::process::Command::new("renice")
            .args(["-n", "19", "-p", &fake.pid().to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("renice");
        assert!(status.success(), "renice the snapshot's fake");
        println!("the snapshot's fake runs at nice 19 (--source-nice)");
    }
    let apart = (!shared).then(|| FakeDaytona::start(&[]));
    let probe_fake = apart.as_ref().unwrap_or(&fake);
    let probe_client = DaytonaClient::new(
        DaytonaClient::default_http().expect("http"),
        url::Url::parse(&probe_fake.api_url).expect("url"),
        SecretString::from(probe_fake.api_key.clone()),
    )
    .expect("client");
    let (_, probe, probe_root) = sandbox(&probe_client, &known, "bench-probe").await;
    std::fs::write(probe_root.join("probe.txt"), [b'p'; 1024]).expect("probe file");
    let probe = Arc::new(probe);
    println!(
        "against the FAKE Daytona (local: the figures measure our side); the probe's sandbox on {}",
        if shared { "the same fake" } else { "a second fake (its own daemon)" }
    );
    println!("load average at the start: {}", load_average());
    let rss_start = peak_rss_kib();

    for (round, &files) in sizes.iter().enumerate() {
        let (src_id, src, root) = sandbox(&client, &known, &format!("bench-src-{round}")).await;
        let work = workload(&root, files, kib);
        let (_store, objects, key) = local_store();
        let snap = snapshot_rounds(rounds, files, daytona_read(&probe), &objects, key, || async {
            from_daytona(&SnapshotHold::default(), &src, &src_id).await
        })
        .await;

        let (dst_id, dst, dst_root) = sandbox(&client, &known, &format!("bench-dst-{round}")).await;
        // Timed in two parts (the probe through both), to see which part costs the probe.
        let (fetched, t_fetch, mut p95_restore) = probed(daytona_read(&probe), async {
            let fetched = restore::fetch_checked(&objects, "bench", key).await.expect("download and check");
            assert!(fetched.checked);
            fetched
        })
        .await;
        let restored = fetched.entries.iter().filter(|(_, size)| size.is_some()).count();
        let p95_fetch = p95(p95_restore.clone());
        let (_, t_write, during_writes) = probed(daytona_read(&probe), async {
            let unpacked = dst.unpack(&fetched.file.0).await.expect("bulk uploads");
            assert!(matches!(unpacked, Unpacked::Done));
            let first = dst.read("d01/f1.dat", READ_MAX).await.expect("the first read");
            assert_eq!(first.len(), work.file_bytes);
        })
        .await;
        println!(
            "(the restore's two parts: the probe's p95 {:.1} ms while downloading and checking, {:.1} ms while uploading)",
            p95_fetch.as_secs_f64() * 1000.0,
            p95(during_writes.clone()).as_secs_f64() * 1000.0
        );
        p95_restore.extend(during_writes);
        let t_restore = t_fetch + t_write;
        assert_eq!(restored, files);
        assert!(!dst_root.join("node_modules").exists());
        report(
            &Figures {
                work,
                snap,
                snapshot_how: "Daytona bulk downloads",
                t_restore,
                t_fetch,
                restored,
                restore_how: "written by bulk uploads",
                p95_restore: p95(p95_restore),
            },
            rss_start,
        );
        let _ = client.delete_sandbox(&src_id).await;
        let _ = client.delete_sandbox(&dst_id).await;
    }
}

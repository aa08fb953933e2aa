//! A workspace as one archive (tar + gzip) in a temporary file, and back: the format alone. What
//! reads a workspace from its host is `reading.rs` (each kind's walk and reads in its folder,
//! `sandbox/hosts/<kind>/snapshots`); what writes an archive into a workspace is
//! the workspaces' `restoring.rs`. Each archive ends with a manifest (`manifest.rs`: every file's
//! size and SHA-256) that a restore checks the whole archive against before it writes anything.
//! Memory stays flat: a bounded number of files in flight ([`Budget`]), never the archive.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use super::manifest::{Manifest, ManifestFile, Verdict, MANIFEST_PATH};
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::vocabulary::paths::{self, WorkspacePath};

/// Entries queued between a reader and a writer.
const QUEUED: usize = 16;

/// Bytes of file contents in flight at once (read from a host and not yet archived, or read from
/// an archive and not yet written to a host): what keeps memory flat whatever the files' sizes.
pub const BYTES_IN_FLIGHT: usize = 24 * 1024 * 1024;

/// gzip level 1: the archive is written as fast as the host is read (a level that compresses
/// harder makes the console's CPU the bottleneck for little gain on what workspaces hold: text
/// compresses well at level 1 too, and random or already compressed bytes not at all).
const LEVEL: u32 = 1;

/// One entry of an archive.
pub enum Item {
    Dir(WorkspacePath),
    File(WorkspacePath, Vec<u8>),
}

/// An entry with its share of the [`Budget`], released once the entry is written.
pub struct Budgeted(pub Item, pub Option<OwnedSemaphorePermit>);

/// A budget of bytes in flight, in KiB (a file takes its size, at most the whole budget).
#[derive(Clone)]
pub struct Budget(Arc<Semaphore>, u64);

impl Budget {
    pub fn new(bytes: usize) -> Budget {
        let kib = bytes / 1024;
        Budget(Arc::new(Semaphore::new(kib)), kib as u64)
    }

    fn kib(&self, size: u64) -> u32 {
        (size / 1024 + 1).min(self.1) as u32
    }

    /// Waits for room for `size` bytes.
    pub async fn take(&self, size: u64) -> OwnedSemaphorePermit {
        let n = self.kib(size);
        self.0.clone().acquire_many_owned(n).await.expect("the budget is never closed")
    }

    /// The same, from a blocking thread of the runtime.
    pub fn take_blocking(&self, size: u64) -> OwnedSemaphorePermit {
        let n = self.kib(size);
        let acquired = tokio::runtime::Handle::current().block_on(self.0.clone().acquire_many_owned(n));
        acquired.expect("the budget is never closed")
    }
}

/// A temporary file, removed when dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new() -> TempFile {
        TempFile(std::env::temp_dir().join(format!("agenticos-snapshot-{}.tar.gz", crate::db::new_id())))
    }
}

impl Default for TempFile {
    fn default() -> Self {
        TempFile::new()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The writing end of an archive: entries go in through [`Writer::tx`], in order; [`Writer::finish`]
/// appends the manifest and closes the file.
pub struct Writer {
    pub tx: mpsc::Sender<Budgeted>,
    done: oneshot::Receiver<std::io::Result<u64>>,
    pub file: TempFile,
}

impl Writer {
    /// A new archive in a temporary file (readable by this user only), written on a blocking
    /// thread of the runtime.
    pub fn start() -> Writer {
        Writer::start_with(|write| {
            let (tx, rx) = oneshot::channel();
            tokio::task::spawn_blocking(move || tx.send(write()));
            rx
        })
    }

    /// The same, written on a thread that gives way ([`in_background`]): for entries that come
    /// faster than they are compressed (a tar taken apart), so the burst costs the console's
    /// requests, and a host sharing the machine, little.
    pub fn start_giving_way() -> Writer {
        Writer::start_with(in_background)
    }

    fn start_with<S>(spawn: S) -> Writer
    where
        S: FnOnce(Box<dyn FnOnce() -> std::io::Result<u64> + Send>) -> oneshot::Receiver<std::io::Result<u64>>,
    {
        let file = TempFile::new();
        let (tx, rx) = mpsc::channel::<Budgeted>(QUEUED);
        let target = file.0.clone();
        let done = spawn(Box::new(move || write_archive(&target, rx)));
        Writer { tx, done, file }
    }

    /// Waits for the writer once every entry was sent (the sender dropped): (the file, its size,
    /// the files it holds).
    pub async fn finish(self) -> std::io::Result<(TempFile, u64, u64)> {
        let Writer { tx, done, file } = self;
        drop(tx);
        let files = done.await.map_err(|_| std::io::Error::other("the archive's writer stopped"))??;
        let size = std::fs::metadata(&file.0)?.len();
        Ok((file, size, files))
    }
}

/// How much a snapshot's own threads (compressing, taking a tar apart, checking an archive before a
/// restore) give way: the requests this console serves (a proxied read among them) come first, and
/// so does whatever shares its machine, a host's service in the bench.
const NICE: i32 = 10;

/// Runs `work` on a thread of its own at a lower priority (a thread of the runtime's blocking pool
/// could not get its priority back), within the runtime: its result, once done.
pub fn in_background<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> oneshot::Receiver<T> {
    let (tx, rx) = oneshot::channel();
    let rt = tokio::runtime::Handle::current();
    let spawned = std::thread::Builder::new().name("snapshot-archive".into()).spawn(move || {
        let _rt = rt.enter();
        #[cfg(target_os = "linux")]
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), NICE);
        let _ = tx.send(work());
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "a snapshot's thread could not be started");
    }
    rx
}

fn write_archive(target: &Path, mut rx: mpsc::Receiver<Budgeted>) -> std::io::Result<u64> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let out = std::io::BufWriter::with_capacity(256 * 1024, options.open(target)?);
    let mut tar = tar::Builder::new(GzEncoder::new(out, Compression::new(LEVEL)));
    let mtime = (crate::db::now_ms() / 1000).max(0) as u64;
    let mut manifest = Manifest::default();
    while let Some(Budgeted(item, permit)) = rx.blocking_recv() {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(mtime);
        match item {
            Item::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                tar.append_data(&mut h, format!("{}/", p.relative()), std::io::empty())?;
            }
            Item::File(p, bytes) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(bytes.len() as u64);
                manifest.files.push(ManifestFile::of(p.relative(), &bytes));
                tar.append_data(&mut h, p.relative(), bytes.as_slice())?;
            }
        }
        drop(permit);
    }
    let body = manifest.to_json();
    let mut h = tar::Header::new_gnu();
    h.set_mtime(mtime);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o644);
    h.set_size(body.len() as u64);
    tar.append_data(&mut h, MANIFEST_PATH, body.as_slice())?;
    let gz = tar.into_inner()?;
    let mut out = gz.finish()?;
    std::io::Write::flush(&mut out)?;
    Ok(manifest.files.len() as u64)
}

/// What checking an archive found: the verdict, and (when it matches) its entries in order:
/// (workspace-relative path, bytes; none for a folder), the manifest left out.
pub struct Checked {
    pub verdict: Verdict,
    pub entries: Vec<(String, Option<u64>)>,
}

/// Reads the whole archive and checks it against its manifest (every file's size and SHA-256, no
/// file missing or added). An entry that is not a plain folder or file of the workspace (a link,
/// a device, a path that leaves the workspace or is not written as we write paths) differs too,
/// so an archive that matches can be unpacked by any `tar`. An archive without a manifest (taken
/// before manifests) is `Unchecked`. Decompressing and hashing the whole archive is a burst: it runs
/// on a thread that gives way ([`in_background`]), as the snapshot's own threads do, so the console's
/// requests and a host on the same machine come first.
pub async fn verify(file: &Path) -> std::io::Result<Checked> {
    let path = file.to_path_buf();
    in_background(move || {
        let (mut seen, mut odd, mut entries) = (Vec::new(), Vec::new(), Vec::new());
        let mut manifest = None;
        let mut archive = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(std::fs::File::open(&path)?)));
        for entry in archive.entries()? {
            let mut entry = entry?;
            let raw = entry.path()?.to_string_lossy().to_string();
            if raw == MANIFEST_PATH {
                let mut body = Vec::new();
                entry.read_to_end(&mut body)?;
                manifest = Some(Manifest::from_json(&body)?);
                continue;
            }
            let kind = entry.header().entry_type();
            let plain = raw.trim_end_matches('/');
            let clean = paths::normalise(plain).is_ok_and(|p| p.relative() == plain && !p.is_root());
            match kind {
                tar::EntryType::Directory if clean => entries.push((plain.to_string(), None)),
                tar::EntryType::Regular if clean => {
                    let f = ManifestFile::read(plain, &mut entry)?;
                    entries.push((plain.to_string(), Some(f.size)));
                    seen.push(f);
                }
                _ => odd.push(raw),
            }
        }
        let verdict = match manifest {
            None => Verdict::Unchecked,
            Some(m) => match (m.compare(&seen), odd.is_empty()) {
                (v, true) => v,
                (Verdict::Differs(mut paths), false) => {
                    paths.extend(odd);
                    Verdict::Differs(paths)
                }
                (_, false) => Verdict::Differs(odd),
            },
        };
        Ok(Checked { verdict, entries })
    })
    .await
    .map_err(std::io::Error::other)?
}

/// What of an entry is restored: its path (normalised, confined) unless it is left out (the
/// manifest, a path out of the workspace, a link, a special file, a file over the read limit).
fn kept<R: Read>(raw: &str, entry: &tar::Entry<'_, R>) -> Option<(WorkspacePath, bool)> {
    let raw = raw.trim_end_matches('/');
    let p = paths::normalise(raw).ok()?;
    if p.is_root() || p.relative() == MANIFEST_PATH || p.relative() == ".agenticos" {
        return None;
    }
    match entry.header().entry_type() {
        tar::EntryType::Directory => Some((p, true)),
        tar::EntryType::Regular if entry.size() <= READ_MAX as u64 => Some((p, false)),
        _ => None,
    }
}

/// The archive's entries, one at a time, from a blocking reader, each with its share of `budget`:
/// paths normalised and confined (an entry that would leave the workspace, a link or a special
/// file is left out, and so is the manifest).
pub fn entries(file: TempFile, budget: Budget) -> mpsc::Receiver<std::io::Result<Budgeted>> {
    let (tx, rx) = mpsc::channel(QUEUED);
    tokio::task::spawn_blocking(move || {
        if let Err(e) = read_archive(&file.0, &tx, &budget) {
            let _ = tx.blocking_send(Err(e));
        }
        drop(file);
    });
    rx
}

/// As [`entries`], from an archive that stays where it is (its owner removes it).
pub fn entries_at(path: PathBuf, budget: Budget) -> mpsc::Receiver<std::io::Result<Budgeted>> {
    let (tx, rx) = mpsc::channel(QUEUED);
    tokio::task::spawn_blocking(move || {
        if let Err(e) = read_archive(&path, &tx, &budget) {
            let _ = tx.blocking_send(Err(e));
        }
    });
    rx
}

fn read_archive(path: &Path, tx: &mpsc::Sender<std::io::Result<Budgeted>>, budget: &Budget) -> std::io::Result<()> {
    let reader = std::io::BufReader::with_capacity(256 * 1024, std::fs::File::open(path)?);
    let mut archive = tar::Archive::new(GzDecoder::new(reader));
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path()?.to_string_lossy().to_string();
        let Some((p, is_dir)) = kept(&raw, &entry) else { continue };
        let item = if is_dir {
            Budgeted(Item::Dir(p), None)
        } else {
            let permit = budget.take_blocking(entry.size());
            let mut bytes = Vec::with_capacity(entry.size() as usize);
            entry.read_to_end(&mut bytes)?;
            Budgeted(Item::File(p, bytes), Some(permit))
        };
        if tx.blocking_send(Ok(item)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

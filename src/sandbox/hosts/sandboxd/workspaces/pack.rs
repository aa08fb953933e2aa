//! A live sandboxd session's workspace packed by the sandbox itself for a snapshot (issue 50: the
//! host's other sessions keep their latency). One command, the sandbox's own GNU `tar -c`, writes
//! the workspace (what Documents leaves out left out) into a stage in our `.agenticos/` folder,
//! cut into parts of [`PART`] bytes; the parts come out in native reads, one request each, instead
//! of a request per file: sandboxd is one Python process, and a small read of another session
//! queues behind the requests in flight, not behind a `tar` running in a sandbox. The stage is
//! removed whatever happens: once the snapshot is read, or in the background when it is dropped
//! midway. A session that is not live
//! (closed, hibernated: packing would wake it), a sandbox without `sh`, GNU `tar` or `split`, a
//! packing that fails, or a host that hands native reads back is [`None`]: the snapshot reads the
//! stored workspace file by file instead.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::documents::exclusions::{TOOLCHAIN, TOP_LEVEL};
use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::sandbox::hosts::sandboxd::client::{RunRequest, SandboxdClient, SessionState};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths::WORK_DIR;

/// Bytes of one part: under the host's native read limit (8 MiB unless set lower; a lower one
/// hands the read back, and the snapshot goes file by file), and small enough that another
/// session's read waits little behind one. On a quiet machine (docs/benchmarks.md, Snapshots) a
/// 1 KiB read of another session took 2.1–2.9× its p95 alone during a snapshot or a restore with
/// parts of 2 MiB, 1.4–1.7× during a snapshot with 256 KiB (the restore's stage writes are as
/// large), at about 0.3 s more for 2,000 files: the time goal has room, the latency goal had none.
pub const PART: usize = 256 * 1024;

/// How long packing may take (the host's own command deadline is 300 s by default).
const PACK_TIMEOUT: Duration = Duration::from_secs(300);

/// Run in the workspace (a command's working folder): `$1` the stage's name, `$2` the bytes of a
/// part, then `tar`'s exclusions. Stages older than an hour (a console that stopped midway) are
/// removed first. `tar` and `split` run at the lowest priority (`nice`, where there is one): the
/// host's service and its other sessions come first. Prints the parts' names; exit 127 when a tool
/// is missing. `tar`'s status 1 (a file changed while it was read) keeps what was read, as a
/// file-by-file read would.
const PACK: &str = r#"d=".agenticos/snapshot-$1"
n="$2"
shift 2
tar --version 2>/dev/null | grep -q 'GNU tar' || exit 127
command -v split >/dev/null 2>&1 || exit 127
find .agenticos -maxdepth 1 -name 'snapshot-*' -mmin +60 -exec rm -rf {} + 2>/dev/null
mkdir -p "$d" || exit 1
low=""
command -v nice >/dev/null 2>&1 && low="nice -n 19"
{ $low tar -cf - --hard-dereference "$@" . ; echo $? >"$d/status"; } | $low split -b "$n" -a 4 - "$d/part-"
s=$?
t=$(cat "$d/status" 2>/dev/null || echo 2)
rm -f "$d/status"
[ "$s" = 0 ] || exit 2
[ "$t" -le 1 ] || exit "$t"
ls "$d""#;

/// Removes the stage (and our folder when it is left empty).
const UNSTAGE: &str = r#"rm -rf ".agenticos/snapshot-$1"
rmdir .agenticos 2>/dev/null
exit 0"#;

/// `tar`'s exclusions, from Documents' own lists: our top-level folders anchored, the toolchain
/// folders at any depth.
fn exclusions() -> Vec<String> {
    let top = TOP_LEVEL.iter().map(|f| format!("--exclude=./{f}"));
    let toolchain = TOOLCHAIN.iter().map(|f| format!("--exclude={f}"));
    std::iter::once("--anchored".to_string())
        .chain(top)
        .chain(std::iter::once("--no-anchored".to_string()))
        .chain(toolchain)
        .collect()
}

/// A workspace packed in its sandbox: the parts, in order, each read once; dropping it removes the
/// stage.
#[derive(Clone)]
pub struct Packed {
    client: SandboxdClient,
    session_id: Arc<str>,
    tag: Arc<str>,
    parts: Arc<Vec<String>>,
    _stage: Arc<Stage>,
}

impl Packed {
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// Removes the stage now (a snapshot that ended, in success or failure, waits for it).
    pub async fn remove_stage(&self) {
        if !self._stage.removed.swap(true, Ordering::AcqRel) {
            unstage(&self.client, &self.session_id, &self.tag).await;
        }
    }

    /// Part `i`'s bytes.
    pub async fn part(&self, i: usize) -> Result<Vec<u8>> {
        let path = format!("{WORK_DIR}/.agenticos/snapshot-{}/{}", self.tag, self.parts[i]);
        Ok(self.client.read_file(&self.session_id, &path).await?)
    }
}

/// Removes the stage when the last [`Packed`] goes, in the background, unless it was removed
/// already (a snapshot dropped at its deadline, or a packing given up, removes it too).
struct Stage {
    client: SandboxdClient,
    session_id: String,
    tag: String,
    removed: AtomicBool,
}

impl Drop for Stage {
    fn drop(&mut self) {
        if *self.removed.get_mut() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let (client, session_id, tag) = (self.client.clone(), self.session_id.clone(), self.tag.clone());
        rt.spawn(async move { unstage(&client, &session_id, &tag).await });
    }
}

async fn unstage(client: &SandboxdClient, session_id: &str, tag: &str) {
    let request = RunRequest::new(["/bin/sh", "-c", UNSTAGE, "sh", tag]).timeout(PACK_TIMEOUT);
    match client.run(session_id, &request).await {
        Ok(ran) if ran.exit_code == Some(0) => {}
        Ok(ran) => tracing::warn!(exit = ?ran.exit_code, "a snapshot's stage could not be removed"),
        Err(e) => tracing::warn!(error = %e, "a snapshot's stage could not be removed"),
    }
}

/// Packs session `session_id`'s workspace in its sandbox, and reads the first part (a host that
/// hands it back is [`None`] before anything is archived): the parts, the first one's bytes.
pub async fn pack(client: &SandboxdClient, session_id: &str) -> Result<Option<(Packed, Vec<u8>)>> {
    match client.session(session_id, false).await {
        Ok(s) if s.alive && s.state == SessionState::Running => {}
        _ => return Ok(None),
    }
    let tag = crate::db::new_id();
    let part = PART.to_string();
    let argv = ["/bin/sh", "-c", PACK, "sh", tag.as_str(), part.as_str()].map(String::from).into_iter();
    let request = RunRequest::new(argv.chain(exclusions())).timeout(PACK_TIMEOUT);
    let stage = Arc::new(Stage {
        client: client.clone(),
        session_id: session_id.to_string(),
        tag: tag.clone(),
        removed: AtomicBool::new(false),
    });
    let ran = match client.run(session_id, &request).await {
        Ok(ran) => ran,
        Err(e) => {
            tracing::warn!(error = %e, "the sandbox could not pack its workspace; it is read file by file");
            return Ok(None);
        }
    };
    if ran.exit_code != Some(0) {
        let line = ran.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        tracing::warn!(exit = ?ran.exit_code, timed_out = ran.timed_out, stderr = %line.chars().take(200).collect::<String>(),
            "the sandbox could not pack its workspace; it is read file by file");
        return Ok(None);
    }
    let mut parts: Vec<String> = ran.stdout.lines().filter(|l| l.starts_with("part-")).map(String::from).collect();
    parts.sort();
    if parts.is_empty() {
        return Ok(None);
    }
    let packed = Packed {
        client: client.clone(),
        session_id: session_id.into(),
        tag: tag.as_str().into(),
        parts: Arc::new(parts),
        _stage: stage,
    };
    match packed.part(0).await {
        Ok(first) => Ok(Some((packed, first))),
        Err(WorkspaceError::Host(HostError::Refused { why: Refusal::HandedBack, .. })) => Ok(None),
        Err(e) => Err(e),
    }
}

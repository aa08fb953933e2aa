//! A sandboxd session being opened from a snapshot ([`crate::sandbox::workspaces::restoring`]
//! writes and records it). A checked archive (it matches its manifest: plain folders and files
//! only) is unpacked by the sandbox itself (issue 50): staged in our own `.agenticos/` folder in a
//! few native writes of [`PART`] bytes, then one command, `tar -xzo`, in the workspace; the stage
//! is removed whatever happens. A sandbox without `sh` or `tar` (exit 127), or a host that hands
//! native writes back, is [`Unpacked::NoShell`]: the restore writes the files one by one instead.

use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::sandbox::hosts::sandboxd::client::{RunRequest, SandboxdClient};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::Unpacked;
use crate::vocabulary::paths::WORK_DIR;

/// Bytes of one staged part, one write in flight at a time: under the host's native write limit
/// (8 MiB unless set lower; a lower one hands the write back, and the restore goes file by file),
/// and small enough that another session's request waits little behind one (the snapshot's
/// parts are as large: [`pack::PART`](super::pack::PART)).
const PART: usize = super::pack::PART;

/// How long unpacking may take (the host's own command deadline is 300 s by default).
const UNPACK_TIMEOUT: Duration = Duration::from_secs(300);

/// Run in the workspace (a command's working folder), the stage's name as `$1`: unpacks, then
/// removes the stage and the manifest (our own folder is removed when it is left empty). `tar`
/// (and the `gzip` it starts) runs at the lowest priority (`nice`, where there is one), as the
/// snapshot's packing does: the host's service and its other sessions come first. Its status is
/// `tar`'s (127 when there is no `tar`, with or without `nice` in front). Public for the test that
/// runs it without `nice` and without `tar` (tests/api/snapshots_fallbacks.rs).
pub const UNPACK: &str = r#"d=".agenticos/restore-$1"
low=""
command -v nice >/dev/null 2>&1 && low="nice -n 19"
cat "$d"/part-* | $low tar -xzof -
s=$?
rm -rf "$d"
rm -f .agenticos/snapshot-manifest.json
rmdir .agenticos 2>/dev/null
exit $s"#;

/// Unpacks the archive at `archive` into session `session_id`'s workspace through its shell once
/// `checked` says it matches its manifest. It is staged meanwhile (the check and the upload
/// overlap: issue 50's restore time); a no removes the stage before anything is unpacked
/// ([`Unpacked::NoShell`]: the caller refuses, or writes an archive taken before manifests file by
/// file).
pub async fn unpack(
    client: &SandboxdClient,
    session_id: &str,
    archive: &std::path::Path,
    checked: impl std::future::Future<Output = bool>,
) -> Result<Unpacked> {
    let tag = crate::db::new_id();
    let stage = format!("{WORK_DIR}/.agenticos/restore-{tag}");
    let (staged, checked) = tokio::join!(stage_parts(client, session_id, archive, &stage), checked);
    let remove_stage = || async {
        if let Err(e) = client.remove(session_id, &stage).await {
            tracing::warn!(error = %e, "a restore's stage could not be removed");
        }
    };
    match staged {
        Ok(()) => {}
        Err(WorkspaceError::Host(HostError::Refused { why: Refusal::HandedBack, .. })) => {
            remove_stage().await;
            return Ok(Unpacked::NoShell);
        }
        Err(e) => {
            remove_stage().await;
            return Err(e);
        }
    }
    if !checked {
        remove_stage().await;
        return Ok(Unpacked::NoShell);
    }
    let argv = ["/bin/sh", "-c", UNPACK, "sh", tag.as_str()];
    let request = RunRequest::new(argv).timeout(UNPACK_TIMEOUT);
    let ran = match client.run(session_id, &request).await {
        Ok(ran) => ran,
        Err(e) => {
            remove_stage().await;
            return Err(e.into());
        }
    };
    match ran.exit_code {
        Some(0) => Ok(Unpacked::Done),
        Some(127) => {
            remove_stage().await;
            Ok(Unpacked::NoShell)
        }
        _ => {
            let why = if ran.timed_out {
                "it timed out".to_string()
            } else {
                let line = ran.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no reason given").trim();
                format!("exit {}: {}", ran.exit_code.unwrap_or(-1), line.chars().take(200).collect::<String>())
            };
            Err(WorkspaceError::Shell(format!("The sandbox could not unpack the snapshot ({why}).")))
        }
    }
}

/// The archive in parts under `stage`, one native write each.
async fn stage_parts(client: &SandboxdClient, session_id: &str, archive: &std::path::Path, stage: &str) -> Result<()> {
    let local = |e: std::io::Error| WorkspaceError::Internal(anyhow::Error::from(e).context("reading a snapshot"));
    let mut f = tokio::fs::File::open(archive).await.map_err(local)?;
    let mut buf = vec![0u8; PART];
    for part in 0.. {
        let mut filled = 0;
        while filled < PART {
            let n = f.read(&mut buf[filled..]).await.map_err(local)?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 && part > 0 {
            break;
        }
        client.write_file(session_id, &format!("{stage}/part-{part:05}"), &buf[..filled]).await?;
        if filled < PART {
            break;
        }
    }
    Ok(())
}

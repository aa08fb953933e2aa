//! Materialising a manifest (issue 14) at a run's first workspace operation: the agent's skills
//! (every run) and, for a new workspace, the run's manifest (its own, else its agent's) — folders
//! first, then repositories, then files, [`WRITE_CONCURRENCY`] writes at a time, each recorded
//! like any other operation. A `git_repo` is cloned in the sandbox when its runtime has network,
//! else fetched by the console ([`git`]) and written in. `env` entries are no files: [`env`] gives
//! them to every command. A backend calls this before it marks the workspace opened, under its
//! one-opener lock, so a workspace's manifest lands exactly once.

pub mod env;
pub mod git;

use futures_util::future::BoxFuture;
use futures_util::{StreamExt as _, TryStreamExt as _};

use super::backend::Result;
use super::error::WorkspaceError;
use super::model::Resolved;
use super::recorded::{bytes_detail, record, RowKeys};
use crate::agents::manifest::{Manifest, ManifestEntry};
use crate::sandbox::recording::{Operation, Recorder};
use crate::state::AppState;
use crate::vocabulary::paths::{self, WorkspacePath};

pub use crate::agents::manifest::WRITE_CONCURRENCY;

/// The manifest a run's new workspace starts with: the run's own, else its agent's.
pub fn effective(r: &Resolved) -> &Manifest {
    r.run.manifest.as_ref().unwrap_or(&r.agent.manifest)
}

/// Where the files go: a backend's own writes, below the recording.
pub trait Target: Sync {
    fn mkdir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    fn write<'a>(&'a self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>>;
    /// Clones a repository in the sandbox (a runtime with network): `Err` with git's words.
    fn clone_repo<'a>(&'a self, script: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>>;
    /// How a command in the sandbox names `path`: `/workspace/…` where the workspace is mounted
    /// there (sandboxd); a backend whose commands start in the workspace's own folder (Daytona's
    /// work dir) says `./…`.
    fn command_path(&self, path: &WorkspacePath) -> String {
        path.absolute()
    }
}

/// One step of materialising.
enum Step {
    Mkdir(WorkspacePath),
    Write(WorkspacePath, Vec<u8>),
    /// Entry label, the sandbox command, its target shown in the operation log.
    Clone(String, Vec<String>, String),
}

/// How an entry is named in an error: `manifest.entries[2] (git_repo https://…)`.
fn label(i: usize, e: &ManifestEntry) -> String {
    let what = match e {
        ManifestEntry::File { path, .. } | ManifestEntry::Dir { path } => path.clone(),
        ManifestEntry::GitRepo { url, .. } => url.clone(),
        ManifestEntry::Env { name, .. } => name.clone(),
        ManifestEntry::Unknown => String::new(),
    };
    format!("manifest.entries[{i}] ({} {what})", e.kind())
}

fn under(base: &str, rel: &str) -> Result<WorkspacePath> {
    let joined = if base.is_empty() { rel.to_string() } else { format!("{base}/{rel}") };
    paths::normalise(&joined).map_err(WorkspaceError::BadPath)
}

/// Clones `url` at `git_ref` into the workspace folder `path`, history left out (as a fetch by
/// the console): into a temporary folder, then copied over. Not shallow: git's dumb HTTP
/// transport cannot clone shallow.
const CLONE_SCRIPT: &str = "set -e; t=$(mktemp -d); trap 'rm -rf \"$t\"' EXIT; \
if [ -n \"$3\" ]; then git clone --quiet --single-branch --no-tags --branch \"$3\" -- \"$1\" \"$t/c\"; \
else git clone --quiet --single-branch --no-tags -- \"$1\" \"$t/c\"; fi; \
rm -rf \"$t/c/.git\"; mkdir -p \"$2\"; cp -a \"$t/c/.\" \"$2/\"";

/// The steps for `r`: skills, and the manifest when the workspace is new. `sandbox_network`:
/// repositories are cloned in the sandbox; otherwise the console fetches them now (before
/// anything is written, so a failed fetch leaves the workspace untouched).
async fn plan<T: Target>(
    st: &AppState,
    r: &Resolved,
    target: &T,
    is_new_workspace: bool,
    sandbox_network: bool,
) -> Result<Vec<Step>> {
    let mut dirs = Vec::new();
    let mut clones = Vec::new();
    let mut writes = Vec::new();
    for f in &r.agent.skills {
        let p = under("skills", &f.path)?;
        if f.is_dir {
            dirs.push(Step::Mkdir(p));
        } else {
            writes.push(Step::Write(p, f.content.as_bytes().to_vec()));
        }
    }
    let entries = if is_new_workspace { effective(r).entries.as_slice() } else { &[] };
    for (i, e) in entries.iter().enumerate() {
        match e {
            ManifestEntry::Dir { path } => dirs.push(Step::Mkdir(under("", path)?)),
            ManifestEntry::File { path, content, content_base64 } => {
                let bytes = match content_base64 {
                    Some(b) => base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b).map_err(|_| {
                        WorkspaceError::Manifest(format!("{}: its content_base64 is not base64.", label(i, e)))
                    })?,
                    None => content.as_bytes().to_vec(),
                };
                writes.push(Step::Write(under("", path)?, bytes));
            }
            ManifestEntry::GitRepo { url, git_ref, path } => {
                let dest = under("", path)?;
                if sandbox_network {
                    let argv = [
                        "/bin/sh",
                        "-c",
                        CLONE_SCRIPT,
                        "sh",
                        url,
                        &target.command_path(&dest),
                        git_ref.as_deref().unwrap_or(""),
                    ]
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                    clones.push(Step::Clone(label(i, e), argv, format!("git clone {url} {}", dest.display())));
                    continue;
                }
                let allow_private = st.config.sandboxd.git_allow_private;
                let files = git::fetch(url, git_ref.as_deref(), allow_private).await.map_err(|why| {
                    WorkspaceError::Manifest(format!(
                        "{}: the console could not fetch this repository: {why}.",
                        label(i, e)
                    ))
                })?;
                if files.is_empty() {
                    dirs.push(Step::Mkdir(dest.clone()));
                }
                for (rel, bytes) in files {
                    writes.push(Step::Write(under(dest.relative(), &rel)?, bytes));
                }
            }
            // A saved manifest holds no unknown kind (the check refuses it).
            ManifestEntry::Env { .. } | ManifestEntry::Unknown => {}
        }
    }
    Ok(dirs.into_iter().chain(clones).chain(writes).collect())
}

/// Writes the agent's skills and (a new workspace) the manifest into `target`, each recorded.
/// `concurrency`: how many writes at once (1 for a `state` document, whose writes serialise).
pub async fn materialise<T: Target>(
    st: &AppState,
    r: &Resolved,
    target: &T,
    is_new_workspace: bool,
    sandbox_network: bool,
    concurrency: usize,
) -> Result<()> {
    let steps = plan(st, r, target, is_new_workspace, sandbox_network).await?;
    let (keys, recorder) = (RowKeys::of(r), &st.recorder);
    let mut writes = Vec::new();
    for step in &steps {
        match step {
            Step::Mkdir(p) => {
                // A folder a failed earlier attempt made already is fine.
                let work = Box::pin(async move {
                    match target.mkdir(p).await {
                        Err(WorkspaceError::AlreadyExists(_)) => Ok(()),
                        other => other,
                    }
                });
                record(recorder, &keys, Operation::Mkdir, p.display(), work, |_| (true, String::new())).await?;
            }
            Step::Clone(label, argv, shown) => {
                let work = Box::pin(target.clone_repo(argv));
                let outcome = |o: &std::result::Result<(), String>| match o {
                    Ok(()) => (true, "cloned".to_string()),
                    Err(_) => (false, "clone failed".to_string()),
                };
                if let Err(why) = record(recorder, &keys, Operation::Execute, shown.clone(), work, outcome).await? {
                    return Err(WorkspaceError::Manifest(format!(
                        "{label}: the sandbox could not clone this repository ({why}). Cloning in the sandbox needs git in its runtime."
                    )));
                }
            }
            Step::Write(p, bytes) => writes.push((p, bytes)),
        }
    }
    let keys = &keys;
    let work: Vec<BoxFuture<'_, Result<()>>> =
        writes.into_iter().map(|(p, bytes)| Box::pin(write_one(recorder, keys, target, p, bytes)) as _).collect();
    futures_util::stream::iter(work).buffer_unordered(concurrency.max(1)).try_collect::<Vec<()>>().await?;
    Ok(())
}

async fn write_one<T: Target>(
    recorder: &Recorder,
    keys: &RowKeys,
    target: &T,
    p: &WorkspacePath,
    bytes: &[u8],
) -> Result<()> {
    let n = bytes.len();
    record(recorder, keys, Operation::Write, p.display(), target.write(p, bytes), move |_| bytes_detail(n)).await
}

//! One file operation on an open session: the host's native route first, and the sandbox's shell
//! ([`super::shell`]) for an operation the host hands back (409: a symbolic link on the path or
//! in the listed folder, native files off, a file over its native limit), as the client library
//! does. Either way it is one operation, with the same answers and the same errors.

use super::{shell, Session};
use crate::sandbox::hosts::sandboxd::client::{FileEntry, SandboxdError};
use crate::sandbox::workspaces::backend::{within_read_max, Result};
use crate::sandbox::workspaces::model::Entry;
use crate::vocabulary::paths::{self, WorkspacePath};

/// The host handed `op` back: it goes through the shell.
fn handed_back(op: &str, path: &WorkspacePath, detail: &str) {
    tracing::debug!(op, path = %path.display(), reason = detail, "the host handed a file operation back to the shell");
}

pub(super) async fn read(s: Session, path: &WorkspacePath) -> Result<Vec<u8>> {
    match s.client.read_file(&s.id, &path.absolute()).await {
        Err(SandboxdError::NotNative { detail }) => {
            handed_back("read", path, &detail);
            shell::read(&s, path).await
        }
        other => within_read_max(other?),
    }
}

pub(super) async fn write(s: Session, path: &WorkspacePath, bytes: &[u8]) -> Result<()> {
    match s.client.write_file(&s.id, &path.absolute(), bytes).await {
        Err(SandboxdError::NotNative { detail }) => {
            handed_back("write", path, &detail);
            shell::write(&s, path, bytes).await
        }
        other => Ok(other?),
    }
}

pub(super) async fn stat(s: Session, path: &WorkspacePath) -> Result<Entry> {
    match s.client.stat(&s.id, &path.absolute()).await {
        Err(SandboxdError::NotNative { detail }) => {
            handed_back("stat", path, &detail);
            shell::stat(&s, path).await
        }
        other => {
            let e = other?;
            Ok(Entry {
                name: e.name,
                path: path.relative().to_string(),
                is_dir: e.is_dir,
                size: e.size,
                is_link: false,
            })
        }
    }
}

/// A folder holding a symbolic link (every `.venv/bin`) is listed through the shell, the link
/// marked, not followed.
pub(super) async fn ls(s: Session, path: &WorkspacePath) -> Result<Vec<Entry>> {
    match s.client.list(&s.id, &path.absolute()).await {
        Err(SandboxdError::NotNative { detail }) => {
            handed_back("ls", path, &detail);
            shell::ls(&s, path).await
        }
        other => Ok(entries(other?)),
    }
}

pub(super) async fn mkdir(s: Session, path: &WorkspacePath) -> Result<()> {
    match s.client.mkdir(&s.id, &path.absolute()).await {
        Err(SandboxdError::NotNative { detail }) => {
            handed_back("mkdir", path, &detail);
            shell::mkdir(&s, path).await
        }
        other => Ok(other?),
    }
}

pub(super) async fn remove(s: Session, path: &WorkspacePath) -> Result<()> {
    match s.client.remove(&s.id, &path.absolute()).await {
        Err(SandboxdError::NotNative { detail }) => {
            handed_back("remove", path, &detail);
            shell::remove(&s, path).await
        }
        other => Ok(other?),
    }
}

/// The host's entries, with paths relative to the workspace root.
fn entries(list: Vec<FileEntry>) -> Vec<Entry> {
    list.into_iter()
        .map(|e| {
            let rel = paths::normalise(&e.path).map(|p| p.relative().to_string()).unwrap_or(e.path);
            Entry { name: e.name, path: rel, is_dir: e.is_dir, size: e.size, is_link: false }
        })
        .collect()
}

//! A Daytona workspace's files for Documents, through the Daytona backend's stored files (no
//! HTTP here): a bounded tree (breadth-first over the toolbox's `GET /files`: 6 levels, 2,000
//! entries, excluded folders never opened), and reads through the toolbox's download. A sandbox
//! is never started for Documents: one Daytona stopped reads as unreadable, saying why.

use futures_util::stream::{self, StreamExt};

use crate::documents::error::DocumentError;
use crate::documents::exclusions::is_excluded;
use crate::documents::listing::{Entry, HostCounter, Listing};
use crate::documents::paging::TextPage;
use crate::documents::stamp::Stamp;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::daytona::workspaces::stored::{self, Start, Stored};
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

type Result<T> = std::result::Result<T, DocumentError>;

/// Workspaces of one connection listed at once.
const CONCURRENCY: usize = 4;
/// The most a text preview's first page reads of a file.
const PREVIEW_BYTES: usize = 64 * 1024;

async fn open(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    sandbox: &str,
    start: Start,
    counter: &HostCounter,
) -> Result<Stored> {
    counter.add(1);
    counter.timed(stored::open(st, org_id, conn, sandbox, start)).await.map_err(|e| match e {
        WorkspaceError::Lost => DocumentError::NotFound("Daytona no longer has this workspace's sandbox.".into()),
        other => other.into(),
    })
}

/// The listings of `sessions` (workspace id, sandbox id or name) on one Daytona connection.
pub async fn listings(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    sessions: Vec<(String, String)>,
    counter: &HostCounter,
) -> Vec<(String, Listing)> {
    stream::iter(sessions)
        .map(|(ws, sandbox)| async move { (ws, listing(st, org_id, conn, &sandbox, counter).await) })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
}

async fn listing(st: &AppState, org_id: &str, conn: &Connection, sandbox: &str, counter: &HostCounter) -> Listing {
    let files = match open(st, org_id, conn, sandbox, Start::Never, counter).await {
        Ok(files) => files,
        Err(e) => return Listing::unreadable(e.to_string()),
    };
    match counter.timed(files.tree(is_excluded)).await {
        Ok(tree) => {
            counter.add(tree.listed);
            let entries = tree
                .entries
                .into_iter()
                .map(|e| Entry {
                    path: e.path,
                    is_dir: e.is_dir,
                    size: e.size,
                    modified_at: e.modified_at.as_deref().and_then(Stamp::new),
                })
                .collect();
            Listing::from_walk(entries, tree.cut, tree.failed)
        }
        Err(e) => Listing::unreadable(DocumentError::from(e).to_string()),
    }
}

/// A file's bytes (at most the read limit).
pub async fn read_bytes(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    sandbox: &str,
    path: &WorkspacePath,
    counter: &HostCounter,
) -> Result<Vec<u8>> {
    let files = open(st, org_id, conn, sandbox, Start::NeverSeenRunning, counter).await?;
    counter.add(1);
    Ok(files.read(path.relative(), READ_MAX).await?)
}

/// Lines `offset..offset+limit` of a text file: the first page from the file's first 64 KiB
/// (its total then unknown unless the file ended there), a later one from the whole file (at
/// most the read limit), as sandboxd's pages are.
#[allow(clippy::too_many_arguments)]
pub async fn read_text(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    sandbox: &str,
    path: &WorkspacePath,
    offset: u64,
    limit: u64,
    counter: &HostCounter,
) -> Result<TextPage> {
    let files = open(st, org_id, conn, sandbox, Start::NeverSeenRunning, counter).await?;
    counter.add(1);
    if offset == 0 {
        let head = files.read_head(path.relative(), PREVIEW_BYTES).await?;
        if head.len() >= PREVIEW_BYTES {
            let page = TextPage::of_head(&head, limit);
            if page.lines > 0 {
                return Ok(page);
            }
        } else {
            return Ok(TextPage::of_whole(&String::from_utf8_lossy(&head), 0, limit));
        }
    }
    let bytes = files.read(path.relative(), READ_MAX).await?;
    Ok(TextPage::of_whole(&String::from_utf8_lossy(&bytes), offset, limit))
}

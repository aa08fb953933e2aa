//! A sandboxd workspace's files for Documents: its stored files on the host, read through the
//! archive routes (no sandbox is started): the trees of many sessions at once
//! ([`listing::on_host`]) and a file's bytes or a page of its lines.

pub mod listing;

use crate::documents::error::DocumentError;
use crate::documents::listing::{HostCounter, Listing};
use crate::documents::paging::TextPage;
use crate::sandbox::hosts::sandboxd::client::SandboxdClient;
use crate::vocabulary::paths::WorkspacePath;

type Result<T> = std::result::Result<T, DocumentError>;

/// The listings of `sessions` (workspace id, session id) on one host.
pub async fn listings(
    client: &SandboxdClient,
    sessions: &[(String, String)],
    counter: &HostCounter,
) -> Vec<(String, Listing)> {
    listing::on_host(client, sessions, counter).await.into_iter().collect()
}

/// A file's bytes.
pub async fn read_bytes(
    client: &SandboxdClient,
    session: &str,
    path: &WorkspacePath,
    counter: &HostCounter,
) -> Result<Vec<u8>> {
    counter.add(1);
    Ok(client.workspace_read_bytes(session, path.relative()).await?)
}

/// Lines `offset..offset+limit` of a text file, from the host's pages of lines.
pub async fn read_text(
    client: &SandboxdClient,
    session: &str,
    path: &WorkspacePath,
    offset: u64,
    limit: u64,
    counter: &HostCounter,
) -> Result<TextPage> {
    counter.add(1);
    let answer = client.workspace_read(session, path.relative(), offset, limit).await?;
    if let Some(page) = TextPage::of_sandboxd(answer, offset, limit) {
        return Ok(page);
    }
    // `[End of file]`: past the end, or the file's only line left says just that.
    counter.add(1);
    if offset == 0 {
        // No lines, or one: the file is that small.
        let bytes = client.workspace_read_bytes(session, path.relative()).await?;
        return Ok(TextPage::of_whole(&String::from_utf8_lossy(&bytes), 0, limit));
    }
    // One line earlier, one more: past the end still answers `[End of file]`.
    let answer = client.workspace_read(session, path.relative(), offset - 1, limit + 1).await?;
    Ok(match TextPage::of_sandboxd(answer, offset - 1, limit + 1) {
        Some(page) if page.lines > 1 => {
            let text = page.text.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string());
            TextPage { text, offset, lines: page.lines - 1, ..page }
        }
        _ => TextPage::past_end(offset),
    })
}

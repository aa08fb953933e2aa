//! A sandboxd host's listings of its stored workspaces, through its archive routes, which never
//! start a container. One `trees` request per host for up to 100 workspaces (one `tree` each on
//! a host older than 0.2.37), at most 6 levels and 2,000 entries each. The host has no exclude
//! parameter, so when excluded folders used up a cut listing, the top-level folders that are not
//! excluded are asked again.

use std::collections::HashMap;

use futures_util::stream::{self, StreamExt};

use crate::documents::exclusions::is_excluded;
use crate::documents::listing::{status, Entry, HostCounter, Listing, MAX_DEPTH, MAX_ENTRIES};
use crate::sandbox::hosts::sandboxd::client::{SandboxdClient, SandboxdError, Tree, TreeOptions, MAX_TREES};

/// Requests to one host at once when a listing falls back to one request per workspace or folder.
const CONCURRENCY: usize = 6;

fn options(path: &str, max_depth: u32) -> TreeOptions {
    TreeOptions { path: path.to_string(), max_depth, max_entries: MAX_ENTRIES as u32 }
}

/// The listings of `sessions` (workspace id, session id) on one host, by workspace id.
pub async fn on_host(
    client: &SandboxdClient,
    sessions: &[(String, String)],
    counter: &HostCounter,
) -> HashMap<String, Listing> {
    let mut out = HashMap::new();
    for chunk in sessions.chunks(MAX_TREES) {
        let ids: Vec<&str> = chunk.iter().map(|(_, s)| s.as_str()).collect();
        counter.add(1);
        let answers: Vec<(String, Result<Tree<Entry>, Listing>)> = match client
            .workspace_trees_timed::<Entry, _>(&ids, &options(".", MAX_DEPTH))
            .await
        {
            Ok((results, waited)) => {
                counter.waited(waited);
                chunk
                    .iter()
                    .zip(results)
                    .map(|((ws, _), r)| (ws.clone(), r.into_result().map_err(|e| failed(&e))))
                    .collect()
            }
            Err(SandboxdError::VersionMismatch { missing, .. }) if missing.iter().any(|m| m == "/workspaces/trees") => {
                one_by_one(client, chunk, counter).await
            }
            Err(e) => chunk.iter().map(|(ws, _)| (ws.clone(), Err(failed(&e)))).collect(),
        };
        let finished = stream::iter(answers.into_iter().zip(chunk))
            .map(|((ws, answer), (_, session))| async move { (ws, complete(client, session, answer, counter).await) })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        out.extend(finished);
    }
    out
}

/// A host older than 0.2.37: one `tree` per workspace.
async fn one_by_one(
    client: &SandboxdClient,
    chunk: &[(String, String)],
    counter: &HostCounter,
) -> Vec<(String, Result<Tree<Entry>, Listing>)> {
    stream::iter(chunk)
        .map(|(ws, session)| async move {
            counter.add(1);
            let tree = counter.timed(client.workspace_tree_of(session, &options(".", MAX_DEPTH))).await;
            (ws.clone(), tree.map_err(|e| failed(&e)))
        })
        .buffered(CONCURRENCY)
        .collect()
        .await
}

/// One workspace's answer as a listing; a cut listing whose budget excluded folders used up is
/// completed by asking again for each top-level folder that is not excluded.
async fn complete(
    client: &SandboxdClient,
    session: &str,
    answer: Result<Tree<Entry>, Listing>,
    counter: &HostCounter,
) -> Listing {
    let tree = match answer {
        Ok(tree) => tree,
        Err(listing) => return listing,
    };
    let wasted =
        tree.truncated && tree.entries.len() >= MAX_ENTRIES && tree.entries.iter().any(|e| is_excluded(&e.path));
    if !wasted {
        return Listing::from_entries(tree.entries, tree.truncated);
    }
    let top: Vec<Entry> = tree.entries.into_iter().filter(|e| !e.path.contains('/')).collect();
    let folders: Vec<String> =
        top.iter().filter(|e| e.is_dir && !is_excluded(&e.path)).map(|e| e.path.clone()).collect();
    let parts = stream::iter(folders)
        .map(|folder| async move {
            counter.add(1);
            counter.timed(client.workspace_tree_of::<Entry>(session, &options(&folder, MAX_DEPTH - 1))).await
        })
        .buffered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let mut raw = top;
    let mut truncated = false;
    let mut deepest_cut = false;
    for part in parts {
        match part {
            Ok(t) => {
                truncated |= t.truncated;
                deepest_cut |= t.truncated && t.entries.len() >= MAX_ENTRIES;
                raw.extend(t.entries);
            }
            // A folder that does not answer is skipped; the listing is marked incomplete.
            Err(_) => truncated = true,
        }
    }
    let mut listing = Listing::from_entries(raw, truncated);
    if deepest_cut && !listing.status.limited {
        listing.status = status(true, false);
    }
    listing
}

/// A workspace whose listing failed: one the host never stored is simply empty; anything else is
/// unreadable, with the reason.
pub fn failed(e: &SandboxdError) -> Listing {
    match e {
        SandboxdError::NotFound { detail } if detail.starts_with("No workspace for session") => Listing::empty(),
        SandboxdError::VersionMismatch { missing, .. }
            if missing.iter().any(|m| m == "/workspaces/{session_id}/tree") =>
        {
            Listing::unreadable(
                "this host is older than sandboxd 0.2.35 and cannot list a workspace's stored files; upgrade it",
            )
        }
        other => Listing::unreadable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_never_stored_is_empty_and_a_refusing_one_unreadable() {
        let l = failed(&SandboxdError::NotFound { detail: "No workspace for session: x".into() });
        assert!(l.status.complete && l.entries.is_empty());
        let l = failed(&SandboxdError::Invalid { detail: "Path '.' is outside the workspace".into() });
        assert!(l.status.unreadable.is_some());
    }
}

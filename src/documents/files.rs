//! Where a workspace's files are: a `state` workspace's document in our database, or a workspace's
//! stored files at its host, read without running it ([`StoredFiles`]: a `sandboxd` workspace's
//! through the host's archive routes, a Daytona workspace's sandbox through its toolbox; each
//! kind's reads in its folder, `hosts/<kind>/documents.rs`).

use std::collections::HashMap;

use futures_util::future::join_all;

use super::error::DocumentError;
use super::grouping;
use super::listing::{HostCounter, Listing};
use super::paging::TextPage;
use super::store::{self, VisibleRow};
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::dispatch::stored_files::StoredFiles;
use crate::sandbox::workspaces::document::Document;
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

type Result<T> = std::result::Result<T, DocumentError>;

/// The host session of a `sandboxd` workspace, when it ever stored files there.
fn session_of(row: &VisibleRow) -> Option<&str> {
    match (row.state.as_str(), row.session_ref.as_deref()) {
        ("lost", _) => None,
        (_, Some(reference)) => Some(reference),
        ("open", None) => Some(row.session_key.as_str()),
        _ => None,
    }
}

/// Every row's listing: `state` from the database, `sandboxd` per host (hosts asked concurrently).
pub async fn list_rows(
    st: &AppState,
    org_id: &str,
    rows: &[VisibleRow],
    counter: &HostCounter,
) -> HashMap<String, Listing> {
    let mut out = HashMap::new();
    let mut by_host: HashMap<&str, Vec<(String, String)>> = HashMap::new();
    for row in rows {
        if row.backend == "state" {
            out.insert(row.id.clone(), state_listing(st, org_id, &row.id).await);
            continue;
        }
        match (row.connection_id.as_deref(), session_of(row)) {
            (Some(connection), Some(session)) => {
                by_host.entry(connection).or_default().push((row.id.clone(), session.to_string()))
            }
            (None, Some(_)) => {
                out.insert(row.id.clone(), Listing::unreadable("its connection was deleted"));
            }
            _ => {
                out.insert(row.id.clone(), Listing::empty());
            }
        }
    }
    let hosts = by_host.into_iter().map(|(connection, sessions)| async move {
        match files_of(st, org_id, connection).await {
            Ok(files) => files.listings(st, org_id, sessions, counter).await,
            Err(e) => {
                let reason = e.to_string();
                sessions.into_iter().map(|(ws, _)| (ws, Listing::unreadable(reason.clone()))).collect::<Vec<_>>()
            }
        }
    });
    for listings in join_all(hosts).await {
        out.extend(listings);
    }
    out
}

/// The stored files of the workspaces of `connection_id`.
async fn files_of(st: &AppState, org_id: &str, connection_id: &str) -> Result<StoredFiles> {
    let conn = connections::for_org(st, org_id, connection_id)
        .await?
        .ok_or_else(|| DocumentError::Host("its connection was deleted".into()))?;
    Ok(StoredFiles::of(st, org_id, conn).await?)
}

async fn document(st: &AppState, org_id: &str, id: &str) -> Result<Document> {
    let mut c = st.db.conn().await?;
    let text = store::document(&mut c, org_id, id).await?;
    Ok(Document::parse(text.as_deref())?)
}

async fn state_listing(st: &AppState, org_id: &str, id: &str) -> Listing {
    match document(st, org_id, id).await {
        Ok(doc) => grouping::document_listing(&doc),
        Err(e) => Listing::unreadable(e.to_string()),
    }
}

pub async fn read_bytes(
    st: &AppState,
    org_id: &str,
    row: &VisibleRow,
    path: &WorkspacePath,
    counter: &HostCounter,
) -> Result<Vec<u8>> {
    if row.backend == "state" {
        return Ok(document(st, org_id, &row.id).await?.read(path)?);
    }
    let (connection, session) = host_session(row)?;
    files_of(st, org_id, connection).await?.read_bytes(st, org_id, session, path, counter).await
}

/// Lines `offset..offset+limit` of a text file, as a bounded page (the host's hint for an agent
/// taken off, [`TextPage`]).
pub async fn read_text(
    st: &AppState,
    org_id: &str,
    row: &VisibleRow,
    path: &WorkspacePath,
    offset: u64,
    limit: u64,
    counter: &HostCounter,
) -> Result<TextPage> {
    if row.backend == "state" {
        let bytes = document(st, org_id, &row.id).await?.read(path)?;
        return Ok(TextPage::of_whole(&String::from_utf8_lossy(&bytes), offset, limit));
    }
    let (connection, session) = host_session(row)?;
    files_of(st, org_id, connection).await?.read_text(st, org_id, session, path, offset, limit, counter).await
}

fn host_session(row: &VisibleRow) -> Result<(&str, &str)> {
    match (row.connection_id.as_deref(), session_of(row)) {
        (Some(c), Some(s)) => Ok((c, s)),
        _ => Err(DocumentError::NotFound("This workspace holds no files yet.".into())),
    }
}

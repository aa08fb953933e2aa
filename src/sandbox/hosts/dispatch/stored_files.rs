//! A workspace's stored files at its host, read without running its session: Documents' listings
//! and reads, and a snapshot's archive. One value for both, [`StoredFiles`], made by the
//! connection's kind; each read is one exhaustive `match` on it calling into the kind's folder
//! (`hosts/<kind>/documents`, `hosts/<kind>/snapshots`: sandboxd packs a live session in its
//! sandbox or reads it file by file, Daytona reads its sandbox in bulk batches).

use crate::documents::error::DocumentError;
use crate::documents::listing::{HostCounter, Listing};
use crate::documents::paging::TextPage;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::hosts::sandboxd::client::SandboxdClient;
use crate::sandbox::hosts::{daytona, sandboxd};
use crate::sandbox::snapshots::reading::Built;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

/// Where a connection's workspaces' files are read: a sandboxd host's stored sessions (through a
/// client with the vault's key), or Daytona's sandboxes (each opened per read, through the
/// Daytona backend's stored files).
pub enum StoredFiles {
    Sandboxd(SandboxdClient),
    Daytona(Connection),
}

impl StoredFiles {
    /// The stored files of `conn`'s workspaces; `Err` when its host cannot be asked.
    pub async fn of(st: &AppState, org_id: &str, conn: Connection) -> Result<StoredFiles, ConnectionError> {
        match conn.kind {
            ConnectionKind::Sandboxd => {
                Ok(StoredFiles::Sandboxd(sandboxd::connections::client_for(st, org_id, &conn).await?))
            }
            ConnectionKind::Daytona => Ok(StoredFiles::Daytona(conn)),
        }
    }

    /// The listings of `sessions` (workspace id, session or sandbox id), by workspace id.
    pub async fn listings(
        &self,
        st: &AppState,
        org_id: &str,
        sessions: Vec<(String, String)>,
        counter: &HostCounter,
    ) -> Vec<(String, Listing)> {
        match self {
            StoredFiles::Sandboxd(client) => sandboxd::documents::listings(client, &sessions, counter).await,
            StoredFiles::Daytona(conn) => daytona::documents::listings(st, org_id, conn, sessions, counter).await,
        }
    }

    /// A file's bytes (at most the read limit).
    pub async fn read_bytes(
        &self,
        st: &AppState,
        org_id: &str,
        session: &str,
        path: &WorkspacePath,
        counter: &HostCounter,
    ) -> Result<Vec<u8>, DocumentError> {
        match self {
            StoredFiles::Sandboxd(client) => sandboxd::documents::read_bytes(client, session, path, counter).await,
            StoredFiles::Daytona(conn) => {
                daytona::documents::read_bytes(st, org_id, conn, session, path, counter).await
            }
        }
    }

    /// Lines `offset..offset+limit` of a text file, as a bounded page.
    #[allow(clippy::too_many_arguments)]
    pub async fn read_text(
        &self,
        st: &AppState,
        org_id: &str,
        session: &str,
        path: &WorkspacePath,
        offset: u64,
        limit: u64,
        counter: &HostCounter,
    ) -> Result<TextPage, DocumentError> {
        match self {
            StoredFiles::Sandboxd(client) => {
                sandboxd::documents::read_text(client, session, path, offset, limit, counter).await
            }
            StoredFiles::Daytona(conn) => {
                daytona::documents::read_text(st, org_id, conn, session, path, offset, limit, counter).await
            }
        }
    }

    /// Session `session`'s files read into a snapshot's archive (a Daytona sandbox Daytona
    /// stopped is started for it).
    pub async fn archive(&self, st: &AppState, org_id: &str, session: &str) -> Result<Built, WorkspaceError> {
        match self {
            StoredFiles::Sandboxd(client) => {
                sandboxd::snapshots::packed::from_sandboxd(&st.snapshot_hold, client, session).await
            }
            StoredFiles::Daytona(conn) => daytona::snapshots::archive(st, org_id, conn, session).await,
        }
    }
}

//! The `state` backend (DESIGN.md §11): the workspace is one [`Document`] in our database. A
//! change reads the document, applies itself and writes it back only if nobody changed it
//! meanwhile (else it tries again); a change that would cross the storage limit is refused and the
//! document stays as it was. It runs no commands.

use futures_util::future::BoxFuture;

use super::backend::{within_read_max, Result, WorkspaceBackend};
use super::command::Command;
use super::document::Document;
use super::error::WorkspaceError;
use super::model::{Entry, ExecResult, Resolved};
use super::paths::WorkspacePath;
use super::store;
use crate::db;
use crate::state::AppState;

/// How often a change is tried against a document others keep changing.
const ATTEMPTS: usize = 8;

pub struct StateBackend<'a> {
    st: &'a AppState,
    workspace_id: String,
}

impl<'a> StateBackend<'a> {
    pub(super) fn new(st: &'a AppState, r: &Resolved) -> Self {
        StateBackend { st, workspace_id: r.workspace.id.clone() }
    }

    async fn document(&self) -> Result<Document> {
        let mut c = self.st.db.conn().await?;
        let (text, _) = store::document(&mut c, &self.workspace_id).await?;
        Document::parse(text.as_deref())
    }

    /// Applies `change` to the document and stores the result.
    async fn change<T>(&self, change: impl Fn(&mut Document) -> Result<T> + Send) -> Result<T> {
        let limit = self.st.config.sandboxd.state_limit_bytes;
        for _ in 0..ATTEMPTS {
            let mut c = self.st.db.conn().await?;
            let (text, version) = store::document(&mut c, &self.workspace_id).await?;
            let mut doc = Document::parse(text.as_deref())?;
            let before = doc.usage();
            let out = change(&mut doc)?;
            let after = doc.usage();
            if after > limit && after > before {
                return Err(WorkspaceError::TooLarge(format!(
                    "This workspace would hold {after} bytes, over its storage limit of {limit} bytes (files and empty folders count). Nothing was written."
                )));
            }
            if store::replace_document(&mut c, &self.workspace_id, version, &doc.to_json(), db::now_ms()).await? {
                return Ok(out);
            }
        }
        Err(WorkspaceError::Internal(anyhow::anyhow!("the state document kept changing; try again")))
    }
}

impl WorkspaceBackend for StateBackend<'_> {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(async move { within_read_max(self.document().await?.read(path)?) })
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.change(move |d| d.write(path, bytes)))
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        Box::pin(async move { self.document().await?.ls(path) })
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.change(move |d| d.mkdir(path)))
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.change(move |d| d.remove(path)))
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        Box::pin(async move { self.document().await?.stat(path) })
    }

    fn exec<'a>(&'a mut self, _command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        Box::pin(async { Err(WorkspaceError::NoCommands) })
    }

    /// Empties the document.
    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let mut c = self.st.db.conn().await?;
            Ok(store::clear_document(&mut c, &self.workspace_id, db::now_ms()).await?)
        })
    }
}

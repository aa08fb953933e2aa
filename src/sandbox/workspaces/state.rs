//! The `state` backend (DESIGN.md §11): the workspace is one [`Document`] in our database. A
//! change reads the document, applies itself and writes it back only if nobody changed it
//! meanwhile (else it tries again); a change that would cross the storage limit is refused and the
//! document stays as it was. It runs no commands. As for sandboxd, a run's first operation writes
//! the agent's skills (and, into a new workspace, its manifest files) first, each recorded.

use futures_util::future::BoxFuture;

use super::backend::{files_at_open, within_read_max, Result, WorkspaceBackend};
use super::command::Command;
use super::document::Document;
use super::error::WorkspaceError;
use super::model::{is_finished, Entry, ExecResult, Resolved, WorkspaceState, FINISHED};
use super::paths::WorkspacePath;
use super::recorded::{bytes_detail, record, RowKeys};
use super::store;
use crate::agents::runs::service as runs;
use crate::db;
use crate::sandbox::recording::Operation;
use crate::state::AppState;

/// How often a change is tried against a document others keep changing.
const ATTEMPTS: usize = 8;

pub struct StateBackend<'a> {
    st: &'a AppState,
    r: Resolved,
}

impl<'a> StateBackend<'a> {
    pub(super) fn new(st: &'a AppState, r: Resolved) -> Self {
        StateBackend { st, r }
    }

    async fn document(&self) -> Result<Document> {
        let mut c = self.st.db.conn().await?;
        let (text, _) = store::document(&mut c, &self.r.workspace.id).await?;
        Document::parse(text.as_deref())
    }

    /// Applies `change` to the document and stores the result.
    async fn change<T>(&self, change: impl Fn(&mut Document) -> Result<T> + Send) -> Result<T> {
        let limit = self.st.config.sandboxd.state_limit_bytes;
        for _ in 0..ATTEMPTS {
            let mut c = self.st.db.conn().await?;
            let (text, version) = store::document(&mut c, &self.r.workspace.id).await?;
            let mut doc = Document::parse(text.as_deref())?;
            let before = doc.usage();
            let out = change(&mut doc)?;
            let after = doc.usage();
            if after > limit && after > before {
                return Err(WorkspaceError::TooLarge(format!(
                    "This workspace would hold {after} bytes, over its storage limit of {limit} bytes (files and empty folders count). Nothing was written."
                )));
            }
            if store::replace_document(&mut c, &self.r.workspace.id, version, &doc.to_json(), db::now_ms()).await? {
                return Ok(out);
            }
        }
        Err(WorkspaceError::Internal(anyhow::anyhow!("the state document kept changing; try again")))
    }

    /// The run's first operation writes the agent's files first (once per run, one writer per
    /// workspace in this process), each recorded.
    async fn ensure_open(&mut self) -> Result<()> {
        if self.r.run.workspace_opened {
            return Ok(());
        }
        let lock = self.st.open_locks.get(&self.r.workspace.id);
        let _one_opener = lock.lock().await;
        let gone = || WorkspaceError::NotFound("gone".into());
        self.r.run = runs::get_in_org(self.st, &self.r.org_id, &self.r.run.id).await?.ok_or_else(gone)?;
        if is_finished(&self.r.run) {
            return Err(WorkspaceError::Refused(FINISHED.into()));
        }
        if self.r.run.workspace_opened {
            return Ok(());
        }
        let mut c = self.st.db.conn().await?;
        self.r.workspace = store::get(&mut c, &self.r.org_id, &self.r.workspace.id).await?.ok_or_else(gone)?;
        drop(c);
        let is_new_workspace = self.r.workspace.state == WorkspaceState::NotOpened;
        let keys = RowKeys::of(&self.r);
        let recorder = &self.st.recorder;
        for (p, f) in files_at_open(&self.r.agent, is_new_workspace)? {
            if f.is_dir {
                let work = Box::pin(self.change(|d| d.mkdir(&p)));
                record(recorder, &keys, Operation::Mkdir, p.display(), work, |_| (true, String::new())).await?;
            } else {
                let bytes = f.content.as_bytes();
                let work = Box::pin(self.change(|d| d.write(&p, bytes)));
                record(recorder, &keys, Operation::Write, p.display(), work, |_| bytes_detail(bytes.len())).await?;
            }
        }
        if is_new_workspace {
            let mut c = self.st.db.conn().await?;
            store::set_state(&mut c, &self.r.workspace.id, WorkspaceState::Open, db::now_ms()).await?;
        }
        runs::set_workspace_opened(self.st, &self.r.run.id, true).await?;
        self.r.run.workspace_opened = true;
        self.r.workspace.state = WorkspaceState::Open;
        self.st.resolve_cache.put(&self.r);
        Ok(())
    }
}

impl WorkspaceBackend for StateBackend<'_> {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(async move {
            self.ensure_open().await?;
            within_read_max(self.document().await?.read(path)?)
        })
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.ensure_open().await?;
            self.change(move |d| d.write(path, bytes)).await
        })
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        Box::pin(async move {
            self.ensure_open().await?;
            self.document().await?.ls(path)
        })
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.ensure_open().await?;
            self.change(move |d| d.mkdir(path)).await
        })
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.ensure_open().await?;
            self.change(move |d| d.remove(path)).await
        })
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        Box::pin(async move {
            self.ensure_open().await?;
            self.document().await?.stat(path)
        })
    }

    fn exec<'a>(&'a mut self, _command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        Box::pin(async { Err(WorkspaceError::NoCommands) })
    }

    /// Empties the document.
    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let mut c = self.st.db.conn().await?;
            Ok(store::clear_document(&mut c, &self.r.workspace.id, db::now_ms()).await?)
        })
    }
}

//! The `state` backend (docs/design.md §11): the workspace is one [`Document`] in our database. A
//! run of a shared workspace (any scope but `run`) works on its own view: its first operation
//! copies the shared document as it is then (the base), and its changes go into the run's copy;
//! [`finish`] merges them into the shared document when the run finishes. A `run`
//! workspace has one run, which changes the document itself. A change reads the document,
//! applies itself and writes it back only if nobody changed it meanwhile (else it tries again); a
//! change that would grow the document over the storage limit is refused and the document stays
//! as it was (one that shrinks it is accepted, also over a lowered limit). It runs no commands.
//! As for sandboxd, a run's first operation writes the agent's skills (and, into a new workspace,
//! its manifest) first, each recorded (see [`crate::sandbox::workspaces::manifest`]).

pub mod finish;

use futures_util::future::BoxFuture;

use crate::agents::runs::service as runs;
use crate::db;
use crate::sandbox::workspaces::backend::{within_read_max, Result, WorkspaceBackend};
use crate::sandbox::workspaces::command::Command;
use crate::sandbox::workspaces::document::Document;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::manifest::{self, Target};
use crate::sandbox::workspaces::model::{is_finished, Entry, ExecResult, Resolved, WorkspaceState, FINISHED};
use crate::sandbox::workspaces::{state_store, store};
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;
use crate::vocabulary::scope::Scope;

/// How often a change is tried against a document others keep changing.
pub(crate) const ATTEMPTS: usize = 8;

/// The refusal of a change that would grow a document (holding `before` bytes) over its limit.
pub(crate) fn over_limit(before: u64, after: u64, limit: u64) -> WorkspaceError {
    let already = if before > limit {
        format!(
            " It already holds {before} bytes, more than the limit (which was lowered since): only changes that make it smaller are accepted."
        )
    } else {
        String::new()
    };
    WorkspaceError::TooLarge(format!(
        "This workspace would hold {after} bytes, over its storage limit of {limit} bytes (files and empty folders count). Nothing was written.{already}"
    ))
}

pub struct StateBackend<'a> {
    st: &'a AppState,
    r: Resolved,
}

impl<'a> StateBackend<'a> {
    pub(crate) fn new(st: &'a AppState, r: Resolved) -> Self {
        StateBackend { st, r }
    }

    /// Whether the run works on its own view (every scope but `run`).
    fn has_view(&self) -> bool {
        self.r.workspace.scope != Scope::Run
    }

    /// The document this run sees and its version.
    async fn load(&self) -> Result<(Document, i64)> {
        let mut c = self.st.db.conn().await?;
        let (ws, run) = (&self.r.workspace.id, &self.r.run.id);
        if !self.has_view() {
            let (text, version) = store::document(&mut c, ws).await?;
            return Ok((Document::parse(text.as_deref())?, version));
        }
        if let Some(v) = state_store::view(&mut c, &self.r.org_id, run, ws).await? {
            return Ok((Document::parse(v.document.as_deref())?, v.version));
        }
        state_store::start_view(&mut c, &self.r.org_id, run, ws, db::now_ms()).await?;
        let v = state_store::view(&mut c, &self.r.org_id, run, ws)
            .await?
            .ok_or_else(|| WorkspaceError::NotFound("gone".into()))?;
        Ok((Document::parse(v.document.as_deref())?, v.version))
    }

    /// Stores `doc` if the document is still at `version`; false means retry.
    async fn save(&self, version: i64, doc: &Document) -> Result<bool> {
        let mut c = self.st.db.conn().await?;
        let (ws, run, now) = (&self.r.workspace.id, &self.r.run.id, db::now_ms());
        Ok(if self.has_view() {
            state_store::replace_view(&mut c, &self.r.org_id, run, version, &doc.to_json(), now).await?
        } else {
            store::replace_document(&mut c, ws, version, &doc.to_json(), now).await?
        })
    }

    async fn document(&self) -> Result<Document> {
        Ok(self.load().await?.0)
    }

    /// Applies `change` to the document and stores the result.
    async fn change<T>(&self, change: impl Fn(&mut Document) -> Result<T> + Send) -> Result<T> {
        let limit = self.st.config.sandboxd.state_limit_bytes;
        for _ in 0..ATTEMPTS {
            let (mut doc, version) = self.load().await?;
            let before = doc.usage();
            let out = change(&mut doc)?;
            let after = doc.usage();
            if after > limit && after > before {
                return Err(over_limit(before, after, limit));
            }
            if self.save(version, &doc).await? {
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
        // A document has no network: repositories are fetched by the console; its writes serialise.
        manifest::materialise(self.st, &self.r, &*self, is_new_workspace, false, 1).await?;
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

impl Target for StateBackend<'_> {
    fn mkdir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.change(move |d| d.mkdir(path)))
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.change(move |d| d.write(path, bytes)))
    }
    fn clone_repo<'a>(&'a self, _script: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>> {
        Box::pin(async { Err(WorkspaceError::NoCommands) })
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

    /// Empties the document (a `run` workspace's: a shared one is merged by
    /// [`finish`] instead).
    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let mut c = self.st.db.conn().await?;
            Ok(store::clear_document(&mut c, &self.r.workspace.id, db::now_ms()).await?)
        })
    }
}

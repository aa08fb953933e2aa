//! A workspace on a host (a sandboxd session, a Daytona sandbox) as a [`WorkspaceBackend`], alike
//! for every host kind: each operation runs on the open workspace's files ([`HostFiles`]) through
//! the kind's [`HostWorkspace::on_open`] (which opens it on the run's first operation, and again
//! where the host closed it meanwhile); a command is refused while the agent's shell is switched
//! off and gets the manifest's environment under its own. Only opening and finishing are the
//! kind's.

use futures_util::future::BoxFuture;

use super::backend::{Result, WorkspaceBackend};
use super::command::Command;
use super::error::WorkspaceError;
use super::host_files::HostFiles;
use super::manifest;
use super::model::{Entry, ExecResult, Resolved};
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

/// An operation on the open workspace's handle `H`, tried again by [`HostWorkspace::on_open`]
/// where the kind opens the workspace again.
pub type OnOpen<'a, H, T> = Box<dyn Fn(H) -> BoxFuture<'a, Result<T>> + Send + 'a>;

/// What a host kind's backend says itself; the operations come from here.
pub trait HostWorkspace: Send {
    /// The open workspace's handle.
    type Open: HostFiles;

    /// The console, and the run with its workspace and connection.
    fn run(&self) -> (&AppState, &Resolved);

    /// Runs `op` on the open workspace, opened first when this run has not yet (or no longer).
    fn on_open<'a, T: Send + 'a>(&'a mut self, op: OnOpen<'a, Self::Open, T>) -> BoxFuture<'a, Result<T>>;

    /// The run a `run`-scoped workspace belongs to has ended: the host drops it.
    fn finish(&mut self) -> BoxFuture<'_, Result<()>>;
}

impl<B: HostWorkspace> WorkspaceBackend for B {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        self.on_open(Box::new(move |h| h.read(path)))
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        self.on_open(Box::new(move |h| h.write(path, bytes)))
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        self.on_open(Box::new(move |h| h.ls(path)))
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        self.on_open(Box::new(move |h| h.mkdir(path)))
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        self.on_open(Box::new(move |h| h.remove(path)))
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        self.on_open(Box::new(move |h| h.stat(path)))
    }

    fn exec<'a>(&'a mut self, command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        Box::pin(async move {
            let (st, r) = self.run();
            if !r.agent.shell_enabled {
                return Err(WorkspaceError::Refused(
                    "This agent's shell is switched off in its sandbox settings.".into(),
                ));
            }
            let base = manifest::env::resolve(st, r).await?;
            let env: std::collections::BTreeMap<String, String> = base.into_iter().chain(command.env.clone()).collect();
            self.on_open(Box::new(move |h| h.exec(command, env.clone()))).await
        })
    }

    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        HostWorkspace::finish(self)
    }
}

//! Recording (docs/design.md §8) as a wrapper around any backend: `read`, `write`, `ls`, `mkdir`,
//! `remove` and `execute` each become one row of `sandbox_operations` — the target, whether it
//! went well, a detail line written by us, the duration — never a payload, never an output.
//! `stat` is a question and passes unrecorded. A refusal before anything reached a host (a path,
//! a scope, a switched-off connection, a document asked to run a command) is no operation, and
//! neither is a call the host never received (nothing answered at its address: docs/design.md §8; a call
//! that was sent and not answered in time may have reached it, and is a failed row). A
//! command that ran but did not succeed (a non-zero exit, a timeout, output cut at the limit) is
//! a failed operation. The writes a backend makes when it opens a workspace (the agent's skills
//! and manifest files) go through [`record`] too.

use std::time::Instant;

use futures_util::future::BoxFuture;

use super::backend::{Result, WorkspaceBackend};
use super::command::Command;
use super::error::WorkspaceError;
use super::model::{Entry, ExecResult, Resolved};
use crate::db;
use crate::sandbox::recording::{clip_target, Operation, Record, Recorder};
use crate::vocabulary::paths::WorkspacePath;

/// What every row of one run's workspace carries.
pub struct RowKeys {
    organization_id: String,
    workspace_id: String,
    session_key: String,
    connection_id: Option<String>,
    agent_id: String,
    run_id: String,
    conversation_id: Option<String>,
}

impl RowKeys {
    pub fn of(r: &Resolved) -> Self {
        RowKeys {
            organization_id: r.org_id.clone(),
            workspace_id: r.workspace.id.clone(),
            session_key: r.workspace.session_key.clone(),
            connection_id: r.connection.as_ref().map(|c| c.id.clone()),
            agent_id: r.agent.id.clone(),
            run_id: r.run.id.clone(),
            conversation_id: r.run.conversation_id.clone(),
        }
    }
}

/// A backend whose every operation is recorded.
pub struct Recorded<'a, B: ?Sized> {
    recorder: &'a Recorder,
    keys: RowKeys,
    inner: Box<B>,
}

impl<'a, B: WorkspaceBackend + ?Sized> Recorded<'a, B> {
    pub fn new(recorder: &'a Recorder, keys: RowKeys, inner: Box<B>) -> Self {
        Recorded { recorder, keys, inner }
    }
}

/// Runs `work` and records how it went: `outcome` says whether a result is a success, and its detail.
pub(super) async fn record<T>(
    recorder: &Recorder,
    keys: &RowKeys,
    operation: Operation,
    target: String,
    work: BoxFuture<'_, Result<T>>,
    outcome: impl FnOnce(&T) -> (bool, String),
) -> Result<T> {
    let started = Instant::now();
    let result = work.await;
    if matches!(
        &result,
        Err(WorkspaceError::BadPath(_)
            | WorkspaceError::Invalid(_)
            | WorkspaceError::Refused(_)
            | WorkspaceError::Forbidden(_)
            | WorkspaceError::NoCommands)
    ) || matches!(&result, Err(WorkspaceError::Host(h)) if !h.reached())
    {
        return result;
    }
    let (ok, detail) = match &result {
        Ok(v) => outcome(v),
        Err(e) => (false, e.detail().to_string()),
    };
    recorder
        .record(Record {
            id: db::new_time_ordered_id(),
            organization_id: keys.organization_id.clone(),
            workspace_id: keys.workspace_id.clone(),
            session_key: keys.session_key.clone(),
            connection_id: keys.connection_id.clone(),
            agent_id: Some(keys.agent_id.clone()),
            run_id: keys.run_id.clone(),
            conversation_id: keys.conversation_id.clone(),
            operation,
            target: clip_target(&target),
            ok,
            detail,
            duration_ms: started.elapsed().as_millis() as i64,
            created_at: db::now_ms(),
            seq: recorder.next_seq(),
        })
        .await;
    result
}

fn no_detail<T>(_: &T) -> (bool, String) {
    (true, String::new())
}

impl<B: WorkspaceBackend + ?Sized> Recorded<'_, B> {
    /// A write a person asked for (a file attached to a conversation): its row's detail names
    /// them beside the byte count.
    pub async fn write_by(&mut self, path: &WorkspacePath, bytes: &[u8], person: &str) -> Result<()> {
        let work = self.inner.write(path, bytes);
        let detail = format!("{} bytes, attached by {person}", bytes.len());
        record(self.recorder, &self.keys, Operation::Write, path.display(), work, move |_| (true, detail)).await
    }
}

/// A success with its byte count.
pub(super) fn bytes_detail(n: usize) -> (bool, String) {
    (true, format!("{n} bytes"))
}

impl<B: WorkspaceBackend + ?Sized> WorkspaceBackend for Recorded<'_, B> {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        let work = self.inner.read(path);
        Box::pin(record(self.recorder, &self.keys, Operation::Read, path.display(), work, |b| bytes_detail(b.len())))
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        let work = self.inner.write(path, bytes);
        let n = bytes.len();
        Box::pin(record(self.recorder, &self.keys, Operation::Write, path.display(), work, move |_| bytes_detail(n)))
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        let work = self.inner.ls(path);
        Box::pin(record(self.recorder, &self.keys, Operation::Ls, path.display(), work, |v| {
            (true, format!("{} entries", v.len()))
        }))
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        let work = self.inner.mkdir(path);
        Box::pin(record(self.recorder, &self.keys, Operation::Mkdir, path.display(), work, no_detail))
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        let work = self.inner.remove(path);
        Box::pin(record(self.recorder, &self.keys, Operation::Remove, path.display(), work, no_detail))
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        self.inner.stat(path)
    }

    fn exec<'a>(&'a mut self, command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        let work = self.inner.exec(command);
        Box::pin(record(self.recorder, &self.keys, Operation::Execute, command.display(), work, exit_outcome))
    }

    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        self.inner.finish()
    }
}

/// How a command ended: `exit 0` is the one success; `exit N`, `timed out` and `output limit`
/// are failures.
fn exit_outcome(o: &ExecResult) -> (bool, String) {
    if o.timed_out {
        (false, "timed out".into())
    } else if o.output_limited {
        (false, "output limit".into())
    } else {
        (o.exit_code == Some(0), format!("exit {}", o.exit_code.unwrap_or(-1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(exit_code: Option<i32>, timed_out: bool, output_limited: bool) -> (bool, String) {
        exit_outcome(&ExecResult {
            stdout: None,
            stderr: None,
            exit_code,
            timed_out,
            output_limited,
            stdout_base64: None,
            stderr_base64: None,
            output_combined: false,
        })
    }

    #[test]
    fn only_exit_0_is_a_successful_command() {
        assert_eq!(ended(Some(0), false, false), (true, "exit 0".into()));
        assert_eq!(ended(Some(3), false, false), (false, "exit 3".into()));
        assert_eq!(ended(None, true, false), (false, "timed out".into()));
        assert_eq!(ended(None, false, true), (false, "output limit".into()));
    }
}

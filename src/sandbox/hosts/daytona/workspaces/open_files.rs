//! The open sandbox as the workspace's files and shell ([`HostFiles`] on its rooted toolbox):
//! each operation one toolbox request below the workspace root, in the workspace's words
//! (`files.rs`); a snapshot goes in bulk uploads (`bulk.rs`).

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;

use super::files::{file_error, host_error, is_plain_name};
use super::root::Rooted;
use super::{bulk, LIMITED_KEEP, OUTPUT_LIMIT};
use crate::sandbox::hosts::daytona::client::{sh_command, DaytonaError, ExecuteRequest, FileInfo};
use crate::sandbox::workspaces::backend::{Result, READ_MAX};
use crate::sandbox::workspaces::command::Command;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::host_files::HostFiles;
use crate::sandbox::workspaces::manifest;
use crate::sandbox::workspaces::model::{Entry, ExecResult};
use crate::sandbox::workspaces::Unpacked;
use crate::validate::FieldErrors;
use crate::vocabulary::paths::WorkspacePath;

/// The path as the toolbox takes it: below the workspace root ([`Rooted::at`]).
fn at(tb: &Rooted, path: &WorkspacePath) -> String {
    tb.at(if path.is_root() { "." } else { path.relative() })
}

/// The output a manifest's `git clone` may print before it is cut.
const CLONE_OUTPUT_LIMIT: usize = 1024 * 1024;

impl HostFiles for Rooted {
    fn read<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        let tb = self.clone();
        Box::pin(async move { tb.toolbox().download(&at(&tb, path), READ_MAX).await.map_err(file_error) })
    }

    /// Refused before anything is sent when the path starts or ends with white space: Daytona's
    /// upload trims it (`strings.TrimSpace`, apps/daemon/pkg/toolbox/fs/upload_files.go), so the file
    /// would land under another name.
    fn write<'a>(&self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        let tb = self.clone();
        Box::pin(async move {
            let rel = path.relative();
            if rel.trim() != rel {
                return Err(WorkspaceError::Invalid(FieldErrors::one(
                    "path",
                    "Daytona cannot write a file whose path starts or ends with a space: it would trim the \
                     name. Choose the name without those spaces.",
                )));
            }
            tb.toolbox().upload(&at(&tb, path), bytes).await.map_err(file_error)
        })
    }

    fn mkdir<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        let tb = self.clone();
        Box::pin(async move { tb.toolbox().create_folder(&at(&tb, path)).await.map_err(file_error) })
    }

    fn remove<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        let tb = self.clone();
        Box::pin(async move { tb.toolbox().delete(&at(&tb, path), true).await.map_err(file_error) })
    }

    fn stat<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        let tb = self.clone();
        Box::pin(async move {
            let info = tb.toolbox().info(&at(&tb, path)).await.map_err(file_error)?;
            let name = if path.is_root() { String::new() } else { info.name.clone() };
            Ok(entry(info, name, path.relative().to_string()))
        })
    }

    fn ls<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        let tb = self.clone();
        Box::pin(async move {
            let list = tb.toolbox().list(&at(&tb, path)).await.map_err(file_error)?;
            let mut entries: Vec<Entry> = list
                .into_iter()
                .filter(|info| is_plain_name(&info.name))
                .map(|info| {
                    let rel = path.join(&info.name).relative().to_string();
                    entry(info.clone(), info.name, rel)
                })
                .collect();
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(entries)
        })
    }

    fn exec<'a>(&self, command: &'a Command, env: BTreeMap<String, String>) -> BoxFuture<'a, Result<ExecResult>> {
        let tb = self.clone();
        Box::pin(async move { execute(&tb, command, env).await })
    }

    fn clone_repo<'a>(&self, argv: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>> {
        let tb = self.clone();
        Box::pin(async move {
            let request = ExecuteRequest {
                command: sh_command(argv),
                cwd: tb.cwd(),
                envs: Default::default(),
                timeout: manifest::git::TIMEOUT.as_secs(),
            };
            match tb.toolbox().execute(&request, CLONE_OUTPUT_LIMIT).await {
                Ok(o) if o.exit() == Some(0) => Ok(Ok(())),
                Ok(o) => {
                    let line = o.result.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no reason given");
                    Ok(Err(format!("exit {}: {}", o.exit().unwrap_or(-1), line.chars().take(300).collect::<String>())))
                }
                Err(DaytonaError::RequestTimeout) => Ok(Err("it timed out".into())),
                Err(e) => Err(host_error(e)),
            }
        })
    }

    /// Commands start in the workspace root.
    fn command_path(&self, path: &WorkspacePath) -> String {
        if path.is_root() {
            ".".to_string()
        } else {
            format!("./{}", path.relative())
        }
    }

    /// Many files a request (the toolbox's bulk upload): `bulk::unpack`.
    fn unpack<'a>(&'a self, archive: &'a std::path::Path) -> BoxFuture<'a, Result<Unpacked>> {
        Box::pin(bulk::unpack(self, archive))
    }
}

/// `process/execute` of `command` (as `sh -c`) in the workspace root, our deadline always sent: a 408 is a timed-out
/// result (Daytona kills the command and sends no output). Daytona returns stdout and stderr
/// together, in the order written: they come back as `stdout` (`stderr` empty), the answer
/// saying so (`output_combined`). Daytona lets the
/// command run to its end, so an `output_limited` answer keeps its exit code.
async fn execute(
    tb: &Rooted,
    command: &Command,
    envs: std::collections::BTreeMap<String, String>,
) -> Result<ExecResult> {
    let request = ExecuteRequest {
        command: sh_command(&command.host_argv()),
        cwd: tb.cwd(),
        envs,
        timeout: command.timeout.as_secs().max(1),
    };
    match tb.toolbox().execute(&request, OUTPUT_LIMIT).await {
        Ok(mut o) => {
            let exit = o.exit();
            if o.output_limited {
                let mut cut = LIMITED_KEEP.min(o.result.len());
                while !o.result.is_char_boundary(cut) {
                    cut -= 1;
                }
                o.result.truncate(cut);
            }
            Ok(ExecResult {
                output_combined: true,
                ..command.result(o.result, String::new(), exit, false, o.output_limited)
            })
        }
        Err(DaytonaError::RequestTimeout) => {
            Ok(ExecResult { output_combined: true, ..command.result(String::new(), String::new(), None, true, false) })
        }
        Err(e) => Err(host_error(e)),
    }
}

fn entry(info: FileInfo, name: String, path: String) -> Entry {
    let size = if info.is_dir { None } else { info.size.and_then(|s| u64::try_from(s).ok()) };
    Entry { name, path, is_dir: info.is_dir, size, is_link: info.is_link() }
}

//! File operations through the sandbox's shell, for those the host hands back (409): a symbolic
//! link on the path or in a listed folder, native files off, a file over the host's native limit.
//! They do what the client library does then (pydantic-ai-backend 0.2.37, through pydantic-ai's
//! shell filesystem):
//!
//! - a link is followed where the library follows it: `read`, `write` and `stat` go to what it
//!   leads to (`stat` marks it `is_link`); `ls` lists a link as itself, marked, and `remove`
//!   removes the link, never what it leads to;
//! - bytes travel base64-encoded both ways, so NUL and bytes that are not UTF-8 survive;
//! - a read goes in chunks, each command's output well under the host's 10 MiB output limit,
//!   and starts again (three times at most) when the file changes size meanwhile;
//! - a write goes in chunks too, each argument under the 131,071 bytes one argument may carry
//!   (docs/workspaces.md, "Command limits"): the chunks of a large file are staged in the sandbox's temporary
//!   folder, then the last command writes the whole file to a temporary name beside its target
//!   and renames it over the target, so a failure never leaves half a file where a good one was
//!   (an existing file keeps its permission bits);
//! - `remove` refuses a path that leads (through a link) to the workspace root or above it.
//!
//! Each script takes its path as an argument, never spliced into the script text, and reports a
//! path error by its exit status (the library's: 100 + the Linux errno), which becomes the error
//! the native route gives for it. However many commands one takes, it is one operation for the
//! recording wrapper.

use std::time::Duration;

use base64::Engine as _;

use super::scripts::*;
use super::Session;
use crate::sandbox::hosts::sandboxd::client::{RunRequest, RunResponse};
use crate::sandbox::workspaces::backend::{Result, READ_MAX};
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Entry;
use crate::vocabulary::paths::{WorkspacePath, WORK_DIR};

/// How long one command of a file operation done through the shell may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// `dd`'s block size; a read chunk is a whole number of them.
const BLOCK: usize = 64 * 1024;
/// Bytes one read command returns: base64 makes 4/3 of it (plus line breaks), well under the
/// host's output limit of 10 MiB.
const READ_CHUNK: usize = 4 * 1024 * 1024;
/// Attempts at reading a file that changes size meanwhile, as the client library makes.
const READ_ATTEMPTS: usize = 3;
/// Base64 characters in one argument: a multiple of 4 under the 131,071 bytes one argument may
/// carry.
const WRITE_ARG: usize = 120_000;
/// Arguments of base64 in one write command: about 1.4 MB, well under the 2,000,000 bytes argv
/// and environment may take together.
const WRITE_ARGS_PER_COMMAND: usize = 12;

// Checked when compiling: an argument fits one `execve` argument and decodes on its own, a command's
// arguments stay well under what argv and environment may take together, and a read chunk's base64
// (with its line breaks) stays under the host's output limit.
const _: () = assert!(WRITE_ARG <= 131_071 && WRITE_ARG % 4 == 0);
const _: () = assert!(WRITE_ARG * WRITE_ARGS_PER_COMMAND < 1_500_000);
const _: () = assert!(READ_CHUNK % BLOCK == 0 && READ_CHUNK.div_ceil(3) * 4 * 78 / 76 < 10 * 1024 * 1024);

/// Runs `script` with `args` as `$1`, `$2`, …
async fn run(s: &Session, script: &str, args: Vec<String>) -> Result<RunResponse> {
    let argv: Vec<String> = ["/bin/sh", "-c", script, "sh"].into_iter().map(str::to_string).chain(args).collect();
    let request = RunRequest::new(argv).timeout(TIMEOUT);
    Ok(s.client.run(&s.id, &request).await?)
}

/// A script's exit status as the error the native route would give; `what` names the operation
/// for a failure no path error explains.
fn succeeded(o: &RunResponse, what: &str) -> Result<()> {
    let error = match o.exit_code {
        Some(0) => return Ok(()),
        Some(EXIT_NOT_FOUND) => WorkspaceError::NotFound("No such file or folder.".into()),
        Some(EXIT_EXISTS) => WorkspaceError::AlreadyExists("Something else is already at this path.".into()),
        Some(EXIT_NOT_DIRECTORY) => {
            WorkspaceError::NotADirectory("A part of this path is a file, not a folder.".into())
        }
        Some(EXIT_IS_DIRECTORY) => WorkspaceError::IsADirectory("This is a folder.".into()),
        Some(EXIT_NOT_REGULAR) => {
            WorkspaceError::NotRegular("This is neither a file nor a folder (a device, a pipe or a socket).".into())
        }
        Some(EXIT_PERMISSION) => {
            WorkspaceError::PermissionDenied("The sandbox's user may not do this at this path.".into())
        }
        Some(EXIT_ROOT) => WorkspaceError::PermissionDenied(
            "This path leads (through a symbolic link) to the workspace root or above it, which cannot be removed."
                .into(),
        ),
        _ => failed(what, o),
    };
    Err(error)
}

/// A file operation the shell could not do, with the first line the sandbox printed about it.
fn failed(what: &str, o: &RunResponse) -> WorkspaceError {
    let why = if o.timed_out {
        "it timed out".to_string()
    } else {
        let line = o.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no reason given").trim();
        let line: String = line.chars().take(200).collect();
        format!("exit {}: {line}", o.exit_code.unwrap_or(-1))
    };
    WorkspaceError::Shell(format!(
        "The sandbox could not {what} through its shell ({why}). File operations the host hands back need sh, base64, dd, wc, cp, mv, rm, mkdir and readlink in the sandbox."
    ))
}

fn damaged(what: &str) -> WorkspaceError {
    WorkspaceError::Shell(format!("The sandbox could not {what} through its shell: its answer came back damaged."))
}

fn decode(text: &str) -> Option<Vec<u8>> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact).ok()
}

fn too_large() -> WorkspaceError {
    WorkspaceError::TooLarge(format!("The file is larger than {} MiB.", READ_MAX / 1024 / 1024))
}

pub(super) async fn stat(s: &Session, path: &WorkspacePath) -> Result<Entry> {
    let o = run(s, &format!("{MISSING}{STAT_SCRIPT}"), vec![path.absolute()]).await?;
    succeeded(&o, "describe this path")?;
    let mut words = o.stdout.split_whitespace();
    let (kind, link) = (words.next(), words.next() == Some("l"));
    let size = match kind {
        Some("d") => None,
        Some("f") => Some(words.next().and_then(|n| n.parse().ok()).ok_or_else(|| damaged("describe this path"))?),
        _ => return Err(damaged("describe this path")),
    };
    let name = path.absolute().rsplit('/').next().unwrap_or_default().to_string();
    Ok(Entry { name, path: path.relative().to_string(), is_dir: kind == Some("d"), size, is_link: link })
}

/// The whole file, in chunks of [`READ_CHUNK`]; one over [`READ_MAX`] is refused unread.
pub(super) async fn read(s: &Session, path: &WorkspacePath) -> Result<Vec<u8>> {
    let what = "read this file";
    'attempt: for _ in 0..READ_ATTEMPTS {
        let mut data: Vec<u8> = Vec::new();
        let mut size: Option<usize> = None;
        loop {
            let first_block = data.len() / BLOCK;
            let args =
                vec![path.absolute(), READ_MAX.to_string(), first_block.to_string(), (READ_CHUNK / BLOCK).to_string()];
            let o = run(s, &format!("{MISSING}{READ_SCRIPT}"), args).await?;
            succeeded(&o, what)?;
            let (now, chunk) = o.stdout.split_once('\n').ok_or_else(|| damaged(what))?;
            let now: usize = now.trim().parse().map_err(|_| damaged(what))?;
            if now > READ_MAX {
                return Err(too_large());
            }
            if size.is_some_and(|before| before != now) {
                continue 'attempt;
            }
            size = Some(now);
            let expected = READ_CHUNK.min(now - data.len());
            match decode(chunk) {
                Some(bytes) if bytes.len() == expected => data.extend_from_slice(&bytes),
                // Replaced or cut meanwhile: read it again.
                _ => continue 'attempt,
            }
            if data.len() == now {
                return Ok(data);
            }
        }
    }
    Err(damaged(what))
}

/// Writes `bytes` to the file at `path` (following a link there), creating its parent folders.
pub(super) async fn write(s: &Session, path: &WorkspacePath, bytes: &[u8]) -> Result<()> {
    let what = "write this file";
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    // Every argument but the last is a whole multiple of 4 characters, so each command's share
    // decodes on its own.
    let args: Vec<&str> =
        (0..encoded.len()).step_by(WRITE_ARG).map(|i| &encoded[i..(i + WRITE_ARG).min(encoded.len())]).collect();
    let commands: Vec<&[&str]> = args.chunks(WRITE_ARGS_PER_COMMAND).collect();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (last, staged) = match commands.split_last() {
        Some((last, staged)) => (*last, staged),
        None => (&[][..], &[][..]),
    };
    let with = |mode: &str, part: &[&str]| -> Vec<String> {
        [path.absolute(), id.clone(), mode.to_string()].into_iter().chain(part.iter().map(|a| a.to_string())).collect()
    };
    let stage = format!("{WRITE_CHECKS}{CHECK_PARENTS}\n{STAGE_SCRIPT}");
    for (i, part) in staged.iter().enumerate() {
        let o = match run(s, &stage, with(if i == 0 { "new" } else { "more" }, part)).await {
            Ok(o) => o,
            Err(e) => return Err(discard(s, &id, e).await),
        };
        if let Err(e) = succeeded(&o, what) {
            return Err(discard(s, &id, e).await);
        }
    }
    let finish = format!("{WRITE_CHECKS}{CHECK_PARENTS}\n{FINISH_SCRIPT}");
    let o = run(s, &finish, with(if staged.is_empty() { "-" } else { "staged" }, last)).await?;
    succeeded(&o, what)
}

/// Removes a failed write's staged part (best effort), handing back the failure.
async fn discard(s: &Session, id: &str, e: WorkspaceError) -> WorkspaceError {
    if let Err(cleanup) = run(s, DISCARD_SCRIPT, vec![id.to_string()]).await {
        tracing::warn!(error = %cleanup, "could not remove a failed write's staged part from the sandbox");
    }
    e
}

pub(super) async fn mkdir(s: &Session, path: &WorkspacePath) -> Result<()> {
    let script = format!("{MKDIR_SCRIPT}{CHECK_PARENTS}\nmkdir -p -- \"$1\"");
    let o = run(s, &script, vec![path.absolute()]).await?;
    succeeded(&o, "make this folder")
}

pub(super) async fn remove(s: &Session, path: &WorkspacePath) -> Result<()> {
    let o = run(s, &format!("{MISSING}{REMOVE_SCRIPT}"), vec![path.absolute(), WORK_DIR.to_string()]).await?;
    succeeded(&o, "remove this")
}

pub(super) async fn ls(s: &Session, path: &WorkspacePath) -> Result<Vec<Entry>> {
    let o = run(s, &format!("{MISSING}{LS_SCRIPT}"), vec![path.absolute()]).await?;
    succeeded(&o, "list this folder")?;
    Ok(entries(&o.stdout, path))
}

/// [`LS_SCRIPT`]'s records as entries, sorted by name.
fn entries(out: &str, dir: &WorkspacePath) -> Vec<Entry> {
    let mut list: Vec<Entry> = out
        .split('\0')
        .filter_map(|record| {
            let mut parts = record.splitn(3, '/');
            let (kind, size, name) = (parts.next()?, parts.next()?, parts.next()?);
            if name.is_empty() {
                return None;
            }
            Some(Entry {
                name: name.to_string(),
                path: dir.join(name).relative().to_string(),
                is_dir: kind == "d",
                size: if kind == "f" { size.parse().ok() } else { None },
                is_link: kind == "l",
            })
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::paths::normalise;

    #[test]
    fn listing_records_become_sorted_entries_with_links_marked() {
        let dir = normalise(".venv/bin").expect("path");
        let list = entries("l//python\0f/3/activate\0d//sub\0", &dir);
        let names: Vec<(&str, &str, bool, Option<u64>, bool)> =
            list.iter().map(|e| (e.name.as_str(), e.path.as_str(), e.is_dir, e.size, e.is_link)).collect();
        assert_eq!(
            names,
            vec![
                ("activate", ".venv/bin/activate", false, Some(3), false),
                ("python", ".venv/bin/python", false, None, true),
                ("sub", ".venv/bin/sub", true, None, false),
            ]
        );
        assert_eq!(entries("f/1/a\0", &WorkspacePath::root())[0].path, "a");
    }

    /// Runs a write command's script with this machine's `/bin/sh`, `TMPDIR` in `dir` and
    /// `fake` (if any) first on `PATH`: its exit status.
    fn write_command(script: &str, dir: &std::path::Path, fake: Option<&std::path::Path>, args: &[&str]) -> i32 {
        let path = std::env::var("PATH").unwrap_or_default();
        let path = fake.map_or(path.clone(), |f| format!("{}:{path}", f.display()));
        let status = std::process::Command::new("/bin/sh")
            .args(["-c", script, "sh"])
            .args(args)
            .env("PATH", path)
            .env("TMPDIR", dir)
            .status()
            .expect("sh runs");
        status.code().unwrap_or(-1)
    }

    fn leftovers(dirs: &[&std::path::Path]) -> Vec<String> {
        dirs.iter()
            .flat_map(|d| std::fs::read_dir(d).expect("dir"))
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("agenticos"))
            .collect()
    }

    #[test]
    fn a_write_that_fails_midway_leaves_the_good_file_and_no_temporary_one() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tmp");
        let (work, stage_dir, fake) = (tmp.path().join("work"), tmp.path().join("stage"), tmp.path().join("fake"));
        for d in [&work, &stage_dir, &fake] {
            std::fs::create_dir(d).expect("mkdir");
        }
        let dest = work.join("notes.txt");
        std::fs::write(&dest, "the good file").expect("write");
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o751)).expect("chmod");
        let dest_arg = dest.to_str().expect("utf-8");
        let stage = format!("{WRITE_CHECKS}{CHECK_PARENTS}\n{STAGE_SCRIPT}");
        let finish = format!("{WRITE_CHECKS}{CHECK_PARENTS}\n{FINISH_SCRIPT}");
        let encode = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);

        // Staged in two commands, finished by a third: the new bytes, the old mode, nothing left.
        let (first, second, last) = (encode(b"new \0\xff"), encode(b"bytes"), encode(b"!"));
        assert_eq!(write_command(&stage, &stage_dir, None, &[dest_arg, "id1", "new", &first]), 0);
        assert_eq!(write_command(&stage, &stage_dir, None, &[dest_arg, "id1", "more", &second]), 0);
        assert_eq!(std::fs::read(&dest).expect("read"), b"the good file", "untouched until the last command");
        assert_eq!(write_command(&finish, &stage_dir, None, &[dest_arg, "id1", "staged", &last]), 0);
        assert_eq!(std::fs::read(&dest).expect("read"), b"new \0\xffbytes!");
        assert_eq!(std::fs::metadata(&dest).expect("meta").permissions().mode() & 0o777, 0o751);
        assert!(leftovers(&[&work, &stage_dir]).is_empty(), "{:?}", leftovers(&[&work, &stage_dir]));

        // A `base64` that dies halfway through the last command (a full disk, a killed process):
        // the file is as it was, and neither the temporary file nor the staged part remains.
        let broken = fake.join("base64");
        std::fs::write(&broken, "#!/bin/sh\nprintf half\nexit 1\n").expect("fake");
        std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(write_command(&stage, &stage_dir, None, &[dest_arg, "id2", "new", &first]), 0);
        assert_ne!(write_command(&finish, &stage_dir, Some(&fake), &[dest_arg, "id2", "staged", &last]), 0);
        assert_eq!(std::fs::read(&dest).expect("read"), b"new \0\xffbytes!", "the good file stays");
        assert!(leftovers(&[&work, &stage_dir]).is_empty(), "{:?}", leftovers(&[&work, &stage_dir]));

        // Path errors come back as their exit statuses, before anything is written.
        let folder = work.to_str().expect("utf-8");
        assert_eq!(write_command(&finish, &stage_dir, None, &[folder, "id3", "-", &last]), EXIT_IS_DIRECTORY);
        let under_file = format!("{dest_arg}/x");
        assert_eq!(write_command(&finish, &stage_dir, None, &[&under_file, "id3", "-", &last]), EXIT_NOT_DIRECTORY);
        assert!(leftovers(&[&work, &stage_dir]).is_empty());
    }
}

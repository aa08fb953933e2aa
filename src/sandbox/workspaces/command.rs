//! A command for a workspace's shell, checked before anything reaches a host, and shown as
//! people type it (the target of its operation row).

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;

use super::error::WorkspaceError;
use super::model::ExecResult;
use crate::vocabulary::command::{is_variable_name, ARG_MAX_BYTES};

pub const EXEC_TIMEOUT_DEFAULT: u64 = 120;
pub const EXEC_TIMEOUT_MAX: u64 = 3600;

/// The most the whole argument list and environment may take, counted as the kernel does (each
/// string's bytes, its NUL and an 8-byte pointer): the measured 2,095,000-odd bytes of the pinned
/// release under its 2 MiB `ARG_MAX`, less room for the host's own environment.
pub const ARGS_TOTAL_MAX_BYTES: usize = 2_000_000;

/// How `exec` returns a command's output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputEncoding {
    /// `stdout` and `stderr` as UTF-8 text (bytes that are not UTF-8 are replaced).
    #[default]
    Text,
    /// `stdout_base64` and `stderr_base64`: the exact bytes, base64-encoded.
    Base64,
}

/// What to execute, as asked: an argv, or a command line for `/bin/sh -c`.
pub struct ExecInput {
    pub argv: Option<Vec<String>>,
    pub command: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub env: BTreeMap<String, String>,
    pub output_encoding: OutputEncoding,
}

/// A checked command: a program and its arguments, a timeout, environment variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
    pub output_encoding: OutputEncoding,
}

/// Runs `"$@"` with its standard output and error each piped through `base64` (so the host, which
/// hands output back as UTF-8 text, carries the exact bytes), exiting with the command's status.
const BASE64_WRAPPER: &str = "exec 3>&1 4>&2; \
s=$( { { { \"$@\" 3>&- 4>&- 5>&- 6>&-; echo $? >&5; } 2>&6 | base64 >&3; } 6>&1 | base64 >&4; } 5>&1 ); \
exit \"${s:-1}\"";

fn refused(message: impl Into<String>) -> WorkspaceError {
    WorkspaceError::BadPath(message.into())
}

impl Command {
    /// Checks what was asked: exactly one of argv and command, no NUL byte, a timeout of 1 to
    /// [`EXEC_TIMEOUT_MAX`] seconds, environment variable names.
    pub fn parse(input: ExecInput) -> Result<Command, WorkspaceError> {
        let argv = match (input.argv, input.command) {
            (Some(a), None) if !a.is_empty() && !a[0].is_empty() => a,
            (None, Some(c)) if !c.trim().is_empty() => vec!["/bin/sh".into(), "-c".into(), c],
            _ => return Err(refused("Send either “argv” (a program and its arguments) or “command” (a shell line).")),
        };
        if argv.iter().any(|a| a.contains('\0')) {
            return Err(refused("A command cannot contain a NUL byte."));
        }
        let timeout = input.timeout_seconds.unwrap_or(EXEC_TIMEOUT_DEFAULT);
        if timeout == 0 || timeout > EXEC_TIMEOUT_MAX {
            return Err(refused(format!("The timeout is 1 to {EXEC_TIMEOUT_MAX} seconds.")));
        }
        if let Some(name) = input.env.keys().find(|name| !is_variable_name(name)) {
            let shown = name.replace('\0', "\\0");
            return Err(refused(format!("“{shown}” in “env” is not an environment variable name.")));
        }
        if let Some(name) = input.env.iter().find(|(_, value)| value.contains('\0')).map(|(n, _)| n) {
            return Err(refused(format!("The value of “{name}” in “env” contains a NUL byte.")));
        }
        if let Some(i) = argv.iter().position(|a| a.len() > ARG_MAX_BYTES) {
            let what =
                if input_was_line(&argv) { "The command".to_string() } else { format!("Argument {i} of “argv”") };
            return Err(refused(format!(
                "{what} is {} bytes long; a sandbox starts at most {ARG_MAX_BYTES} bytes per argument. Write a longer script to a file and run that.",
                argv[i].len()
            )));
        }
        if let Some((name, value)) = input.env.iter().find(|(n, v)| n.len() + 1 + v.len() > ARG_MAX_BYTES) {
            return Err(refused(format!(
                "“{name}” in “env” is {} bytes long with its value; a sandbox starts at most {ARG_MAX_BYTES} bytes per variable.",
                name.len() + 1 + value.len()
            )));
        }
        let total: usize = argv.iter().map(|a| a.len() + 1 + 8).sum::<usize>()
            + input.env.iter().map(|(n, v)| n.len() + v.len() + 2 + 8).sum::<usize>();
        if total > ARGS_TOTAL_MAX_BYTES {
            return Err(refused(format!(
                "The command and its environment take {total} bytes; a sandbox starts at most {ARGS_TOTAL_MAX_BYTES}."
            )));
        }
        Ok(Command {
            argv,
            timeout: Duration::from_secs(timeout),
            env: input.env,
            output_encoding: input.output_encoding,
        })
    }

    /// The argv the host runs: the command itself, or (base64 output) the command inside a
    /// wrapper that encodes its output in the sandbox.
    pub fn host_argv(&self) -> Vec<String> {
        match self.output_encoding {
            OutputEncoding::Text => self.argv.clone(),
            OutputEncoding::Base64 => ["/bin/sh", "-c", BASE64_WRAPPER, "sh"]
                .into_iter()
                .map(str::to_string)
                .chain(self.argv.iter().cloned())
                .collect(),
        }
    }

    /// What the command produced, in the encoding asked for. Base64 output is decoded and
    /// encoded again, so a reply always carries well-formed base64 (output cut at a deadline or
    /// the limit keeps its whole 3-byte groups).
    pub fn result(
        &self,
        stdout: String,
        stderr: String,
        exit_code: Option<i32>,
        timed_out: bool,
        output_limited: bool,
    ) -> ExecResult {
        let (stdout, stderr, stdout_base64, stderr_base64) = match self.output_encoding {
            OutputEncoding::Text => (Some(stdout), Some(stderr), None, None),
            OutputEncoding::Base64 => (None, None, Some(reencode(&stdout)), Some(reencode(&stderr))),
        };
        ExecResult {
            stdout,
            stderr,
            exit_code,
            timed_out,
            output_limited,
            stdout_base64,
            stderr_base64,
            output_combined: false,
        }
    }

    /// The command as people read it: `/bin/sh -c` lines as the line, argv words quoted when needed.
    pub fn display(&self) -> String {
        let argv = &self.argv;
        if argv.len() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" {
            return argv[2].clone();
        }
        argv.iter()
            .map(|a| {
                if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
                    a.clone()
                } else {
                    format!("'{}'", a.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Whether the argv is a `command` line as [`Command::parse`] spells it.
fn input_was_line(argv: &[String]) -> bool {
    argv.len() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c"
}

/// The bytes of `base64`'s output (lines of it, possibly cut short), encoded again in one line.
fn reencode(text: &str) -> String {
    let mut clean: String =
        text.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')).collect();
    let engine = &base64::engine::general_purpose::STANDARD;
    loop {
        match engine.decode(clean.as_bytes()) {
            Ok(bytes) => return engine.encode(bytes),
            // Cut short: drop to the last whole group of four characters and try again.
            Err(_) if !clean.is_empty() => {
                let whole = (clean.len() - 1) / 4 * 4;
                clean.truncate(whole);
            }
            Err(_) => return String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> ExecInput {
        ExecInput {
            argv: Some(words.iter().map(|x| x.to_string()).collect()),
            command: None,
            timeout_seconds: None,
            env: BTreeMap::new(),
            output_encoding: OutputEncoding::Text,
        }
    }

    #[test]
    fn commands_are_shown_as_people_type_them() {
        let shown = |words: &[&str]| Command::parse(argv(words)).expect("valid").display();
        assert_eq!(shown(&["/bin/sh", "-c", "cat a | wc -l"]), "cat a | wc -l");
        assert_eq!(shown(&["cat", "my file.txt"]), "cat 'my file.txt'");
        assert_eq!(shown(&["echo", "it's"]), "echo 'it'\\''s'");
    }

    #[test]
    fn a_command_line_runs_in_the_shell_with_the_default_timeout() {
        let input = ExecInput { argv: None, command: Some("ls -l".into()), ..argv(&[]) };
        let c = Command::parse(input).expect("valid");
        assert_eq!(c.argv, vec!["/bin/sh", "-c", "ls -l"]);
        assert_eq!(c.timeout, Duration::from_secs(EXEC_TIMEOUT_DEFAULT));
    }

    #[test]
    fn unclear_or_unsafe_commands_are_refused() {
        let both = ExecInput { command: Some("ls".into()), ..argv(&["ls"]) };
        let no_timeout = ExecInput { timeout_seconds: Some(0), ..argv(&["ls"]) };
        let long = ExecInput { timeout_seconds: Some(EXEC_TIMEOUT_MAX + 1), ..argv(&["ls"]) };
        let env = ExecInput { env: BTreeMap::from([("1X".to_string(), String::new())]), ..argv(&["ls"]) };
        let nul_name = ExecInput { env: BTreeMap::from([("A\0B".to_string(), String::new())]), ..argv(&["ls"]) };
        let nul_value = ExecInput { env: BTreeMap::from([("A".to_string(), "x\0y".to_string())]), ..argv(&["ls"]) };
        let big_value =
            ExecInput { env: BTreeMap::from([("A".to_string(), "v".repeat(ARG_MAX_BYTES))]), ..argv(&["ls"]) };
        let line = ExecInput { argv: None, command: Some("x".repeat(ARG_MAX_BYTES + 1)), ..argv(&[]) };
        let word = "w".repeat(100_000);
        let many = argv(&vec![word.as_str(); 21]);
        for bad in [both, argv(&[]), argv(&["a\0b"]), no_timeout, long, env, nul_name, nul_value, big_value, line, many]
        {
            assert!(matches!(Command::parse(bad), Err(WorkspaceError::BadPath(_))));
        }
        let longest = ExecInput { argv: None, command: Some("x".repeat(ARG_MAX_BYTES)), ..argv(&[]) };
        assert!(Command::parse(longest).is_ok());
    }

    #[test]
    fn base64_output_is_decoded_whole_groups_only() {
        assert_eq!(reencode("aGVs\nbG8=\n"), "aGVsbG8=");
        // Cut in the middle of a group: the whole groups before it stay.
        assert_eq!(reencode("aGVsbG8gd29y"), "aGVsbG8gd29y");
        assert_eq!(reencode("aGVsbG8gd2"), "aGVsbG8g");
        assert_eq!(reencode(""), "");
    }

    #[test]
    fn base64_output_wraps_the_command_and_keeps_its_words() {
        let c = Command::parse(ExecInput { output_encoding: OutputEncoding::Base64, ..argv(&["cat", "a b"]) })
            .expect("valid");
        let host = c.host_argv();
        assert_eq!(&host[..2], &["/bin/sh", "-c"]);
        assert_eq!(&host[3..], &["sh", "cat", "a b"]);
        assert_eq!(c.display(), "cat 'a b'");
    }
}

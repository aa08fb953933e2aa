//! A command for a workspace's shell, checked before anything reaches a host, and shown as
//! people type it (the target of its operation row).

use std::collections::BTreeMap;
use std::time::Duration;

use super::error::WorkspaceError;

pub const EXEC_TIMEOUT_DEFAULT: u64 = 120;
pub const EXEC_TIMEOUT_MAX: u64 = 3600;

/// What to execute, as asked: an argv, or a command line for `/bin/sh -c`.
pub struct ExecInput {
    pub argv: Option<Vec<String>>,
    pub command: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub env: BTreeMap<String, String>,
}

/// A checked command: a program and its arguments, a timeout, environment variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
}

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
            _ => return Err(refused("Send either `argv` (a program and its arguments) or `command` (a shell line).")),
        };
        if argv.iter().any(|a| a.contains('\0')) {
            return Err(refused("A command cannot contain a NUL byte."));
        }
        let timeout = input.timeout_seconds.unwrap_or(EXEC_TIMEOUT_DEFAULT);
        if timeout == 0 || timeout > EXEC_TIMEOUT_MAX {
            return Err(refused(format!("The timeout is 1 to {EXEC_TIMEOUT_MAX} seconds.")));
        }
        if let Some(name) = input.env.keys().find(|name| !is_variable_name(name)) {
            return Err(refused(format!("`{name}` is not an environment variable name.")));
        }
        Ok(Command { argv, timeout: Duration::from_secs(timeout), env: input.env })
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

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
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
        let input =
            ExecInput { argv: None, command: Some("ls -l".into()), timeout_seconds: None, env: BTreeMap::new() };
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
        for bad in [both, argv(&[]), argv(&["a\0b"]), no_timeout, long, env] {
            assert!(matches!(Command::parse(bad), Err(WorkspaceError::BadPath(_))));
        }
    }
}

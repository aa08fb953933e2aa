//! What a sandbox starts a command with: the names its environment variables may have, and the
//! longest argument or variable it takes. An agent's manifest is checked against them when it is
//! saved, a workspace's command before it reaches a host.

/// The longest single argument (a `command` line is one) and the longest `NAME=value`
/// environment entry, in bytes, that a host can start: Linux's `MAX_ARG_STRLEN` (128 KiB, its
/// terminating NUL included). Measured against the pinned sandboxd release (docs/workspaces.md, "Command
/// limits"): 131,071 bytes start, 131,072 answer 410 "Argument list too long".
pub const ARG_MAX_BYTES: usize = 131_071;

/// A name a shell takes as a variable's: letters, digits and `_`, not starting with a digit.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

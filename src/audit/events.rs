//! The audit log's events: each code as the API gives it and the name the log page shows. One
//! table; `tests/api/audit_log.rs` fails when a code written anywhere in `src/` (any literal
//! `subject.what_happened`, whatever its subject) is missing from it.

/// `(code, name)`, grouped by what they are about.
pub const EVENTS: &[(&str, &str)] = &[
    ("organization.created", "Organization created"),
    ("member.invited", "Member invited"),
    ("member.joined", "Member joined"),
    ("member.invitation_revoked", "Invitation revoked"),
    ("member.invitation_declined", "Invitation declined"),
    ("member.role_changed", "Role changed"),
    ("member.removed", "Member removed"),
    ("member.password_reset", "Password reset by an admin"),
    ("organization.two_factor_required", "Two-factor sign-in required of members"),
    ("organization.two_factor_not_required", "Two-factor sign-in no longer required"),
    ("account.password_changed", "Password changed"),
    ("account.password_reset_by_mail", "Password reset with a mailed link"),
    ("account.password_reset_on_command_line", "Password reset on the command line"),
    ("account.two_factor_enabled", "Two-factor sign-in switched on"),
    ("account.two_factor_disabled", "Two-factor sign-in switched off"),
    ("account.two_factor_cleared_on_command_line", "Two-factor sign-in cleared on the command line"),
    ("sign_in.succeeded", "Signed in"),
    ("sign_in.failed", "Sign-in failed"),
    ("sign_in.locked", "Sign-in locked"),
    ("sign_in.recovery_code_used", "Signed in with a recovery code"),
    ("token.created", "API token created"),
    ("token.revoked", "API token revoked"),
    ("vault.secret_created", "Vault key created"),
    ("vault.secret_rotated", "Vault key rotated"),
    ("vault.secret_deleted", "Vault key deleted"),
    ("vault.secret_bound", "Vault key bound to an address"),
    ("connection.created", "Connection added"),
    ("connection.updated", "Connection edited"),
    ("connection.deleted", "Connection deleted"),
    ("connection.probed", "Host tested"),
    ("connection.switched_on", "Connection switched on"),
    ("connection.switched_off", "Connection switched off"),
    ("connection.made_default", "Default connection changed"),
    ("agent.created", "Agent created"),
    ("agent.sandbox_settings_changed", "Agent's sandbox settings changed"),
    ("agent.deleted", "Agent deleted"),
    ("conversation.deleted", "Conversation deleted"),
    ("sandbox.orphans_purged", "Orphaned sandboxes purged"),
    ("sandbox_session.closed", "Sandbox session closed"),
    ("sandbox_session.files_deleted", "Sandbox session closed and its files deleted"),
];

/// The name of an event's code; a code the table lacks reads as its words
/// (`thing.was_done` → `Thing: was done`).
pub fn label(code: &str) -> String {
    match EVENTS.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => (*name).to_string(),
        None => {
            let words = code.replace(['_', '.'], " ");
            let mut chars = words.chars();
            chars.next().map(|f| f.to_uppercase().chain(chars).collect()).unwrap_or_default()
        }
    }
}

pub fn is_known(code: &str) -> bool {
    EVENTS.iter().any(|(c, _)| *c == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_as_its_name() {
        assert_eq!(label("member.invited"), "Member invited");
        assert_eq!(label("session.closed_early"), "Session closed early");
        assert!(is_known("token.revoked"));
        assert!(!is_known("token.eaten"));
        let mut codes: Vec<_> = EVENTS.iter().map(|(c, _)| c).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), EVENTS.len(), "each code once");
    }
}

use serde::Serialize;

/// One entry of the audit log.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AuditEvent {
    /// The event's id (a UUID).
    pub id: String,
    /// Who did it: an account's e-mail, `token <name>`, or a system actor like `sign-in`.
    pub actor_label: String,
    /// What happened, e.g. `member.invited`, `vault.secret_rotated`.
    pub action: String,
    /// What it was done to: a name, an e-mail address, a host's address.
    pub target: String,
    /// More about it (addresses, a role change, an outcome); empty when there is nothing more.
    pub detail: String,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
}

/// Who did something.
pub struct Actor {
    pub user_id: Option<String>,
    pub label: String,
}

impl Actor {
    pub fn user(user_id: &str, email: &str) -> Self {
        Actor { user_id: Some(user_id.to_string()), label: email.to_string() }
    }
    pub fn system(label: &str) -> Self {
        Actor { user_id: None, label: label.to_string() }
    }
}

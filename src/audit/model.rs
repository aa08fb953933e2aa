use serde::Serialize;

/// One entry of the audit log.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AuditEvent {
    pub id: String,
    /// Who did it: an account's e-mail, `token <name>`, or a system actor like `sign-in`.
    pub actor_label: String,
    /// What happened, e.g. `member.invited`, `vault.secret_rotated`.
    pub action: String,
    pub target: String,
    pub detail: String,
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

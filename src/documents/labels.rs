//! How a workspace is named and placed: its title, the scope's words, its owner, where it is
//! stored, and what kind of workspace it is (one place to add kinds, e.g. a recovery copy).

use super::listing::Listing;
use super::model::WorkspaceSummary;
use super::store::VisibleRow;
use crate::sandbox::workspaces::model::recovery_label;
use crate::state::AppState;
use crate::vocabulary::scope::Scope;

/// The kind of a `state` workspace's recovery copy (docs/design.md §11).
pub const RECOVERY_COPY: &str = "recovery copy";

/// How a workspace is named and placed: the scope's words, its owner, where it is stored.
pub fn summary(st: &AppState, row: &VisibleRow, listing: &Listing) -> WorkspaceSummary {
    let scope = Scope::parse(&row.scope).unwrap_or(Scope::Conversation);
    let owner_name = match scope {
        Scope::User => row.owner_email.clone().or_else(|| row.owner_label.clone()),
        _ => None,
    };
    let agent = row.agent_name.clone().unwrap_or_else(|| "a deleted agent".to_string());
    // Two people's workspaces of one agent are told apart by the person (issue 49): "Personal
    // tutor · mia@example.com's workspace".
    let title = match (&row.conversation_title, &owner_name) {
        (Some(t), _) => t.clone(),
        (None, Some(owner)) => format!("{agent} · {owner}'s workspace"),
        (None, None) => format!("{agent} · {}", kind_label(scope)),
    };
    // A recovery copy carries its source's scope and conversation: it is named for its source.
    let (title, kind) = match &row.recovery_of {
        Some(_) => (recovery_label(&title), RECOVERY_COPY),
        None => (title, kind_label(scope)),
    };
    let location = if row.backend == "state" {
        "stored".to_string()
    } else {
        format!("on host {}", row.connection_name.as_deref().unwrap_or("(deleted connection)"))
    };
    let (used_bytes, limit_bytes) = if row.backend == "state" {
        let used = listing.entries.iter().map(|e| e.size.unwrap_or(0) + e.path.len() as u64).sum();
        (Some(used), Some(st.config.sandboxd.state_limit_bytes))
    } else {
        (None, None)
    };
    WorkspaceSummary {
        id: row.id.clone(),
        backend: row.backend.clone(),
        scope,
        kind_label: kind.to_string(),
        recovery_of: row.recovery_of.clone(),
        access_label: scope.access_label().to_string(),
        owner_name,
        agent_id: row.agent_id.clone(),
        agent_name: row.agent_name.clone(),
        conversation_id: row.conversation_id.clone(),
        conversation_title: row.conversation_title.clone(),
        title,
        location,
        updated_at: row.updated_at,
        used_bytes,
        limit_bytes,
    }
}

/// What kind of workspace it is, in a few words: one place to add kinds (e.g. a recovery copy of
/// a `state` workspace).
pub fn kind_label(scope: Scope) -> &'static str {
    match scope {
        Scope::Run => "one run's workspace",
        Scope::Conversation => "conversation workspace",
        Scope::Channel => "channel workspace",
        Scope::User => "personal workspace",
        Scope::Agent => "agent workspace",
    }
}

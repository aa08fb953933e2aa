//! Every link and form action the pages use; templates never build URLs by hand.

pub const HOME: &str = "/";
pub const SETUP: &str = "/setup";
pub const LOGIN: &str = "/login";
pub const LOGOUT: &str = "/logout";
pub const ORGS_NEW: &str = "/orgs/new";
pub const ORGS: &str = "/orgs";
pub const ORGS_SWITCH: &str = "/orgs/switch";
pub const MEMBERS: &str = "/members";
pub const TOKENS: &str = "/tokens";
pub const VAULT: &str = "/vault";
pub const AUDIT: &str = "/audit";
pub const API_DOCS: &str = "/api/v1/openapi.json";

pub fn member_role(membership_id: &str) -> String {
    format!("/members/{membership_id}/role")
}
pub fn member_delete(membership_id: &str) -> String {
    format!("/members/{membership_id}/delete")
}
pub fn token_revoke(token_id: &str) -> String {
    format!("/tokens/{token_id}/revoke")
}
pub fn secret_rotate(secret_id: &str) -> String {
    format!("/vault/{secret_id}/rotate")
}
pub fn secret_delete(secret_id: &str) -> String {
    format!("/vault/{secret_id}/delete")
}
pub fn audit_page(page: u32) -> String {
    format!("/audit?page={page}")
}

pub const SANDBOXES: &str = "/sandboxes";
pub const SANDBOXES_NEW: &str = "/sandboxes/new";
pub const SANDBOXES_PROBE: &str = "/sandboxes/probe";

pub fn connection(id: &str) -> String {
    format!("/sandboxes/{id}")
}
pub fn connection_edit(id: &str) -> String {
    format!("/sandboxes/{id}/edit")
}
pub fn connection_action(id: &str, action: &str) -> String {
    format!("/sandboxes/{id}/{action}")
}
pub fn connection_policy(id: &str) -> String {
    format!("/sandboxes/{id}/policy")
}

pub const AGENTS: &str = "/agents";
pub const AGENTS_NEW: &str = "/agents/new";
pub const AGENTS_RUNTIME_FIELD: &str = "/agents/_runtime_field";
pub const AGENTS_SCOPE_FIELD: &str = "/agents/_scope_field";
pub const CONVERSATIONS: &str = "/conversations";

pub fn agent(id: &str) -> String {
    format!("/agents/{id}")
}
pub fn conversation(id: &str) -> String {
    format!("/conversations/{id}")
}
pub fn conversation_workspace(id: &str) -> String {
    format!("/conversations/{id}/workspace")
}

//! The labels every Daytona sandbox of ours carries (docs/daytona.md §4.1): with them, two
//! deployments or two organizations sharing one Daytona key never take each other's sandboxes
//! for their own (orphans are listed by them).

use std::collections::BTreeMap;

use crate::sandbox::hosts::daytona::client::labels::owner as owner_of;
pub use crate::sandbox::hosts::daytona::client::labels::{
    CONNECTION, DEPLOYMENT, ORGANIZATION, ROOT, ROOT_WORKSPACE, SCOPE, WORKSPACE,
};
use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

/// The labels that say a sandbox is this deployment's and this organization's.
pub fn owner(st: &AppState, org_id: &str) -> BTreeMap<String, String> {
    owner_of(st.config.http.public_url.as_str(), org_id)
}

/// Every label of the sandbox of `r`'s workspace.
pub fn of(st: &AppState, r: &Resolved) -> BTreeMap<String, String> {
    let mut labels = owner(st, &r.org_id);
    if let Some(conn) = &r.connection {
        labels.insert(CONNECTION.to_string(), conn.id.clone());
    }
    labels.insert(SCOPE.to_string(), r.workspace.scope.as_str().to_string());
    labels.insert(WORKSPACE.to_string(), r.workspace.session_key.clone());
    labels
}

//! The labels every Daytona sandbox of ours carries (daytona.md §4.1): with them, two
//! deployments or two organizations sharing one Daytona key never take each other's sandboxes
//! for their own (orphans are listed by them).

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

pub const DEPLOYMENT: &str = "agenticos.io/deployment";
pub const ORGANIZATION: &str = "agenticos.io/org";
pub const CONNECTION: &str = "agenticos.io/connection";
pub const SCOPE: &str = "agenticos.io/scope";
pub const WORKSPACE: &str = "agenticos.io/workspace";

/// This deployment's label value: 16 hex of the SHA-256 of its public URL.
pub fn deployment_id(st: &AppState) -> String {
    hex::encode(Sha256::digest(st.config.http.public_url.as_str().as_bytes()))[..16].to_string()
}

/// The labels that say a sandbox is this deployment's and this organization's.
pub fn owner(st: &AppState, org_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(DEPLOYMENT.to_string(), deployment_id(st)), (ORGANIZATION.to_string(), org_id.to_string())])
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

//! The labels every Daytona sandbox of ours carries (docs/daytona.md §4.1), in one place for the
//! workspaces that set them and the orphan sweep that lists by them: with them, two deployments
//! or two organizations sharing one Daytona key never take each other's sandboxes for their own.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

pub const DEPLOYMENT: &str = "agenticos.io/deployment";
pub const ORGANIZATION: &str = "agenticos.io/org";
pub const CONNECTION: &str = "agenticos.io/connection";
pub const SCOPE: &str = "agenticos.io/scope";
pub const WORKSPACE: &str = "agenticos.io/workspace";
/// Where the workspace's files are in the sandbox: [`ROOT_WORKSPACE`] for `<home>/workspace`;
/// absent on sandboxes created before that rule (their files are at the work dir itself).
pub const ROOT: &str = "agenticos.io/root";
/// [`ROOT`]'s value: the workspace is the `workspace` folder under the sandbox user's home.
pub const ROOT_WORKSPACE: &str = "workspace";

/// A deployment's label value: 16 hex of the SHA-256 of its public URL.
pub fn deployment_id(public_url: &str) -> String {
    hex::encode(Sha256::digest(public_url.as_bytes()))[..16].to_string()
}

/// The labels that say a sandbox is the deployment at `public_url`'s and `org_id`'s.
pub fn owner(public_url: &str, org_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (DEPLOYMENT.to_string(), deployment_id(public_url)),
        (ORGANIZATION.to_string(), org_id.to_string()),
    ])
}

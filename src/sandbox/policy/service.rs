//! The policy panel (docs/design.md §6, §10): a host's live allowlist and ceilings, read from the host
//! at every view and marked against this deployment's catalog. Where the two disagree, the host
//! is right, so nothing here is cached or stored.

use super::error::PolicyError;
use super::model::{CatalogOnly, Ceilings, ConnectionRef, HostPolicy, Notice, PolicyPanel, PolicyRuntime};
use crate::access::Caller;
use crate::sandbox::connections::error::host_message;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::runtimes::marks_against;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::sandboxd::client::{SandboxdError, ServicePolicy};
use crate::state::AppState;

type Result<T> = std::result::Result<T, PolicyError>;

impl HostPolicy {
    /// Marks `policy` against the catalog and says what needs attention. `version` is the
    /// version-mismatch message, when the host lacks routes this platform calls.
    pub fn new(st: &AppState, conn: &Connection, policy: &ServicePolicy, version: Option<String>) -> Self {
        let marks = marks_against(st, policy);
        let runtimes = policy
            .runtimes
            .iter()
            .map(|r| {
                let in_catalog = st.catalog.get(&r.alias).is_some();
                let mark = marks.iter().find(|m| m.alias == r.alias).map(|m| m.mark()).unwrap_or("only on this host");
                PolicyRuntime {
                    alias: r.alias.clone(),
                    description: r.description.clone(),
                    image: r.image.clone(),
                    mem_limit: r.mem_limit.clone(),
                    cpus: r.cpus,
                    network_mode: r.network_mode.clone(),
                    builds: r.builds,
                    is_default: r.alias == policy.default_runtime,
                    in_catalog,
                    mark: mark.to_string(),
                }
            })
            .collect();
        let not_on_host = marks
            .iter()
            .filter(|m| m.in_catalog && m.offered == Some(false))
            .map(|m| CatalogOnly { alias: m.alias.clone(), description: m.description.clone() })
            .collect();
        HostPolicy {
            connection: ConnectionRef::of(conn),
            default_runtime: policy.default_runtime.clone(),
            runtimes,
            not_on_host,
            ceilings: Ceilings::of(policy),
            notices: notices(policy, version),
        }
    }
}

/// What the operator must be told: an empty allowlist, an unset workspace TTL (docs/design.md §10),
/// a host of another release (§6).
pub fn notices(policy: &ServicePolicy, version: Option<String>) -> Vec<Notice> {
    let mut out = Vec::new();
    if let Some(message) = version {
        out.push(Notice::new("version_mismatch", "error", message));
    }
    if policy.runtimes.is_empty() {
        out.push(Notice::new(
            "no_runtime",
            "error",
            "This host allows no runtime: no sandbox can start there. Set SANDBOXD_RUNTIMES on the host.",
        ));
    }
    if policy.workspace_ttl.is_none() {
        out.push(Notice::new(
            "workspace_ttl_unset",
            "warning",
            "Disk use only grows unless the operator sets a workspace TTL: this host keeps every workspace \
             directory forever. Set SANDBOXD_WORKSPACE_TTL on the host.",
        ));
    }
    out
}

/// Reads a saved connection's live policy; a host failure is an error (the API's 502/409).
pub async fn read(st: &AppState, caller: &Caller, connection_id: &str) -> Result<HostPolicy> {
    let conn = connections::get(st, caller, connection_id).await?;
    load(st, caller, &conn).await
}

/// Reads a saved connection's live policy for the page: a host failure becomes the message the
/// panel shows inline; only "not yours" and "not allowed" stay errors.
pub async fn panel(st: &AppState, caller: &Caller, connection_id: &str) -> Result<PolicyPanel> {
    let conn = connections::get(st, caller, connection_id).await?;
    let policy = match load(st, caller, &conn).await {
        Ok(p) => Ok(p),
        Err(PolicyError::HostUnavailable(e)) => Err(e.host_problem(&conn.id)?),
        Err(e @ PolicyError::NotSandboxd) => {
            let message = e.to_string();
            tracing::warn!(connection_id = %conn.id, problem = %message, "a sandbox host could not be read");
            Err(message)
        }
        Err(e) => return Err(e),
    };
    Ok(PolicyPanel { connection: ConnectionRef::of(&conn), policy })
}

async fn load(st: &AppState, caller: &Caller, conn: &Connection) -> Result<HostPolicy> {
    if !conn.kind.has_sessions() {
        return Err(PolicyError::NotSandboxd);
    }
    let client = connections::client_for(st, &caller.org_id, conn).await?;
    let policy = client.policy().await?;
    // Logged (with the address) by the client; shown here without it.
    let version = match client.check_version().await {
        Err(e @ SandboxdError::VersionMismatch { .. }) => Some(host_message(&e.into())),
        _ => None,
    };
    Ok(HostPolicy::new(st, conn, &policy, version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::hosts::sandboxd::client::RuntimePolicy;

    fn policy() -> ServicePolicy {
        ServicePolicy {
            runtimes: vec![RuntimePolicy { alias: "workbench".into(), ..RuntimePolicy::default() }],
            default_runtime: "workbench".into(),
            idle_timeout: 1800,
            ..ServicePolicy::default()
        }
    }

    fn codes(n: &[Notice]) -> Vec<&str> {
        n.iter().map(|n| n.code.as_str()).collect()
    }

    #[test]
    fn an_unset_workspace_ttl_is_warned_about_and_a_set_one_is_not() {
        let mut p = policy();
        let n = notices(&p, None);
        assert_eq!(codes(&n), ["workspace_ttl_unset"]);
        assert!(n[0].message.starts_with("Disk use only grows unless the operator sets a workspace TTL"));
        p.workspace_ttl = Some(86_400);
        assert!(notices(&p, None).is_empty());
    }

    #[test]
    fn an_empty_allowlist_says_no_sandbox_can_start() {
        let mut p = policy();
        p.workspace_ttl = Some(1);
        p.runtimes.clear();
        let n = notices(&p, Some("The sandbox service does not serve /x".into()));
        assert_eq!(codes(&n), ["version_mismatch", "no_runtime"]);
        assert!(n[1].message.contains("no sandbox can start there"));
    }

    #[test]
    fn ceilings_say_no_limit_and_forever() {
        let rows = Ceilings::of(&policy()).rows();
        let value = |k: &str| rows.iter().find(|r| r.key == k).map(|r| r.value.clone()).unwrap_or_default();
        assert_eq!(value("max_sessions_per_tenant"), "no limit");
        assert_eq!(value("idle_timeout"), "30 min");
        assert_eq!(value("workspace_ttl"), "unset: workspaces are kept forever");
    }
}

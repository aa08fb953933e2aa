//! The runtime catalog against a host's allowlist: what the connection dialog and the policy
//! panel mark each alias with.

use crate::sandbox::client::ServicePolicy;
use crate::state::AppState;

/// How a catalog alias fares on a probed host.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct RuntimeMark {
    /// The runtime's alias, as agents and connections name it.
    pub alias: String,
    /// What the runtime holds, from the catalog (or the host, for one the catalog lacks).
    pub description: String,
    /// Whether this deployment's runtime catalog ships it.
    pub in_catalog: bool,
    /// None before a host answered.
    pub offered: Option<bool>,
}

impl RuntimeMark {
    /// "offered by this host", "not on this host", "only on this host", or "" before a probe.
    pub fn mark(&self) -> &'static str {
        match (self.in_catalog, self.offered) {
            (_, None) => "",
            (true, Some(true)) => "offered by this host",
            (true, Some(false)) => "not on this host",
            (false, _) => "only on this host",
        }
    }
}

/// The catalog's aliases, unmarked: what the dialog offers before any host is asked.
pub fn catalog_marks(st: &AppState) -> Vec<RuntimeMark> {
    st.catalog
        .entries()
        .iter()
        .map(|e| RuntimeMark {
            alias: e.alias.clone(),
            description: e.description.clone(),
            in_catalog: true,
            offered: None,
        })
        .collect()
}

/// The catalog marked against a host's allowlist, the host's own extra aliases appended.
pub fn marks_against(st: &AppState, policy: &ServicePolicy) -> Vec<RuntimeMark> {
    let offered: Vec<&str> = policy.runtimes.iter().map(|r| r.alias.as_str()).collect();
    let mut marks: Vec<RuntimeMark> = catalog_marks(st)
        .into_iter()
        .map(|mut m| {
            m.offered = Some(offered.contains(&m.alias.as_str()));
            m
        })
        .collect();
    for r in &policy.runtimes {
        if st.catalog.get(&r.alias).is_none() {
            marks.push(RuntimeMark {
                alias: r.alias.clone(),
                description: r.description.clone(),
                in_catalog: false,
                offered: Some(true),
            });
        }
    }
    marks
}

//! The sandboxd containers this deployment's Docker engine runs (docs/operating.md, "The Docker engine"):
//! offered in the connection dialog as one-click addresses. Only the engine is asked; no request
//! goes to a container, and a container whose image tag is not the pin is never offered.

use serde::Serialize;

use super::common::ensure_manage;
use super::error::ConnectionError;
use super::identity;
use super::model::Connection;
use crate::access::Caller;
use crate::docker::SandboxdContainer;
use crate::state::AppState;

/// What the engine shows.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Discovery {
    /// Whether this deployment reads a Docker engine (`AGENTICOS_DOCKER_SOCKET` or `DOCKER_HOST`);
    /// false: the list is empty and nothing was asked.
    pub engine_enabled: bool,
    /// Why the engine could not be read; null when it answered (or is not configured).
    pub engine_problem: Option<String>,
    /// Every container of the sandboxd image (any tag), by name.
    pub containers: Vec<SandboxdContainer>,
}

impl Discovery {
    /// The containers the dialog offers with one click.
    pub fn offered(&self) -> impl Iterator<Item = &SandboxdContainer> {
        self.containers.iter().filter(|c| c.is_offered())
    }
}

/// The engine's sandboxd containers, for builders and above (those who add connections); each
/// one a connection of the organization already reaches is marked with it and not offered.
pub async fn discover(st: &AppState, caller: &Caller) -> Result<Discovery, ConnectionError> {
    ensure_manage(caller)?;
    let connected = super::service::list(st, caller).await?;
    Ok(of_engine_for(st, &connected).await)
}

/// [`of_engine`], each container whose address reaches the host of one of `connected` (compared
/// by identity, `identity.rs`) marked with that connection's name.
pub async fn of_engine_for(st: &AppState, connected: &[Connection]) -> Discovery {
    let mut found = of_engine(st).await;
    let mut theirs = Vec::new();
    for c in connected.iter().filter(|c| c.kind.host_has_identity()) {
        if let Some(at) = c.address.as_deref() {
            theirs.push((c.name.clone(), identity::forms(at).await));
        }
    }
    for container in &mut found.containers {
        let Some(at) = container.address.as_deref() else { continue };
        let mine = identity::forms(at).await;
        container.connected_as = theirs.iter().find(|(_, t)| !t.is_disjoint(&mine)).map(|(n, _)| n.clone());
    }
    found
}

/// The engine's sandboxd containers; an engine that does not answer is a problem in the answer,
/// never a failure.
pub async fn of_engine(st: &AppState) -> Discovery {
    let Some(engine) = &st.docker else {
        return Discovery { engine_enabled: false, engine_problem: None, containers: Vec::new() };
    };
    match engine.sandboxd_containers(&st.config.docker.sandboxd_image, &st.sandboxd_version).await {
        Ok(containers) => Discovery { engine_enabled: true, engine_problem: None, containers },
        Err(e) => Discovery { engine_enabled: true, engine_problem: Some(e.to_string()), containers: Vec::new() },
    }
}

//! The engine's view for `agenticos doctor`: each sandboxd container's tag against the pin, its
//! restarts and its health. An inspection carries the container's whole configuration; only
//! `RestartCount` and `State.Health.Status` are read from it, never `Config.Env`.

use bollard::container::InspectContainerOptions;

use super::containers::{SandboxdContainer, VersionCheck};
use super::engine::{bounded, Engine, EngineError};

/// One sandboxd container as doctor prints it.
#[derive(Debug, Clone)]
pub struct ContainerView {
    pub container: SandboxdContainer,
    /// Times the engine restarted it; none when it could not be inspected.
    pub restarts: Option<i64>,
    /// `healthy`, `unhealthy`, `starting`, or none when the image has no health check.
    pub health: Option<String>,
}

impl ContainerView {
    /// Whether doctor counts it as a problem: a drifted tag, or an unhealthy check.
    pub fn is_problem(&self) -> bool {
        self.container.version == VersionCheck::Mismatch || self.health.as_deref() == Some("unhealthy")
    }

    /// The lines doctor prints for it (a heading, then ✓/✗ lines).
    pub fn render(&self) -> String {
        let c = &self.container;
        let mut out = format!("  {} ({}, {})\n", c.name, c.state, c.image);
        match &c.version_message {
            None => out.push_str(&format!(
                "    ✓ {:<18} {} is the pinned version\n",
                "image tag",
                c.tag.as_deref().unwrap_or("")
            )),
            Some(message) => out.push_str(&format!("    ✗ {:<18} drifted: {message}\n", "image tag")),
        }
        let restarts = self.restarts.map_or("unknown (not inspected)".to_string(), |n| n.to_string());
        out.push_str(&format!("    - {:<18} {restarts}\n", "restarts"));
        let (mark, health) = match self.health.as_deref() {
            None => ("-", "no health check".to_string()),
            Some("unhealthy") => ("✗", "unhealthy".to_string()),
            Some(h) => ("✓", h.to_string()),
        };
        out.push_str(&format!("    {mark} {:<18} {health}\n", "health"));
        out
    }
}

impl Engine {
    /// Every sandboxd container with its restarts and health.
    pub async fn sandboxd_views(&self, image_name: &str, pin: &str) -> Result<Vec<ContainerView>, EngineError> {
        let containers = self.sandboxd_containers(image_name, pin).await?;
        let mut views = Vec::with_capacity(containers.len());
        for container in containers {
            let inspected =
                bounded(self.docker().inspect_container(&container.name, None::<InspectContainerOptions>)).await;
            let (restarts, health) = match inspected {
                Ok(i) => (
                    i.restart_count,
                    i.state
                        .and_then(|s| s.health)
                        .and_then(|h| h.status)
                        .map(|s| s.to_string())
                        .filter(|s| !s.is_empty() && s != "none"),
                ),
                Err(_) => (None, None),
            };
            views.push(ContainerView { container, restarts, health });
        }
        Ok(views)
    }
}

//! Discovery: the sandboxd containers the engine runs, found by image name (any tag), each tag
//! compared with the pin before anything is sent to the container, and the address it publishes
//! on this machine's loopback. Only the container list is read: it carries no environment.

use bollard::container::ListContainersOptions;
use bollard::models::{ContainerSummary, Port, PortTypeEnum};
use serde::Serialize;

use super::engine::{bounded, Engine, EngineError};

/// The port sandboxd listens on in its image (`SANDBOXD_PORT`'s default).
const SANDBOXD_PORT: u16 = 8080;

/// How a container's image tag compares with the pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VersionCheck {
    /// The tag is the pinned version.
    Matches,
    /// Another tag, or none (`latest`): nothing is sent to it.
    Mismatch,
}

/// One container of the sandboxd image.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SandboxdContainer {
    /// The container's name, without the leading slash.
    pub name: String,
    /// The engine's word: `running`, `exited`, `restarting`, `paused`, `created`, `dead`.
    pub state: String,
    /// The engine's status line, e.g. `Up 5 minutes (healthy)`.
    pub status: String,
    /// The image as the container was started from it, e.g. `ghcr.io/vstorm-co/sandboxd:0.2.37`.
    pub image: String,
    /// The image's tag; null when the image was named without one (`latest`).
    pub tag: Option<String>,
    /// The tag against `catalog/sandboxd.version`.
    pub version: VersionCheck,
    /// Why the container is not offered, in the version-mismatch words naming the image it must
    /// run; null when its tag is the pin.
    pub version_message: Option<String>,
    /// `http://127.0.0.1:<port>`: the port the container publishes on this machine's loopback
    /// (or on every address), sandboxd's own port 8080 first; null when it publishes none.
    pub address: Option<String>,
    /// The connection of the caller's organization that already reaches this address (another
    /// spelling of it included): the dialog does not offer it again. Null when none does.
    pub connected_as: Option<String>,
}

impl SandboxdContainer {
    /// Whether the dialog offers its address with one click: the pinned tag, running, published,
    /// and not already connected.
    pub fn is_offered(&self) -> bool {
        self.version == VersionCheck::Matches
            && self.state == "running"
            && self.address.is_some()
            && self.connected_as.is_none()
    }
}

/// The repository and tag of an image reference (`name[:tag][@digest]`); the tag is none when
/// the reference has none.
pub fn split_reference(image: &str) -> (&str, Option<&str>) {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last_segment = without_digest.rfind('/').map_or(0, |i| i + 1);
    match without_digest[last_segment..].rfind(':') {
        Some(i) => {
            let at = last_segment + i;
            (&without_digest[..at], Some(&without_digest[at + 1..]))
        }
        None => (without_digest, None),
    }
}

/// The version-mismatch message for a container running `image` (the words of
/// `SandboxdError::VersionMismatch`, naming the image it runs and the one it must run).
pub fn mismatch_message(image: &str, image_name: &str, pin: &str) -> String {
    format!(
        "The sandbox service runs {image} - its version does not match this platform (expected {pin}). Run {image_name}:{pin} and redeploy it"
    )
}

/// The loopback address a container publishes: sandboxd's port first, then the lowest TCP port.
fn published_address(ports: &[Port]) -> Option<String> {
    let mut candidates: Vec<(bool, u16)> = ports
        .iter()
        .filter(|p| !matches!(p.typ, Some(PortTypeEnum::UDP | PortTypeEnum::SCTP)))
        .filter(|p| matches!(p.ip.as_deref(), Some("127.0.0.1" | "0.0.0.0")))
        .filter_map(|p| p.public_port.map(|public| (p.private_port != SANDBOXD_PORT, public)))
        .collect();
    candidates.sort();
    candidates.first().map(|(_, port)| format!("http://127.0.0.1:{port}"))
}

/// One summary as a sandboxd container, when its image is `image_name` (any tag).
pub fn of_summary(summary: &ContainerSummary, image_name: &str, pin: &str) -> Option<SandboxdContainer> {
    let image = summary.image.as_deref()?;
    let (repository, tag) = split_reference(image);
    let repository = repository.strip_prefix("docker.io/").unwrap_or(repository);
    if !repository.eq_ignore_ascii_case(image_name) {
        return None;
    }
    let matches = tag == Some(pin);
    let name = summary.names.as_ref().and_then(|n| n.first()).map(|n| n.trim_start_matches('/').to_string());
    Some(SandboxdContainer {
        name: name.unwrap_or_else(|| summary.id.as_deref().unwrap_or_default().chars().take(12).collect()),
        state: summary.state.clone().unwrap_or_default(),
        status: summary.status.clone().unwrap_or_default(),
        image: image.to_string(),
        tag: tag.map(str::to_string),
        version: if matches { VersionCheck::Matches } else { VersionCheck::Mismatch },
        version_message: (!matches).then(|| mismatch_message(image, image_name, pin)),
        address: published_address(summary.ports.as_deref().unwrap_or_default()),
        connected_as: None,
    })
}

impl Engine {
    /// Every container (running or not) of `image_name`, any tag, by name.
    pub async fn sandboxd_containers(
        &self,
        image_name: &str,
        pin: &str,
    ) -> Result<Vec<SandboxdContainer>, EngineError> {
        let options = ListContainersOptions::<String> { all: true, ..Default::default() };
        let summaries = bounded(self.docker().list_containers(Some(options))).await?;
        let mut found: Vec<SandboxdContainer> =
            summaries.iter().filter_map(|s| of_summary(s, image_name, pin)).collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_splits_into_repository_and_tag() {
        assert_eq!(
            split_reference("ghcr.io/vstorm-co/sandboxd:0.2.37"),
            ("ghcr.io/vstorm-co/sandboxd", Some("0.2.37"))
        );
        assert_eq!(split_reference("localhost:5000/sandboxd"), ("localhost:5000/sandboxd", None));
        assert_eq!(split_reference("localhost:5000/sandboxd:1@sha256:ab"), ("localhost:5000/sandboxd", Some("1")));
    }

    fn port(ip: &str, private: u16, public: u16) -> Port {
        Port { ip: Some(ip.into()), private_port: private, public_port: Some(public), typ: Some(PortTypeEnum::TCP) }
    }

    #[test]
    fn only_a_loopback_or_all_address_port_is_offered_sandboxd_port_first() {
        assert_eq!(
            published_address(&[port("127.0.0.1", 9000, 4000), port("127.0.0.1", 8080, 5000)]).as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(published_address(&[port("10.0.0.5", 8080, 5000)]), None);
        assert_eq!(published_address(&[]), None);
    }

    #[test]
    fn another_tag_is_a_mismatch_naming_the_image() {
        let summary = ContainerSummary {
            names: Some(vec!["/sbx".into()]),
            image: Some("ghcr.io/vstorm-co/sandboxd:0.2.36".into()),
            state: Some("running".into()),
            ports: Some(vec![port("127.0.0.1", 8080, 5000)]),
            ..Default::default()
        };
        let c = of_summary(&summary, "ghcr.io/vstorm-co/sandboxd", "0.2.37").expect("a sandboxd container");
        assert_eq!((c.name.as_str(), c.version, c.is_offered()), ("sbx", VersionCheck::Mismatch, false));
        let message = c.version_message.expect("a message");
        assert!(
            message.contains("ghcr.io/vstorm-co/sandboxd:0.2.36") && message.contains("expected 0.2.37"),
            "{message}"
        );
        assert!(of_summary(&summary, "ghcr.io/vstorm-co/other", "0.2.37").is_none());
    }
}

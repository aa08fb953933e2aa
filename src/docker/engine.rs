//! The client of the configured engine: built from the configuration, each call bounded by
//! [`CALL_TIMEOUT`], its failures in words for a person.

use std::time::Duration;

use bollard::{ClientVersion, Docker};

/// Docker API 1.41 (Engine 20.10) is the oldest this speaks; newer engines answer it too.
const API_VERSION: &ClientVersion = &ClientVersion { major_version: 1, minor_version: 41 };

/// How long one call to the engine may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the engine could not be read, in words for a person (never the socket path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("The Docker engine did not answer")]
    Unreachable,
    #[error("The Docker engine did not answer in time")]
    Timeout,
    #[error("The Docker engine refused the request: {0}")]
    Refused(String),
}

impl From<bollard::errors::Error> for EngineError {
    fn from(e: bollard::errors::Error) -> Self {
        use bollard::errors::Error as E;
        match e {
            E::DockerResponseServerError { status_code, message } => {
                EngineError::Refused(format!("{status_code} {}", message.chars().take(200).collect::<String>()))
            }
            E::RequestTimeoutError => EngineError::Timeout,
            other => {
                tracing::debug!(event = "docker_engine_error", error = %other);
                EngineError::Unreachable
            }
        }
    }
}

/// A client of the configured engine. Building it asks nothing (a socket path must exist); each
/// call is bounded.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Engine")
    }
}

impl Engine {
    /// The engine at `host` (`unix:///path`, `tcp://host:port` or `http://host:port`, as
    /// `config.rs` checked it).
    pub fn connect(host: &str) -> anyhow::Result<Engine> {
        let secs = CALL_TIMEOUT.as_secs();
        let docker = match host.strip_prefix("unix://") {
            Some(path) => Docker::connect_with_socket(path, secs, API_VERSION)?,
            None => Docker::connect_with_http(host, secs, API_VERSION)?,
        };
        Ok(Engine { docker })
    }

    /// The engine `config` names, or none when it names none.
    pub fn from_config(config: &crate::config::DockerConfig) -> anyhow::Result<Option<Engine>> {
        config.host.as_deref().map(Engine::connect).transpose()
    }

    pub(crate) fn docker(&self) -> &Docker {
        &self.docker
    }
}

/// Runs `call` within [`CALL_TIMEOUT`].
pub(crate) async fn bounded<T>(
    call: impl std::future::Future<Output = Result<T, bollard::errors::Error>>,
) -> Result<T, EngineError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(answer) => answer.map_err(EngineError::from),
        Err(_) => Err(EngineError::Timeout),
    }
}

//! Calls of the main API beyond sandboxes and snapshots, for the operator's side: the deployment's
//! configuration (`GET /config`), which names the default snapshot new sandboxes start from, and
//! the proofs that a key may create and delete sandboxes (without creating any).

use reqwest::Method;
use serde::Deserialize;

use super::error::{DaytonaError, Side};
use super::http::{Body, DaytonaClient};
use super::wire::CreateSandbox;

/// `DaytonaConfiguration`: only what we read.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DaytonaConfig {
    /// The snapshot a sandbox created without one starts from.
    pub default_snapshot: String,
}

impl DaytonaClient {
    /// `GET /config`: the deployment's configuration (its default snapshot).
    pub async fn config(&self) -> Result<DaytonaConfig, DaytonaError> {
        let url = self.api_url_of(&["config"]);
        self.json(Side::Api, Method::GET, url, Body::None, self.timeouts.read).await
    }

    /// Whether the key may create sandboxes (`write:sandboxes`), proven without creating one: a
    /// create from a snapshot that cannot exist passes Daytona's permission guard (else 403
    /// `Forbidden resource`) and is then refused for the snapshot (400/404). Another 403
    /// (suspended, no quota) is the error, in Daytona's words.
    pub async fn may_create(&self) -> Result<bool, DaytonaError> {
        let probe = format!("agenticos-permission-probe-{}", uuid::Uuid::new_v4().simple());
        let create = CreateSandbox {
            name: Some(probe.clone()),
            snapshot: Some(format!("{probe}-no-such-snapshot")),
            ..Default::default()
        };
        match self.create_sandbox(&create).await {
            // It should not exist; if Daytona made one all the same, it goes at once.
            Ok(sandbox) => {
                let _ = self.delete_sandbox(&sandbox.id).await;
                Ok(true)
            }
            Err(DaytonaError::Invalid { .. } | DaytonaError::NotFound { .. }) => Ok(true),
            Err(DaytonaError::Forbidden { message }) if message == "Forbidden resource" => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether the key may delete sandboxes (`delete:sandboxes`), proven by deleting one that does
    /// not exist: 404 past the permission guard, 403 `Forbidden resource` before it.
    pub async fn may_delete(&self) -> Result<bool, DaytonaError> {
        let probe = format!("agenticos-permission-probe-{}", uuid::Uuid::new_v4().simple());
        match self.delete_sandbox(&probe).await {
            Ok(()) | Err(DaytonaError::NotFound { .. }) => Ok(true),
            Err(DaytonaError::Forbidden { message }) if message == "Forbidden resource" => Ok(false),
            Err(e) => Err(e),
        }
    }
}

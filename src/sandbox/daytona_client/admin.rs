//! Calls of the main API beyond sandboxes and snapshots, for the operator's side: the deployment's
//! configuration (`GET /config`), which names the default snapshot new sandboxes start from.

use reqwest::Method;
use serde::Deserialize;

use super::error::{DaytonaError, Side};
use super::http::{Body, DaytonaClient};

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
}

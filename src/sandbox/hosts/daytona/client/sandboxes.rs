//! The main API's sandbox and snapshot calls (`api.json`).

use std::collections::BTreeMap;

use reqwest::Method;
use url::Url;

use super::error::{DaytonaError, Side};
use super::http::{check_address, join, json_body, Body, DaytonaClient};
use super::toolbox::Toolbox;
use super::wire::{CreateSandbox, Sandbox, SandboxPage, Snapshot};

/// The most sandboxes one list page asks for (the API's own maximum is 200).
pub const LIST_PAGE: u32 = 100;

impl DaytonaClient {
    // -- sandboxes ------------------------------------------------------------

    /// `GET /sandbox/{idOrName}`: by id first, then by name. A destroyed sandbox is a 404.
    pub async fn get_sandbox(&self, id_or_name: &str) -> Result<Sandbox, DaytonaError> {
        let url = self.api_url_of(&["sandbox", id_or_name]);
        self.json(Side::Api, Method::GET, url, Body::None, self.timeouts.read).await
    }

    /// `POST /sandbox`: 409 when the name is taken; 400 `Sandbox failed to start: …` when a
    /// snapshot's sandbox could not start (it exists by then).
    pub async fn create_sandbox(&self, create: &CreateSandbox) -> Result<Sandbox, DaytonaError> {
        let url = self.api_url_of(&["sandbox"]);
        self.json(Side::Api, Method::POST, url, json_body(create)?, self.timeouts.create).await
    }

    /// `POST /sandbox/{idOrName}/start`: also un-archives; a started one is a no-op. Daytona
    /// holds the answer up to 30 s until the sandbox started (an archived one answers at once,
    /// `restoring`), so it gets the create's deadline.
    pub async fn start_sandbox(&self, id_or_name: &str) -> Result<Sandbox, DaytonaError> {
        let url = self.api_url_of(&["sandbox", id_or_name, "start"]);
        self.json(Side::Api, Method::POST, url, Body::None, self.timeouts.create).await
    }

    /// `POST /sandbox/{idOrName}/recover`: a sandbox in `error` with `recoverable: true` starts
    /// again (held up to 30 s like a start); 400 otherwise.
    pub async fn recover_sandbox(&self, id_or_name: &str) -> Result<Sandbox, DaytonaError> {
        let url = self.api_url_of(&["sandbox", id_or_name, "recover"]);
        self.json(Side::Api, Method::POST, url, Body::None, self.timeouts.create).await
    }

    /// `POST /sandbox/{id}/last-activity`: the sandbox counts as active now (its auto-stop
    /// interval starts again).
    pub async fn touch_sandbox(&self, id: &str) -> Result<(), DaytonaError> {
        let url = self.api_url_of(&["sandbox", id, "last-activity"]);
        self.send(Side::Api, Method::POST, url, Body::None, self.timeouts.read).await.map(drop)
    }

    /// `POST /sandbox/{idOrName}/stop`.
    pub async fn stop_sandbox(&self, id_or_name: &str) -> Result<Sandbox, DaytonaError> {
        let url = self.api_url_of(&["sandbox", id_or_name, "stop"]);
        self.json(Side::Api, Method::POST, url, Body::None, self.timeouts.read).await
    }

    /// `DELETE /sandbox/{idOrName}`: 200 means accepted (the sandbox is `destroying`; its name
    /// is free at once). A 404 means it is gone already; a 409 means a state change is pending.
    pub async fn delete_sandbox(&self, id_or_name: &str) -> Result<(), DaytonaError> {
        let url = self.api_url_of(&["sandbox", id_or_name]);
        self.send(Side::Api, Method::DELETE, url, Body::None, self.timeouts.read).await.map(drop)
    }

    /// `GET /sandbox?labels=…&limit=…&cursor=…`: one page of the sandboxes whose labels contain
    /// all of `labels` (eventually consistent; destroyed ones are never listed).
    pub async fn list_sandboxes(
        &self,
        labels: &BTreeMap<String, String>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<SandboxPage, DaytonaError> {
        let mut url = self.api_url_of(&["sandbox"]);
        {
            let mut q = url.query_pairs_mut();
            if !labels.is_empty() {
                let labels = serde_json::to_string(labels).map_err(|e| DaytonaError::Refused(e.to_string()))?;
                q.append_pair("labels", &labels);
            }
            q.append_pair("limit", &limit.clamp(1, 200).to_string());
            if let Some(cursor) = cursor {
                q.append_pair("cursor", cursor);
            }
        }
        self.json(Side::Api, Method::GET, url, Body::None, self.timeouts.read).await
    }

    /// Every sandbox whose labels contain `labels`, following the cursor to its end (at most
    /// `max` sandboxes).
    pub async fn list_all_sandboxes(
        &self,
        labels: &BTreeMap<String, String>,
        max: usize,
    ) -> Result<Vec<Sandbox>, DaytonaError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.list_sandboxes(labels, LIST_PAGE, cursor.as_deref()).await?;
            all.extend(page.items);
            match page.next_cursor {
                Some(next) if all.len() < max && Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => break,
            }
        }
        all.truncate(max);
        Ok(all)
    }

    /// `GET /snapshots/{idOrName}` (the probe: does the chosen snapshot exist).
    pub async fn get_snapshot(&self, id_or_name: &str) -> Result<Snapshot, DaytonaError> {
        let url = self.api_url_of(&["snapshots", id_or_name]);
        self.json(Side::Api, Method::GET, url, Body::None, self.timeouts.read).await
    }

    /// The toolbox of `sandbox`, at its `toolboxProxyUrl` as the API returned it (asked of
    /// `GET /sandbox/{id}/toolbox-proxy-url` when the sandbox carries none).
    pub async fn toolbox(&self, sandbox: &Sandbox) -> Result<Toolbox, DaytonaError> {
        let proxy = match &sandbox.toolbox_proxy_url {
            Some(url) if !url.is_empty() => url.clone(),
            _ => {
                #[derive(serde::Deserialize)]
                struct ProxyUrl {
                    url: String,
                }
                let url = self.api_url_of(&["sandbox", &sandbox.id, "toolbox-proxy-url"]);
                let answer: ProxyUrl = self.json(Side::Api, Method::GET, url, Body::None, self.timeouts.read).await?;
                answer.url
            }
        };
        self.toolbox_at(&proxy, &sandbox.id)
    }

    /// The toolbox of sandbox `id` under `proxy`, refused unless the key may go there.
    pub fn toolbox_at(&self, proxy: &str, id: &str) -> Result<Toolbox, DaytonaError> {
        let refused = |reason: &str| DaytonaError::ToolboxRefused { reason: reason.to_owned() };
        let mut url = Url::parse(proxy).map_err(|_| refused("not an address"))?;
        check_address(&url).map_err(|r| refused(&r))?;
        if url.scheme() != self.api_url().scheme() {
            return Err(refused(&format!("{}:// where the API is {}://", url.scheme(), self.api_url().scheme())));
        }
        url.set_query(None);
        url.set_fragment(None);
        let trimmed = url.path().trim_end_matches('/').to_owned();
        url.set_path(&trimmed);
        Ok(Toolbox::new(self.clone(), join(&url, &[id])))
    }
}

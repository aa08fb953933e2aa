//! How a call reaches Daytona and its answer comes back: the key in `Authorization` (marked
//! sensitive), no redirect followed, any non-2xx an error ([`DaytonaError`]). A 429 is tried
//! again after Daytona's `Retry-After-*`, a 502/503/504 after a short backoff, at most
//! [`ATTEMPTS`] times in all, each retry in the log ([`DaytonaClient::send_with`] once for a call
//! that must not run twice).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::Method;
use secrecy::{ExposeSecret as _, SecretString};
use serde::de::DeserializeOwned;
use url::Url;

use super::error::{DaytonaError, Side};

/// How many times a call is sent at most (the first and two retries).
pub const ATTEMPTS: u32 = 3;

/// The wait before the first retry of a 502/503/504 (doubled for the next).
const BACKOFF: Duration = Duration::from_millis(250);

/// Daytona Cloud's API, the default API URL of a connection.
pub const DEFAULT_API_URL: &str = "https://app.daytona.io/api";

/// Deadlines of the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Gets, lists, deletes, snapshot gets: 15 s.
    pub read: Duration,
    /// A create, start or recover (Daytona holds each up to 30 s until the sandbox started): 60 s.
    pub create: Duration,
    /// A toolbox file call: 60 s.
    pub operation: Duration,
    /// Added to a command's own timeout: 10 s.
    pub exec_margin: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            read: Duration::from_secs(15),
            create: Duration::from_secs(60),
            operation: Duration::from_secs(60),
            exec_margin: Duration::from_secs(10),
        }
    }
}

/// A client of one Daytona API with one key. Cheap to clone.
#[derive(Clone)]
pub struct DaytonaClient {
    http: reqwest::Client,
    api: Arc<Url>,
    key: SecretString,
    pub(super) timeouts: Timeouts,
}

impl fmt::Debug for DaytonaClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DaytonaClient")
            .field("api", &self.api.as_str())
            .field("key", &"[REDACTED]")
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// The body of a request.
pub(crate) enum Body {
    None,
    Json(Vec<u8>),
    /// `multipart/form-data` with this boundary.
    Multipart {
        boundary: String,
        bytes: Vec<u8>,
    },
}

impl Body {
    /// Its content type and bytes (cheap to send again).
    fn into_parts(self) -> Option<(String, Bytes)> {
        match self {
            Body::None => None,
            Body::Json(bytes) => Some(("application/json".into(), Bytes::from(bytes))),
            Body::Multipart { boundary, bytes } => {
                Some((format!("multipart/form-data; boundary={boundary}"), Bytes::from(bytes)))
            }
        }
    }
}

/// Whether `url` can carry the key: http(s), a host, no user info.
pub(super) fn check_address(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err("not an http:// or https:// address".into());
    }
    if url.host().is_none() {
        return Err("no host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("an address with user info".into());
    }
    Ok(())
}

impl DaytonaClient {
    /// A client of the API at `api` (e.g. `https://app.daytona.io/api`) sending `key`.
    /// `http` must not follow redirects; see [`Self::default_http`].
    pub fn new(http: reqwest::Client, api: Url, key: SecretString) -> Result<Self, DaytonaError> {
        check_address(&api).map_err(|reason| DaytonaError::Refused(format!("The API URL is refused: {reason}.")))?;
        let mut api = api;
        api.set_query(None);
        api.set_fragment(None);
        // `…/api/` and `…/api` name the same API.
        if api.path().ends_with('/') && api.path() != "/" {
            let path = api.path().trim_end_matches('/').to_owned();
            api.set_path(&path);
        }
        Ok(Self { http, api: Arc::new(api), key, timeouts: Timeouts::default() })
    }

    /// The HTTP client this module expects: no redirects (reqwest would carry the key to
    /// wherever one points), a 5 s connect timeout.
    pub fn default_http() -> reqwest::Result<reqwest::Client> {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent(concat!("agenticos/", env!("CARGO_PKG_VERSION")))
            .build()
    }

    /// Use other deadlines.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The API URL. For logs and operators, not for users.
    pub fn api_url(&self) -> &Url {
        &self.api
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// `{api}/{segments…}`, each segment percent-encoded (a `/` in a snapshot name too).
    pub(super) fn api_url_of(&self, segments: &[&str]) -> Url {
        join(&self.api, segments)
    }

    // -- transport --------------------------------------------------------------

    /// A request: the key in `Authorization`, no redirect followed, any non-2xx an error; a 429
    /// or a 502/503/504 sent again (see the module), so only for calls Daytona may see twice.
    pub(crate) async fn send(
        &self,
        side: Side,
        method: Method,
        url: Url,
        body: Body,
        timeout: Duration,
    ) -> Result<reqwest::Response, DaytonaError> {
        self.send_with(side, method, url, body, timeout, ATTEMPTS).await
    }

    /// As [`Self::send`], sent at most `attempts` times (1 for a command, which must not run
    /// twice).
    pub(crate) async fn send_with(
        &self,
        side: Side,
        method: Method,
        url: Url,
        body: Body,
        timeout: Duration,
        attempts: u32,
    ) -> Result<reqwest::Response, DaytonaError> {
        let body = body.into_parts();
        let mut backoff = BACKOFF;
        for attempt in 1.. {
            let error = match self.send_one(side, method.clone(), url.clone(), body.clone(), timeout).await {
                Err(e) if attempt < attempts => e,
                other => return other,
            };
            let Some(wait) = error.retry_after(backoff) else { return Err(error) };
            tracing::info!(target: "daytona", attempt, status = error.status(), wait_ms = wait.as_millis() as u64,
                error = %error, "Daytona answered with a failure worth a retry: trying again");
            tokio::time::sleep(wait).await;
            backoff *= 2;
        }
        unreachable!("the loop returns")
    }

    /// One request, sent once.
    async fn send_one(
        &self,
        side: Side,
        method: Method,
        url: Url,
        body: Option<(String, Bytes)>,
        timeout: Duration,
    ) -> Result<reqwest::Response, DaytonaError> {
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", self.key.expose_secret()))
            .map_err(|_| DaytonaError::Refused("The API key holds characters a header cannot carry.".into()))?;
        auth.set_sensitive(true);
        let mut request = self.http.request(method, url).header(AUTHORIZATION, auth).timeout(timeout);
        if let Some((content_type, bytes)) = body {
            request = request.header(CONTENT_TYPE, content_type).body(bytes);
        }
        let response = request.send().await.map_err(DaytonaError::from_transport)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = if status.is_redirection() { Bytes::new() } else { response.bytes().await.unwrap_or_default() };
        let error = DaytonaError::from_answer(side, status, &headers, &body);
        tracing::debug!(target: "daytona", status = status.as_u16(), error = %error, "Daytona refused a call");
        Err(error)
    }

    /// A request whose 2xx answer is JSON of type `T`.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        side: Side,
        method: Method,
        url: Url,
        body: Body,
        timeout: Duration,
    ) -> Result<T, DaytonaError> {
        let response = self.send(side, method, url, body, timeout).await?;
        let bytes = response.bytes().await.map_err(DaytonaError::from_transport)?;
        parse_json(&bytes).map_err(|e| {
            tracing::debug!(target: "daytona", error = %e, "an answer that is not Daytona's");
            DaytonaError::NotDaytona
        })
    }
}

/// JSON of type `T`. Bytes that are not UTF-8 (a file name as a file system holds it, where
/// Daytona's daemon would have sent U+FFFD) are read as U+FFFD rather than losing the answer.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_str(&String::from_utf8_lossy(bytes)),
    }
}

/// A JSON request body.
pub(crate) fn json_body(value: &impl serde::Serialize) -> Result<Body, DaytonaError> {
    serde_json::to_vec(value).map(Body::Json).map_err(|e| DaytonaError::Refused(format!("could not encode: {e}")))
}

/// `base` with `segments` appended, each percent-encoded as one segment.
pub(super) fn join(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty();
        path.extend(segments);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(api: &str) -> DaytonaClient {
        DaytonaClient::new(reqwest::Client::new(), Url::parse(api).unwrap(), SecretString::from("k")).unwrap()
    }

    #[test]
    fn api_urls_are_joined_with_each_segment_encoded() {
        let c = client("https://app.daytona.io/api/");
        assert_eq!(c.api_url().as_str(), "https://app.daytona.io/api");
        assert_eq!(
            c.api_url_of(&["snapshots", "daytonaio/sandbox:fake"]).as_str(),
            "https://app.daytona.io/api/snapshots/daytonaio%2Fsandbox:fake"
        );
        assert_eq!(c.api_url_of(&["sandbox", "x-1", "start"]).as_str(), "https://app.daytona.io/api/sandbox/x-1/start");
    }

    #[test]
    fn api_urls_with_user_info_or_other_schemes_are_refused() {
        let new = |s: &str| DaytonaClient::new(reqwest::Client::new(), Url::parse(s).unwrap(), SecretString::from("k"));
        assert!(new("ftp://x/api").is_err());
        assert!(new("https://u:p@x/api").is_err());
        assert!(new("http://127.0.0.1:9/api").is_ok());
    }

    #[test]
    fn a_toolbox_on_another_scheme_or_with_user_info_is_refused() {
        let c = client("https://app.daytona.io/api");
        let tb = c.toolbox_at("https://proxy.app.daytona.io/toolbox/", "abc").unwrap();
        assert_eq!(tb.base().as_str(), "https://proxy.app.daytona.io/toolbox/abc");
        for bad in ["http://proxy.app.daytona.io/toolbox", "https://u:p@proxy/toolbox", "file:///tmp", "not a url"] {
            assert!(matches!(c.toolbox_at(bad, "abc"), Err(DaytonaError::ToolboxRefused { .. })), "{bad}");
        }
        let plain = client("http://127.0.0.1:9/api");
        assert!(plain.toolbox_at("https://127.0.0.1:9/toolbox", "abc").is_err());
        assert!(plain.toolbox_at("http://127.0.0.1:9/toolbox", "abc").is_ok());
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let c = DaytonaClient::new(
            reqwest::Client::new(),
            Url::parse("https://x/api").unwrap(),
            SecretString::from("sk-very-secret"),
        )
        .unwrap();
        assert!(!format!("{c:?}").contains("sk-very-secret"));
    }
}

//! Daytona connections (docs/daytona.md): an API URL (Daytona's cloud by default) and a vault key
//! of purpose `daytona` bound to that URL, as a sandboxd key is bound to its address. Asking
//! Daytona checks that the key is accepted (`GET /sandbox?limit=1`), that the snapshot new
//! sandboxes start from exists (the chosen one, else the default `GET /config` names) and that the
//! key may create and delete sandboxes (`write:sandboxes`, `delete:sandboxes`, proven without
//! creating one), and says which in plain words: refused key, unknown snapshot, missing
//! permissions, unreachable, not Daytona. Every request
//! goes through the Daytona client (`sandbox::hosts::daytona::client`): the key goes only to the API URL,
//! never with a redirect followed.

use std::collections::BTreeMap;

use secrecy::SecretString;
use url::Url;

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::keys;
use crate::sandbox::connections::model::{Connection, Health, Probe, ProbeStatus, RuntimeMark};
use crate::sandbox::connections::words::{FormWords, Part};
use crate::sandbox::hosts::daytona::client::{DaytonaClient, DaytonaError};
use crate::state::AppState;

type Result<T> = std::result::Result<T, ConnectionError>;

/// What the connection form says for Daytona.
pub const FORM_WORDS: FormWords = FormWords {
    kind_hint: &[
        Part::Text("Daytona runs a sandbox per workspace in a Daytona organization: its API key (purpose "),
        Part::Mono("daytona"),
        Part::Text(") is sent only to its API URL."),
    ],
    address_label: "API URL",
    address_placeholder: "https://app.daytona.io/api",
    address_rule: "Your Daytona API's URL, http(s), no credentials in it. Empty: Daytona's cloud, https://app.daytona.io/api.",
    offers_discovered: false,
    credential_legend: "API key",
    credential_warning: &[Part::Text("A key of your Daytona organization, with permission to manage sandboxes (Dashboard → Keys). It is kept encrypted in the vault, sent only to this API URL as a bearer token, and never shown again.")],
    credential_warning_class: "hint",
    paste_option: "Paste a new API key",
    new_key_label: "New API key",
    new_key_hint: &[Part::Text("Stored in the vault when you save, for this API URL only.")],
    runtime_label: "Snapshot",
    typed_runtime_hint: Some("The snapshot new sandboxes start from, e.g. daytonaio/sandbox:0.4.3. Empty: your Daytona organization's default snapshot; image:<reference> for a Docker image."),
    probe_label: "Test this account",
};

/// The longest snapshot name a connection keeps.
const SNAPSHOT_NAME_MAX: usize = 200;

/// A runtime written `image:<reference>` is an image Daytona builds a sandbox from (a Dockerfile
/// `FROM <reference>`); anything else names a snapshot.
pub const IMAGE_PREFIX: &str = "image:";

/// Whether `s` may name a Daytona snapshot (`daytonaio/sandbox:0.4.3`, `my-python`): 1 to 200
/// letters, digits and `. _ - : / @`; or, after `image:`, an image reference
/// ([`is_image_reference`]).
pub fn is_snapshot_name(s: &str) -> bool {
    if let Some(image) = s.strip_prefix(IMAGE_PREFIX) {
        return s.len() <= SNAPSHOT_NAME_MAX && is_image_reference(image);
    }
    !s.is_empty()
        && s.len() <= SNAPSHOT_NAME_MAX
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/' | '@'))
}

/// Whether `r` reads as a Docker image reference, `[registry[:port]/]path[:tag][@algo:hex]`: path
/// components of lower-case letters and digits joined by `.`, `_`, `__` or dashes; a tag of up
/// to 128 letters, digits, `_ . -` not starting with `.` or `-` (the grammar of
/// distribution/reference, which Daytona's build hands the reference to).
pub fn is_image_reference(r: &str) -> bool {
    let (name, digest) = match r.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (r, None),
    };
    if let Some(d) = digest {
        let Some((algo, hex)) = d.split_once(':') else { return false };
        let algo_ok = !algo.is_empty() && algo.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !algo_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
    }
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && !t.starts_with(['.', '-'])
            && t.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            return false;
        }
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    if parts.len() > 1 && (parts[0].contains(['.', ':']) || parts[0] == "localhost") {
        let host = parts.remove(0);
        let (host, port) = host.split_once(':').unwrap_or((host, "1"));
        let host_ok = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
        if !host_ok || port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
    }
    !parts.is_empty() && parts.iter().all(|p| is_path_component(p))
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(p: &str) -> bool {
    let b = p.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    if !p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')) {
        return false;
    }
    // Separators: `.` and `_` alone, `__`, or dashes; never `._`, `_.`, `___` or `..`.
    let mut run = String::new();
    for c in p.chars() {
        if c.is_ascii_alphanumeric() {
            if !(run.is_empty() || run == "." || run == "_" || run == "__" || run.chars().all(|c| c == '-')) {
                return false;
            }
            run.clear();
        } else {
            run.push(c);
        }
    }
    true
}

/// A client of the Daytona API at `url` with `token` (no redirect is followed: `st.http`).
fn client(st: &AppState, url: &Url, token: SecretString) -> Result<DaytonaClient> {
    DaytonaClient::new(st.http.clone(), url.clone(), token).map_err(|e| ConnectionError::AddressRefused(e.in_words()))
}

/// A client for a saved Daytona connection, with its key from the vault: only a key of purpose
/// `daytona` bound to the connection's API URL (else no request is sent).
/// Kept per connection and key version for [`CLIENT_TTL`](crate::sandbox::connections::cache::CLIENT_TTL), like sandboxd
/// clients (`AppState::daytona_clients`).
pub async fn client_for(st: &AppState, org_id: &str, conn: &Connection) -> Result<DaytonaClient> {
    let address = conn.address.as_deref().ok_or(ConnectionError::NoAddress)?;
    let url = crate::sandbox::connections::address::parse(address)
        .map_err(crate::sandbox::connections::address::invalid_address)?;
    let cache_key = format!("{org_id}/{}", conn.id);
    let version = conn.version();
    if let Some(client) = st.daytona_clients.get(&cache_key, &version) {
        return Ok(client);
    }
    let token = keys::for_connection(st, org_id, conn).await?;
    crate::sandbox::connections::address::check_resolved(&url).await.map_err(ConnectionError::AddressRefused)?;
    let client = client(st, &url, token)?;
    st.daytona_clients.put(cache_key, version, client.clone());
    Ok(client)
}

pub use crate::sandbox::hosts::daytona::client::labels::{
    CONNECTION as CONNECTION_LABEL, DEPLOYMENT as DEPLOYMENT_LABEL, ORGANIZATION as ORGANIZATION_LABEL,
};

/// The labels that say a sandbox is this deployment's and `org_id`'s.
pub fn owner_labels(st: &AppState, org_id: &str) -> BTreeMap<String, String> {
    crate::sandbox::hosts::daytona::client::labels::owner(st.config.http.public_url.as_str(), org_id)
}

/// What asking Daytona found, step by step (the probe, the health word and the doctor read it).
#[derive(Debug)]
pub struct Findings {
    /// Whether the key was accepted (`GET /sandbox?limit=1`).
    pub key: std::result::Result<(), DaytonaError>,
    /// The snapshot (or `image:`) new sandboxes start from, whether it was chosen, and whether
    /// it exists; none when the key was not accepted.
    pub snapshot: Option<Snapshot>,
    /// The permissions the key lacks of those the backend needs (`write:sandboxes`,
    /// `delete:sandboxes`), proven without creating a sandbox; asked only once the snapshot was
    /// found.
    pub missing: std::result::Result<Vec<&'static str>, DaytonaError>,
}

#[derive(Debug)]
pub struct Snapshot {
    /// Its name; empty when the default could not be read.
    pub name: String,
    /// Chosen on the connection (else Daytona's default).
    pub chosen: bool,
    pub found: std::result::Result<(), DaytonaError>,
}

impl Findings {
    /// Whether an HTTP answer came back from something that is Daytona.
    pub fn reached(&self) -> std::result::Result<(), String> {
        match &self.key {
            Err(e) if !matches!(e, DaytonaError::KeyRefused) => Err(words(e)),
            _ => Ok(()),
        }
    }
}

/// Asks Daytona with `client`: the key, then the snapshot `snapshot` (none: the default).
pub async fn find(client: &DaytonaClient, snapshot: Option<&str>) -> Findings {
    if let Err(e) = client.list_sandboxes(&BTreeMap::new(), 1, None).await {
        return Findings { key: Err(e), snapshot: None, missing: Ok(Vec::new()) };
    }
    let (name, chosen) = match snapshot {
        Some(s) => (s.to_string(), true),
        None => match client.config().await {
            Ok(config) => (config.default_snapshot, false),
            Err(e) => {
                let snapshot = Snapshot { name: String::new(), chosen: false, found: Err(e) };
                return Findings { key: Ok(()), snapshot: Some(snapshot), missing: Ok(Vec::new()) };
            }
        },
    };
    // An image cannot be looked up: Daytona's API has no route that checks one short of building
    // it (`POST /snapshots` pulls and builds; a sandbox create with `buildInfo` builds). Its
    // reference was checked when the connection was saved; a build that fails shows on the
    // workspace, in Daytona's words (`build_failed` and its reason).
    let found = if name.starts_with(IMAGE_PREFIX) { Ok(()) } else { client.get_snapshot(&name).await.map(drop) };
    let missing = if found.is_ok() { missing_permissions(client).await } else { Ok(Vec::new()) };
    Findings { key: Ok(()), snapshot: Some(Snapshot { name, chosen, found }), missing }
}

/// The permissions of `write:sandboxes` and `delete:sandboxes` the key lacks.
async fn missing_permissions(client: &DaytonaClient) -> std::result::Result<Vec<&'static str>, DaytonaError> {
    let mut missing = Vec::new();
    if !client.may_create().await? {
        missing.push("write:sandboxes");
    }
    if !client.may_delete().await? {
        missing.push("delete:sandboxes");
    }
    Ok(missing)
}

/// A failure of Daytona in plain words: refused key, unreachable, not Daytona, or Daytona's own.
pub fn words(e: &DaytonaError) -> String {
    match e {
        DaytonaError::KeyRefused => {
            "Key refused: Daytona did not accept this API key (wrong, revoked, or of another organization).".into()
        }
        DaytonaError::Unreachable { .. } | DaytonaError::Timeout => {
            "Unreachable: nothing answered at this API URL in time.".into()
        }
        DaytonaError::NotDaytona | DaytonaError::NotFound { .. } => {
            "Not Daytona: something answered at this address, but not like Daytona's API. Check the API URL (it \
             usually ends in /api)."
                .into()
        }
        DaytonaError::Redirected { status } => format!(
            "Not Daytona: the address answered with a redirect ({status}). Redirects are never followed, so the key \
             is not sent elsewhere: enter the API URL itself."
        ),
        other => other.in_words(),
    }
}

/// The health word of a failure.
fn health_of(e: &DaytonaError) -> Health {
    match e {
        DaytonaError::KeyRefused => Health::KeyRefused,
        DaytonaError::Unreachable { .. } | DaytonaError::Timeout => Health::NoAnswer,
        DaytonaError::NotDaytona | DaytonaError::NotFound { .. } | DaytonaError::Redirected { .. } => {
            Health::NotASandboxService
        }
        _ => Health::HostError,
    }
}

impl Findings {
    /// The findings as the dialog, the API and the Connections table show them.
    pub fn probe(&self, st: &AppState) -> Probe {
        let failed = |health, message| Probe::unanswered(st, ProbeStatus::Failed, health, message);
        if let Err(e) = &self.key {
            return failed(health_of(e), words(e));
        }
        let Some(s) = &self.snapshot else {
            return failed(Health::HostError, "Daytona was not asked for a snapshot.".into());
        };
        match (&s.found, &self.missing) {
            (Ok(()), Err(e)) => failed(health_of(e), words(e)),
            (Ok(()), Ok(missing)) if !missing.is_empty() => failed(
                Health::KeyRefused,
                format!(
                    "Missing permissions: Daytona accepted the key, but it lacks {}. Creating, starting and \
                     stopping sandboxes needs write:sandboxes; deleting them needs delete:sandboxes. Give the key \
                     these permissions in Daytona's dashboard (API Keys).",
                    missing.join(" and ")
                ),
            ),
            (Ok(()), Ok(_)) if s.name.starts_with(IMAGE_PREFIX) => {
                let image = &s.name[IMAGE_PREFIX.len()..];
                let mark = RuntimeMark {
                    alias: s.name.clone(),
                    description: "An image Daytona builds each new sandbox from.".into(),
                    image: image.to_string(),
                    builds: true,
                    in_catalog: false,
                    offered: Some(true),
                };
                Probe {
                    status: ProbeStatus::Ok,
                    health: Health::Healthy,
                    message: format!(
                        "Daytona accepted the key. New sandboxes are built from the image “{image}” as they are \
                         first opened (it is not checked now: Daytona cannot check an image without building it, \
                         so a wrong name shows as that workspace's failed build, in Daytona's words)."
                    ),
                    runtimes: vec![mark],
                    host_default_runtime: None,
                }
            }
            (Ok(()), Ok(_)) => {
                let mark = RuntimeMark {
                    alias: s.name.clone(),
                    description: "A Daytona snapshot of this organization.".into(),
                    image: s.name.clone(),
                    builds: false,
                    in_catalog: false,
                    offered: Some(true),
                };
                let message = if s.chosen {
                    format!("Daytona accepted the key, and the snapshot “{}” exists.", s.name)
                } else {
                    format!(
                        "Daytona accepted the key. New sandboxes start from its default snapshot “{}”, which exists.",
                        s.name
                    )
                };
                Probe {
                    status: ProbeStatus::Ok,
                    health: Health::Healthy,
                    message,
                    runtimes: vec![mark],
                    host_default_runtime: (!s.chosen).then(|| s.name.clone()),
                }
            }
            (Err(DaytonaError::NotFound { .. }), _) if s.chosen => failed(
                Health::NoRuntime,
                format!(
                    "Unknown snapshot: Daytona accepted the key, but this organization has no snapshot “{}”. Pick \
                     one of its snapshots, or leave it empty for the default.",
                    s.name
                ),
            ),
            (Err(DaytonaError::NotFound { .. }), _) => failed(
                Health::NoRuntime,
                format!(
                    "Unknown snapshot: Daytona accepted the key, but its default snapshot “{}” does not exist. Name \
                     a snapshot this organization has.",
                    s.name
                ),
            ),
            (Err(e), _) => failed(health_of(e), words(e)),
        }
    }
}

/// Asks Daytona's API at `url` (shown as `address`) with `token`, the key the service chose for
/// exactly this URL; `snapshot` is the connection's chosen snapshot (none: the default).
pub async fn ask(
    st: &AppState,
    url: &Url,
    address: &str,
    token: SecretString,
    snapshot: Option<&str>,
) -> Result<Probe> {
    crate::sandbox::connections::address::check_resolved(url)
        .await
        .map_err(crate::sandbox::connections::address::invalid_address)?;
    let client = client(st, url, token)?;
    let findings = find(&client, snapshot).await;
    if let Err(e) = &findings.key {
        tracing::info!(event = "daytona_probe_failed", address = %address, problem = %e, "Daytona was asked and did not accept");
    }
    Ok(findings.probe(st))
}

/// Asks the Daytona API of a saved connection with its stored key (only a key of purpose
/// `daytona` bound to the connection's API URL; else no request is sent).
pub async fn ask_saved(st: &AppState, org_id: &str, conn: &Connection) -> Result<Probe> {
    let client = client_for(st, org_id, conn).await?;
    Ok(find(&client, conn.default_runtime.as_deref()).await.probe(st))
}

#[cfg(test)]
mod tests {
    use super::{is_image_reference, is_snapshot_name};

    #[test]
    fn image_runtimes_are_docker_references() {
        for ok in [
            "python:3.12-slim",
            "python",
            "library/python:3.12",
            "ghcr.io/org/tool:v1.2",
            "localhost:5000/team/img",
            "registry.example.com:443/a/b_c__d-e:latest",
            "python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(is_image_reference(ok) && is_snapshot_name(&format!("image:{ok}")), "{ok:?} refused");
        }
        for bad in
            ["", "Python:3", "python:", "python:-x", "a//b", "-a", "a-", "a..b", "host:port/x", "x@sha256:zz", "a b"]
        {
            assert!(!is_image_reference(bad), "{bad:?} accepted");
        }
    }

    #[test]
    fn snapshot_names_are_plain_image_like_names() {
        for ok in ["daytonaio/sandbox:0.4.3", "my-python", "registry.example.com/team/img@sha256", "a"] {
            assert!(is_snapshot_name(ok), "{ok:?} refused");
        }
        for bad in ["", "has space", "semi;colon", "new\nline", &"x".repeat(201), "quote\"d"] {
            assert!(!is_snapshot_name(bad), "{bad:?} accepted");
        }
    }
}

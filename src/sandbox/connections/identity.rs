//! Whether an address reaches a host another connection already reaches: identity, not spelling.
//! sandboxd names no instance id (its health, index and policy carry none), so a host is known by
//! what its addresses and its answers have in common:
//!
//! - the canonical form of the address: the scheme, the host lower-cased without a trailing dot,
//!   the port (an explicit default port is the default), the path; every loopback name
//!   (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`) is one host, `loopback`;
//! - what a host name resolves to, each address in that form (`sandboxd` and the address the
//!   compose network gives it);
//! - a session both hosts list (the same name, opened at the same instant): one host behind two
//!   names or a port forward.
//!
//! A match is a warning when a connection is saved (two addresses of one host may be meant, a
//! second default runtime), never a refusal; what keeps them apart is the session key, which names
//! the connection that opened a session (`workspaces/key.rs`), see `running/service.rs`.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use futures_util::future::join_all;
use url::{Host, Url};

use super::model::Connection;
use crate::sandbox::hosts::sandboxd::client::{SandboxdClient, SessionList};
use crate::state::AppState;

/// Every loopback name and address, as one host.
const LOOPBACK: &str = "loopback";

/// How long a name's resolution or a host's session list may take before it counts as no answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

fn ip_part(ip: IpAddr) -> String {
    match ip {
        _ if is_loopback(ip) => LOOPBACK.to_string(),
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{v6}]"),
        },
    }
}

/// An address in its canonical form (see the module), or none for one that does not parse.
pub fn canonical(address: &str) -> Option<String> {
    let url = Url::parse(address.trim()).ok()?;
    let host = match url.host()? {
        Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            if d == "localhost" || d.ends_with(".localhost") {
                LOOPBACK.to_string()
            } else {
                d
            }
        }
        Host::Ipv4(ip) => ip_part(IpAddr::V4(ip)),
        Host::Ipv6(ip) => ip_part(IpAddr::V6(ip)),
    };
    Some(endpoint(&url, &host))
}

fn endpoint(url: &Url, host: &str) -> String {
    let port = url.port_or_known_default().unwrap_or(0);
    format!("{}://{host}:{port}{}", url.scheme(), url.path().trim_end_matches('/'))
}

/// The forms a host is known by from its address: the canonical one and, for a host name, each
/// address it resolves to (a name that does not resolve in time adds none).
pub async fn forms(address: &str) -> BTreeSet<String> {
    let mut forms: BTreeSet<String> = canonical(address).into_iter().collect();
    let Ok(url) = Url::parse(address.trim()) else { return forms };
    let Some(Host::Domain(name)) = url.host() else { return forms };
    let name = name.trim_end_matches('.').to_string();
    let port = url.port_or_known_default().unwrap_or(0);
    if let Ok(Ok(addrs)) = tokio::time::timeout(ASK_TIMEOUT, tokio::net::lookup_host((name, port))).await {
        forms.extend(addrs.map(|a| endpoint(&url, &ip_part(a.ip()))));
    }
    forms
}

/// Why two addresses are taken for one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// The same host and port spelled another way (or a name resolving to it).
    Address,
    /// Both hosts list this session.
    Session(String),
}

/// Another connection of the organization that reaches the same host, and why.
#[derive(Debug, Clone)]
pub struct SameHost {
    pub connection: Connection,
    pub evidence: Evidence,
}

impl SameHost {
    /// The warning a save shows, naming the connection.
    pub fn words(&self) -> String {
        let why = match &self.evidence {
            Evidence::Address => "the same host and port, spelled another way".to_string(),
            Evidence::Session(id) => format!("both list the session {id}"),
        };
        format!(
            "This address reaches the same host as the connection “{}” ({why}). Each session shows and closes only \
             under the connection that opened it; edit “{}” instead, or save anyway to keep both.",
            self.connection.name, self.connection.name
        )
    }
}

/// Whether two session lists share a session (its name and the instant it was opened): the same
/// host answered both.
pub fn share_a_session(a: &SessionList, b: &SessionList) -> Option<String> {
    a.sessions
        .iter()
        .find(|s| b.sessions.iter().any(|t| t.session_id == s.session_id && t.created_at == s.created_at))
        .map(|s| s.session_id.clone())
}

/// The first of `others` (sandboxd connections of `org_id`) whose address reaches the host at
/// `address`; failing that, when `host` (a client for `address` with its key) is given, the first
/// whose host lists a session that host lists too. A host that does not answer is no evidence.
pub async fn same_host(
    st: &AppState,
    org_id: &str,
    others: &[Connection],
    address: &str,
    host: Option<&SandboxdClient>,
) -> Option<SameHost> {
    let others: Vec<&Connection> =
        others.iter().filter(|c| c.kind.host_has_identity() && c.address.is_some()).collect();
    if others.is_empty() {
        return None;
    }
    let wanted = forms(address).await;
    let theirs = join_all(others.iter().map(|c| forms(c.address.as_deref().unwrap_or_default()))).await;
    if let Some((c, _)) = others.iter().zip(&theirs).find(|(_, t)| !wanted.is_disjoint(t)) {
        return Some(SameHost { connection: (*c).clone(), evidence: Evidence::Address });
    }
    let host = host?;
    let mine = tokio::time::timeout(ASK_TIMEOUT, host.sessions(false)).await.ok()?.ok()?;
    if mine.sessions.is_empty() {
        return None;
    }
    let lists = join_all(others.iter().map(|c| async move {
        let client = crate::sandbox::hosts::sandboxd::connections::client_for(st, org_id, c).await.ok()?;
        tokio::time::timeout(ASK_TIMEOUT, client.sessions(false)).await.ok()?.ok()
    }))
    .await;
    others.iter().zip(lists).find_map(|(c, list)| {
        let shared = share_a_session(&mine, list.as_ref()?)?;
        Some(SameHost { connection: (*c).clone(), evidence: Evidence::Session(shared) })
    })
}

/// What looking for this deployment's own sandbox service found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalService {
    /// The first of its addresses that answered.
    Found(String),
    /// A connection of the organization (named) already reaches one of its addresses: the others
    /// are spellings of the same service and are not offered again.
    Connected(String),
    /// None of its addresses answered.
    NotFound,
}

/// The first compose address (`SANDBOXD_LOCAL_ADDRESSES`) whose unauthenticated `/healthz`
/// answers, unless one of `connected` (the organization's connections) already reaches one of
/// them: the compose addresses are spellings of this deployment's one sandbox service, so none is
/// offered for a second connection to it.
pub async fn discover_local(st: &AppState, connected: &[Connection]) -> LocalService {
    let locals = join_all(st.config.sandboxd.local_addresses.iter().map(|a| forms(a))).await;
    for c in connected.iter().filter(|c| c.kind.host_has_identity()) {
        let Some(at) = c.address.as_deref() else { continue };
        let theirs = forms(at).await;
        if locals.iter().any(|l| !l.is_disjoint(&theirs)) {
            return LocalService::Connected(c.name.clone());
        }
    }
    match crate::sandbox::hosts::sandboxd::connections::first_local_answering(st).await {
        Some(a) => LocalService::Found(a),
        None => LocalService::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loopback_spelling_is_one_host() {
        let one = canonical("http://127.0.0.1:18471").expect("parses");
        for same in [
            "http://localhost:18471",
            "http://LOCALHOST:18471/",
            "http://localhost.:18471",
            "http://[::1]:18471",
            "http://127.0.0.2:18471",
            "http://[::ffff:127.0.0.1]:18471",
            "http://2130706433:18471",
            "http://sandbox.localhost:18471",
        ] {
            assert_eq!(canonical(same).as_deref(), Some(one.as_str()), "{same}");
        }
        assert_ne!(canonical("http://127.0.0.1:18472"), Some(one.clone()));
        assert_ne!(canonical("https://127.0.0.1:18471"), Some(one.clone()));
        assert_ne!(canonical("http://127.0.0.1:18471/other"), Some(one));
    }

    #[test]
    fn a_trailing_dot_case_and_an_explicit_default_port_are_the_same_host() {
        let one = canonical("http://sbx.example.com").expect("parses");
        for same in ["http://SBX.example.com.:80/", "http://sbx.example.com:80"] {
            assert_eq!(canonical(same).as_deref(), Some(one.as_str()), "{same}");
        }
        assert_eq!(canonical("https://sbx.example.com:443"), canonical("https://sbx.example.com"));
        assert_ne!(canonical("http://sbx.example.com:8080"), Some(one));
    }
}

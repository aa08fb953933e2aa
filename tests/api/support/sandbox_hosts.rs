//! Sandboxd hosts as the Running tab's and the policy's tests use them: a shared peer with small
//! session caps, connections saved through the service (dead hosts and refused keys included),
//! and sessions opened at the host directly.

use agenticos::access::{Caller, Via};
use agenticos::orgs::model::Role;
use agenticos::sandbox::connections::model::Connection;
use agenticos::sandbox::connections::service::{self as connections, ConnectionInput};
use agenticos::sandbox::hosts::sandboxd::client::{OpenSession, SandboxdClient, OPEN_WAIT};
use reqwest::Method;
use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::helpers::{Client, TestApp};
use crate::peer::{free_port, Peer, PeerOptions};

/// The peer these tests share: at most 3 sessions per organization, 50 on the host.
pub(crate) async fn capped_peer() -> &'static Peer {
    static PEER: OnceCell<Peer> = OnceCell::const_new();
    PEER.get_or_init(|| async {
        let options =
            PeerOptions::default().env("SANDBOXD_MAX_SESSIONS_PER_TENANT", "3").env("SANDBOXD_MAX_SESSIONS", "50");
        Peer::start(options).await.unwrap_or_else(|e| panic!("{e:#}"))
    })
    .await
}

/// The `Caller` a signed-in client acts as (its user, organization and role).
pub(crate) async fn caller_of(client: &Client) -> Caller {
    let me = client.api(Method::GET, "/api/v1/me", None).await.json();
    let text = |v: &serde_json::Value| v.as_str().expect("a string").to_string();
    Caller {
        user_id: text(&me["user_id"]),
        email: text(&me["email"]),
        org_id: text(&me["organization"]["id"]),
        org_name: text(&me["organization"]["name"]),
        role: Role::parse(me["role"].as_str().expect("role")).expect("a role"),
        via: Via::Session { session_id: String::new() },
    }
}

/// Saves a sandboxd connection; `token` goes into the vault, none leaves it without a credential.
/// Saved even when the host fails the save's check: these tests register dead hosts, refused keys
/// and older releases on purpose.
pub(crate) async fn connect(
    app: &TestApp,
    caller: &Caller,
    name: &str,
    address: &str,
    token: Option<&str>,
) -> Connection {
    let input = ConnectionInput {
        name: name.into(),
        kind: "sandboxd".into(),
        address: address.into(),
        new_key: token.map(|t| SecretString::from(t.to_string())),
        save_anyway: true,
        ..ConnectionInput::default()
    };
    connections::create(&app.state, caller, input).await.unwrap_or_else(|e| panic!("creating {name}: {e:?}"))
}

/// An address where nothing answers.
pub(crate) fn dead_address() -> String {
    format!("http://127.0.0.1:{}", free_port().expect("a free port"))
}

/// The peer, asked directly with its service token (a new HTTP client per test).
pub(crate) fn host(peer: &Peer) -> SandboxdClient {
    SandboxdClient::new(
        SandboxdClient::default_http().expect("http client"),
        url::Url::parse(&peer.url).expect("url"),
        SecretString::from(peer.token.clone()),
    )
}

/// `prefix` and 12 random hex digits: a name no other test uses.
pub(crate) fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// Opens session `id` of `tenant` at the host directly.
pub(crate) async fn open(host: &SandboxdClient, id: &str, tenant: &str) {
    host.open_session(&OpenSession::named(id).tenant(tenant), OPEN_WAIT)
        .await
        .unwrap_or_else(|e| panic!("opening {id}: {e}"));
}

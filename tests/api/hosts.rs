//! One test body run per host kind and per database: [`host_test!`] makes four tests of one body,
//! `name::sandboxd_sqlite`, `name::sandboxd_postgres`, `name::daytona_sqlite` and
//! `name::daytona_postgres`, the way `db_test!` makes one per database. Each gets a fresh app and a
//! [`Host`]: the real sandboxd peer (the one [`peer::shared`] of the test binary) or a FAKE Daytona
//! of its own (tests/peer/daytona/fake_daytona.py; see daytona_fake.rs). A body says what is the
//! same for every kind through our API; what it must look at on the host itself (which workspaces
//! are open there, a file's bytes, whether a workspace's files are gone) it asks the [`Host`].
//! After a passing Daytona body, every request in the fake's log is checked against Daytona's
//! documents.
//!
//! Filter by kind or database: `cargo test --test api -- ::daytona_` or `-- _postgres`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;

use crate::daytona_fake::FakeDaytona;
use crate::peer::{self, Peer, PeerOptions};
use crate::support::connections::daytona;
use crate::support::Org;

/// Generates one test per host kind and database: `name::{sandboxd,daytona}_{sqlite,postgres}`.
///
/// - `async fn name(app: TestApp, host: &Host) { … }`: a fresh app and the kind's host; the body
///   connects an organization to it with [`Host::connect`].
/// - `async fn name(app: TestApp, host: &mut Host) { … }`: the same with a host of the test's own
///   ([`Host::start_own`]), which the body may take down and bring back ([`Host::go_down`]).
#[macro_export]
macro_rules! host_test {
    ($(#[$meta:meta])* async fn $name:ident($app:ident: TestApp, $host:ident: &Host) $body:block) => {
        $crate::host_test!(@tests $name, start, [&], [$(#[$meta])*], $app, $host, $body);
    };
    ($(#[$meta:meta])* async fn $name:ident($app:ident: TestApp, $host:ident: &mut Host) $body:block) => {
        $crate::host_test!(@tests $name, start_own, [&mut], [$(#[$meta])*], $app, $host, $body);
    };
    (@tests $name:ident, $start:ident, [$($by:tt)*], [$(#[$meta:meta])*], $app:ident, $host:ident, $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(#[$meta])*
            async fn run($app: $crate::helpers::TestApp, $host: $($by)* $crate::hosts::Host) $body
            $crate::host_test!(@variant sandboxd_sqlite, Sandboxd, Sqlite, $start, [$($by)*]);
            $crate::host_test!(@variant sandboxd_postgres, Sandboxd, Postgres, $start, [$($by)*]);
            $crate::host_test!(@variant daytona_sqlite, Daytona, Sqlite, $start, [$($by)*]);
            $crate::host_test!(@variant daytona_postgres, Daytona, Postgres, $start, [$($by)*]);
        }
    };
    (@variant $variant:ident, $kind:ident, $db:ident, $start:ident, [$($by:tt)*]) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $variant() {
            let Some(app) = $crate::helpers::spawn_app_with($crate::helpers::Backend::$db, &[]).await else {
                return;
            };
            #[allow(unused_mut)]
            let mut host = $crate::hosts::Host::$start($crate::hosts::HostKind::$kind).await;
            let database = app.database.clone();
            run(app, $($by)* host).await;
            host.check_after();
            if $crate::helpers::Backend::$db == $crate::helpers::Backend::Postgres {
                $crate::helpers::drop_database(database).await;
            }
        }
    };
}

/// The host kinds a [`host_test!`] body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostKind {
    Sandboxd,
    Daytona,
}

/// A host of one kind, as a test sees it from outside our API.
pub(crate) enum Host {
    /// The real sandboxd peer: the test binary's shared one, or one of the test's own.
    Sandboxd(Peers),
    /// A FAKE Daytona of this test's own.
    Daytona(FakeDaytona),
}

/// The sandboxd peer a [`Host`] talks to.
pub(crate) enum Peers {
    /// The test binary's shared peer.
    Shared(&'static Peer),
    /// A peer of the test's own, which it may stop and start again.
    Own(Box<Peer>),
}

impl std::ops::Deref for Peers {
    type Target = Peer;
    fn deref(&self) -> &Peer {
        match self {
            Peers::Shared(peer) => peer,
            Peers::Own(peer) => peer,
        }
    }
}

/// What a Daytona API that is down answers every call of the delete's: its gateway's 503 (a fake
/// rule; Daytona's own client retries 5xx, as ours does).
/// What our side keeps when Daytona answered [`DAYTONA_DOWN`]'s 503 (after its tries).
const DAYTONA_DOWN_REASON: &str = "Daytona answered 503: Service Unavailable The sweep tries again.";

const DAYTONA_DOWN: [&str; 2] = ["GET /sandbox/{sandboxIdOrName}", "DELETE /sandbox/{sandboxIdOrName}"];

impl Host {
    /// The kind's host: the shared peer, or a new fake Daytona.
    pub(crate) async fn start(kind: HostKind) -> Host {
        match kind {
            HostKind::Sandboxd => Host::Sandboxd(Peers::Shared(peer::shared().await)),
            HostKind::Daytona => Host::Daytona(FakeDaytona::start(&[])),
        }
    }

    /// A host of the kind that is the test's alone (a sandboxd peer of its own), so the test may
    /// take it down ([`Host::go_down`]).
    pub(crate) async fn start_own(kind: HostKind) -> Host {
        match kind {
            HostKind::Sandboxd => {
                Host::Sandboxd(Peers::Own(Box::new(Peer::start(PeerOptions::default()).await.expect("a peer"))))
            }
            HostKind::Daytona => Host::Daytona(FakeDaytona::start(&[])),
        }
    }

    /// Takes the host down: a peer of the test's own stops (its address refuses connections), a
    /// fake Daytona answers 503 to the calls a delete makes.
    pub(crate) fn go_down(&mut self) {
        match self {
            Host::Sandboxd(Peers::Own(peer)) => peer.stop_now(),
            Host::Sandboxd(Peers::Shared(_)) => panic!("the shared peer is never taken down: take `host: &mut Host`"),
            Host::Daytona(fake) => {
                let rules: Vec<Value> =
                    DAYTONA_DOWN.iter().map(|r| serde_json::json!({"route": r, "status": 503, "message": "Service Unavailable", "times": 1_000_000})).collect();
                fake.set_hooks(serde_json::json!({"fail": rules}));
            }
        }
    }

    /// Brings the host back after [`Host::go_down`]: the peer starts again on its address (it forgot
    /// its sessions; their files are still on disk), Daytona answers again.
    pub(crate) async fn come_back(&mut self) {
        match self {
            Host::Sandboxd(Peers::Own(peer)) => peer.start_again().await.expect("the peer starts again"),
            Host::Sandboxd(Peers::Shared(_)) => panic!("the shared peer is never taken down"),
            Host::Daytona(fake) => {
                fake.set_hooks(serde_json::json!({"fail": null}));
            }
        }
    }

    /// What our side keeps as the reason a call to the host failed while it was down.
    pub(crate) fn down_reason(&self) -> &'static str {
        match self {
            Host::Sandboxd(_) => "The sandbox service did not answer at this address.",
            Host::Daytona(_) => DAYTONA_DOWN_REASON,
        }
    }

    /// The host's address as its connection holds it (the peer's URL, Daytona's API URL).
    pub(crate) fn address(&self) -> &str {
        match self {
            Host::Sandboxd(peer) => &peer.url,
            Host::Daytona(fake) => &fake.api_url,
        }
    }

    /// How many requests reached the host so far.
    pub(crate) fn requests(&self) -> u64 {
        match self {
            Host::Sandboxd(peer) => {
                let log = std::fs::read_to_string(&peer.log_path).expect("the peer's log");
                log.matches("HTTP/1.1\"").count() as u64
            }
            Host::Daytona(fake) => fake.request_counts().values().sum(),
        }
    }

    /// Whether the host has deleted workspace `key` with its files: sandboxd has no files of it,
    /// every Daytona sandbox of it (by our label: Daytona renames one it deletes) is `destroyed`.
    pub(crate) async fn is_gone(&self, key: &str) -> bool {
        match self {
            Host::Sandboxd(_) => self.files_of(key).await.is_none(),
            Host::Daytona(fake) => {
                let all: Vec<Value> =
                    fake.sandboxes().into_iter().filter(|s| s["labels"]["agenticos.io/workspace"] == key).collect();
                !all.is_empty() && all.iter().all(|s| s["state"] == "destroyed")
            }
        }
    }

    /// How many times the host deleted workspace `key` with its files (requests it answered with a
    /// success).
    pub(crate) fn deletes_of(&self, key: &str) -> usize {
        match self {
            Host::Sandboxd(peer) => {
                let log = std::fs::read_to_string(&peer.log_path).expect("the peer's log");
                // Answered with a 2xx (a peer started again answers a first 404: it forgot the session).
                log.matches(&format!("DELETE /sessions/{key}?purge=true HTTP/1.1\" 2")).count()
            }
            Host::Daytona(fake) => {
                // By our label: Daytona renames a sandbox it deletes.
                let paths: Vec<String> = fake
                    .sandboxes()
                    .iter()
                    .filter(|s| s["labels"]["agenticos.io/workspace"] == key)
                    .filter_map(|s| s["id"].as_str().map(|id| format!("/{id}")))
                    .collect();
                let deleted = |l: &Value| {
                    l["route"] == "DELETE /sandbox/{sandboxIdOrName}"
                        && l["status"].as_u64().is_some_and(|s| s < 300)
                        && paths.iter().any(|p| l["path"].as_str().is_some_and(|path| path.ends_with(p.as_str())))
                };
                fake.log_lines().iter().filter(|l| deleted(l)).count()
            }
        }
    }

    /// `sandboxd` or `daytona`: the workspace's `backend` in the API.
    pub(crate) fn backend(&self) -> &'static str {
        match self {
            Host::Sandboxd(_) => "sandboxd",
            Host::Daytona(_) => "daytona",
        }
    }

    /// Where a workspace on this host lives, as the product spells it (its session keys start
    /// from it): decided by the host's kind, never spelled by the test.
    pub(crate) fn placement(&self) -> agenticos::sandbox::hosts::kind::Placement {
        use agenticos::sandbox::hosts::kind::{ConnectionKind, Placement};
        match self {
            Host::Sandboxd(_) => Placement::Host(ConnectionKind::Sandboxd),
            Host::Daytona(_) => Placement::Host(ConnectionKind::Daytona),
        }
    }

    /// Connects `o` to this host (its default connection when it has no other); the connection id.
    pub(crate) async fn connect(&self, o: &Org<'_>) -> String {
        match self {
            Host::Sandboxd(peer) => o.connect(peer).await,
            Host::Daytona(fake) => daytona(o, &fake.api_url, &fake.api_key).await,
        }
    }

    /// The secret our side holds for this host (the peer's token, Daytona's API key): it may
    /// reach nothing but requests to the host.
    pub(crate) fn secret(&self) -> &str {
        match self {
            Host::Sandboxd(peer) => &peer.token,
            Host::Daytona(fake) => &fake.api_key,
        }
    }

    /// The session keys of `o`'s workspaces open on the host (sandboxd's sessions of the
    /// organization's tenant; Daytona's sandboxes with the organization's label, not destroyed),
    /// sorted.
    pub(crate) async fn open_workspaces(&self, o: &Org<'_>) -> Vec<String> {
        let mut keys: Vec<String> = match self {
            Host::Sandboxd(peer) => {
                let sessions = o.sessions_on(peer).await;
                sessions.iter().filter_map(|s| s["session_id"].as_str().map(str::to_string)).collect()
            }
            Host::Daytona(fake) => fake
                .sandboxes()
                .into_iter()
                .filter(|s| s["labels"]["agenticos.io/org"] == o.org_id.as_str() && !destroyed(s))
                .filter_map(|s| s["name"].as_str().map(str::to_string))
                .collect(),
        };
        keys.sort();
        keys
    }

    /// Where the host keeps the files of workspace `key` (the folder the workspace's paths are
    /// relative to), or `None` when the host has no files of it (never opened, purged, destroyed).
    pub(crate) async fn files_of(&self, key: &str) -> Option<PathBuf> {
        match self {
            Host::Sandboxd(peer) => {
                let r = peer.request(Method::POST, &format!("/workspaces/{key}/tree")).json(&serde_json::json!({}));
                let status = r.send().await.expect("ask the host for the tree").status().as_u16();
                match status {
                    200 => Some(peer.workspace_root.join(key).join("workspace")),
                    404 => None,
                    other => panic!("the host answered {other} for the tree of {key}"),
                }
            }
            Host::Daytona(fake) => {
                let sandbox = self.sandbox_named(fake, key)?;
                let dir = PathBuf::from(sandbox["dir"].as_str().expect("the sandbox's folder"));
                Some(dir.join("workspace"))
            }
        }
    }

    /// The content of `path` in workspace `key`, read on the host itself.
    pub(crate) async fn file(&self, key: &str, path: &str) -> Option<String> {
        let dir = self.files_of(key).await?;
        std::fs::read_to_string(dir.join(path)).ok()
    }

    /// What the Running tab and its API name workspace `key`'s session by: sandboxd's session key,
    /// Daytona's sandbox id.
    pub(crate) fn running_id(&self, key: &str) -> String {
        match self {
            Host::Sandboxd(_) => key.to_string(),
            Host::Daytona(fake) => {
                let sandbox = self.sandbox_named(fake, key).unwrap_or_else(|| panic!("no sandbox {key}"));
                sandbox["id"].as_str().expect("the sandbox's id").to_string()
            }
        }
    }

    /// The Running tab's row of `id` (a [`Host::running_id`]).
    pub(crate) fn running_row(&self, id: &str) -> String {
        match self {
            Host::Sandboxd(_) => format!("tr.session[data-session-id=\"{id}\"]"),
            Host::Daytona(_) => format!("tr.daytona-sandbox[data-sandbox-id=\"{id}\"]"),
        }
    }

    /// `id` (a [`Host::running_id`]) in the list `GET /api/v1/sandbox-sessions` answered.
    pub(crate) fn running_listed(&self, v: &Value, id: &str) -> Option<Value> {
        let (list, items, field) = match self {
            Host::Sandboxd(_) => ("connections", "sessions", "session_id"),
            Host::Daytona(_) => ("daytona", "sandboxes", "sandbox_id"),
        };
        v[list]
            .as_array()?
            .iter()
            .flat_map(|c| c[items].as_array().into_iter().flatten())
            .find(|s| s[field] == id)
            .cloned()
    }

    /// Whether workspace `key` runs on the host: sandboxd holds its session open, Daytona's sandbox
    /// is started. Daytona stops a sandbox in the background: a `stopping` one is waited for
    /// (bounded).
    pub(crate) async fn is_running(&self, key: &str) -> bool {
        match self {
            Host::Sandboxd(peer) => {
                let r = peer.request(Method::GET, &format!("/sessions/{key}")).send().await.expect("ask the host");
                match r.status().as_u16() {
                    200 => true,
                    404 => false,
                    other => panic!("the host answered {other}"),
                }
            }
            Host::Daytona(fake) => {
                let deadline = Instant::now() + Duration::from_secs(20);
                loop {
                    let Some(sandbox) = self.sandbox_named(fake, key) else { return false };
                    match sandbox["state"].as_str() {
                        Some("started") => return true,
                        Some("stopping") => {}
                        _ => return false,
                    }
                    assert!(Instant::now() < deadline, "sandbox {key} never stopped: {sandbox}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// Waits (bounded) until the host has finished deleting `id` (a [`Host::running_id`]): sandboxd
    /// deletes before it answers, Daytona in the background (a `destroying` sandbox is still
    /// listed).
    pub(crate) async fn wait_deleted(&self, id: &str) {
        let Host::Daytona(fake) = self else { return };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let all = fake.sandboxes();
            let sandbox = all.iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("no sandbox {id}"));
            if sandbox["state"] == "destroyed" {
                return;
            }
            assert!(Instant::now() < deadline, "sandbox {id} was never destroyed: {sandbox}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The fake's sandbox named `key` that is not destroyed (nor being destroyed).
    fn sandbox_named(&self, fake: &FakeDaytona, key: &str) -> Option<Value> {
        fake.sandboxes().into_iter().find(|s| s["name"] == key && !destroyed(s))
    }

    /// What each kind checks after a passing body: every request in a fake Daytona's log matches
    /// Daytona's documents.
    pub(crate) fn check_after(&self) {
        match self {
            Host::Sandboxd(_) => {}
            Host::Daytona(fake) => fake.assert_log_matches_the_documents(),
        }
    }
}

/// Whether a fake Daytona's sandbox is destroyed or being destroyed (Daytona deletes in the
/// background: `desiredState` says so at once).
fn destroyed(sandbox: &Value) -> bool {
    sandbox["state"] == "destroyed" || sandbox["desiredState"] == "destroyed"
}

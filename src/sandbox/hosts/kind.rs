//! What kind of host a connection registers, and what each kind does: one exhaustive `match` per
//! question, so a new kind compiles only once each is answered for it (docs/developing.md,
//! "Adding a host kind").
//!
//! A `match` on a kind names every kind. This one does:
//!
//! ```
//! use agenticos::sandbox::hosts::kind::ConnectionKind;
//! fn label(kind: ConnectionKind) -> &'static str {
//!     match kind {
//!         ConnectionKind::Sandboxd => "sandboxd",
//!         ConnectionKind::Daytona => "Daytona",
//!     }
//! }
//! assert_eq!(label(ConnectionKind::Daytona), "Daytona");
//! ```
//!
//! and the same `match` without Daytona does not compile: the error a new variant raises at each
//! place that has not handled it. Those places are: here, `all`, `as_str`, `label` and each
//! question below (and `Placement::key_letter`); and in `hosts/dispatch/`, one function per
//! capability's decision: the backend a run gets (`workspaces.rs`), a default runtime's check, the
//! connection form's words, the probe and a saved connection's health (`connections.rs`),
//! Running's close and its confirmation (`running.rs`), the orphans' listing (`orphans.rs`), a
//! destroy (`destroy.rs`), doctor's checks (`doctor.rs`) and the stored files Documents and
//! snapshots read (`stored_files.rs`: which the kind's are, then its four reads). No capability
//! outside `hosts/` matches a kind, and the matches on a kind are exactly these 26 places
//! (`tests/api/architecture.rs`, `a_new_kind_stops_the_compiler_at_exactly_the_places_listed`).
//! Nor does a comparison compile: a kind is not `PartialEq`.
//!
//! ```compile_fail
//! use agenticos::sandbox::hosts::kind::ConnectionKind;
//! fn label(kind: ConnectionKind) -> &'static str {
//!     match kind {
//!         ConnectionKind::Sandboxd => "sandboxd",
//!     }
//! }
//! ```
//!
//! ```compile_fail
//! use agenticos::sandbox::hosts::kind::ConnectionKind;
//! fn is_daytona(kind: ConnectionKind) -> bool {
//!     kind == ConnectionKind::Daytona
//! }
//! ```

use serde::Serialize;

/// What kind of host a connection registers. Deliberately not `PartialEq`: a `==` on a kind
/// compiles without a new kind and silently takes the other branch, so code asks the questions
/// below or `match`es every kind.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionKind {
    /// A sandboxd host: workspaces with files and a shell.
    Sandboxd,
    /// Daytona: its API URL and a key of purpose `daytona` (docs/daytona.md).
    Daytona,
}

impl ConnectionKind {
    /// Every kind, in the order forms offer them (each kind names the next, so a new kind stops
    /// the compiler here too, and once chained is parsed and offered).
    pub fn all() -> impl Iterator<Item = ConnectionKind> {
        std::iter::successors(Some(ConnectionKind::Sandboxd), |k| match k {
            ConnectionKind::Sandboxd => Some(ConnectionKind::Daytona),
            ConnectionKind::Daytona => None,
        })
    }

    /// The kind offered first, and the one a connection is of when none is named (the API's
    /// `kind` may be left out; a form shows it before one is chosen): the explicit choice, made
    /// here, of what an absent kind means.
    pub fn offered_first() -> ConnectionKind {
        ConnectionKind::Sandboxd
    }

    /// The kind a stored or typed word names; none for a word no kind of this version has.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        Self::all().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionKind::Sandboxd => "sandboxd",
            ConnectionKind::Daytona => "daytona",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ConnectionKind::Sandboxd => "sandboxd",
            ConnectionKind::Daytona => "Daytona",
        }
    }

    /// The address a connection of this kind is saved with when none is typed.
    pub fn default_address(self) -> Option<&'static str> {
        match self {
            ConnectionKind::Sandboxd => None,
            ConnectionKind::Daytona => Some(crate::sandbox::hosts::daytona::client::DEFAULT_API_URL),
        }
    }

    /// Whether the host answers the sandboxd API's sessions, policy and events: the Running tab's
    /// sessions section, the policy panel, a session's activity and close dialog.
    pub fn has_sessions(self) -> bool {
        match self {
            ConnectionKind::Sandboxd => true,
            ConnectionKind::Daytona => false,
        }
    }

    /// Whether the Running tab lists the host's sandboxes in a section of their own (Daytona's).
    pub fn has_sandboxes_section(self) -> bool {
        match self {
            ConnectionKind::Sandboxd => false,
            ConnectionKind::Daytona => true,
        }
    }

    /// Whether two connections of this kind may reach one host by different addresses, so that
    /// identity (`connections/identity.rs`) compares them: sandboxd hosts yes; one Daytona API
    /// serves many Daytona organizations, each connection its own.
    pub fn host_has_identity(self) -> bool {
        match self {
            ConnectionKind::Sandboxd => true,
            ConnectionKind::Daytona => false,
        }
    }

    /// Whether this deployment's own token (its compose sandboxd's) may be offered to the host.
    pub fn takes_local_token(self) -> bool {
        match self {
            ConnectionKind::Sandboxd => true,
            ConnectionKind::Daytona => false,
        }
    }

    /// Whether a connection of this kind is to a provider's API (an API URL, an API key, runtimes
    /// that are the provider's snapshot names), rather than to a host of ours (an address, a host
    /// token, the catalog's runtimes): the connection dialog asks and words its fields by this.
    pub fn is_provider_api(self) -> bool {
        match self {
            ConnectionKind::Sandboxd => false,
            ConnectionKind::Daytona => true,
        }
    }

    /// Whether a workspace may have left a sandbox at the host before its row had a session id:
    /// Daytona creates a sandbox by name, so a create whose sandbox then failed to start leaves
    /// one there (its tombstone names it by name).
    pub fn creates_before_opened(self) -> bool {
        match self {
            ConnectionKind::Sandboxd => false,
            ConnectionKind::Daytona => true,
        }
    }
}

/// Where a workspace's files live: the one spelling of the choice. A workspace row's `backend`
/// is its word (`state`, `sandboxd`, `daytona`), the session key's first letter is its
/// [`key_letter`](Placement::key_letter), and the backend a run gets is chosen by it. An agent
/// says only `state` or `service` (`agents::model::Backend`, its API word); a service agent's
/// workspace is placed on its connection's kind.
#[derive(Debug, Clone, Copy)]
pub enum Placement {
    /// A document in the database (the `state` backend): files only, no commands.
    State,
    /// A session or sandbox at a host of this kind.
    Host(ConnectionKind),
}

impl Placement {
    /// The word a workspace row stores and the API shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::State => "state",
            Placement::Host(kind) => kind.as_str(),
        }
    }

    /// The placement a stored word names; none for a word this version does not know.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "state" => Some(Placement::State),
            other => ConnectionKind::parse(other).map(Placement::Host),
        }
    }

    /// The host kind, for a workspace at a host.
    pub fn host(self) -> Option<ConnectionKind> {
        match self {
            Placement::State => None,
            Placement::Host(kind) => Some(kind),
        }
    }

    /// The first letter of the session key (docs/design.md §7): `x` for any host (a key names
    /// its connection, so two kinds never share one), `d` for a document.
    pub fn key_letter(self) -> char {
        match self {
            Placement::State => 'd',
            Placement::Host(ConnectionKind::Sandboxd | ConnectionKind::Daytona) => 'x',
        }
    }
}

/// Whether a stored `backend` word names a workspace at a host (a word this version does not
/// know is not).
pub fn is_at_a_host(backend: &str) -> bool {
    Placement::parse(backend).and_then(Placement::host).is_some()
}

impl std::fmt::Display for ConnectionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_back_from_its_word_and_nothing_else_is_a_kind() {
        assert_eq!(ConnectionKind::all().map(ConnectionKind::as_str).collect::<Vec<_>>(), ["sandboxd", "daytona"]);
        for k in ConnectionKind::all() {
            assert_eq!(ConnectionKind::parse(k.as_str()).map(ConnectionKind::as_str), Some(k.as_str()));
            assert_eq!(
                ConnectionKind::parse(&format!(" {} ", k.as_str())).map(ConnectionKind::as_str),
                Some(k.as_str())
            );
        }
        for unknown in ["kubernetes", "", "Daytona", "SANDBOXD"] {
            assert!(ConnectionKind::parse(unknown).is_none(), "{unknown:?} parsed");
        }
    }

    #[test]
    fn a_placement_is_state_or_a_hosts_kind_and_parses_back_from_its_word() {
        let all: Vec<_> = std::iter::once(Placement::State).chain(ConnectionKind::all().map(Placement::Host)).collect();
        let words: Vec<_> = all.iter().map(|p| p.as_str()).collect();
        assert_eq!(words, ["state", "sandboxd", "daytona"]);
        for p in all {
            assert_eq!(Placement::parse(p.as_str()).map(Placement::as_str), Some(p.as_str()));
            assert_eq!(is_at_a_host(p.as_str()), p.host().is_some());
        }
        assert_eq!(Placement::State.key_letter(), 'd');
        assert_eq!(Placement::Host(ConnectionKind::Daytona).key_letter(), 'x');
        assert!(Placement::parse("service").is_none() && !is_at_a_host("kubernetes"));
    }
}

//! Session keys (docs/design.md §7): the name of a session on its host, so every run of a scope opens it
//! by that name — the first creates, the others attach, concurrent ones included.
//!
//! ```text
//! xc-4f2a91c8-7b3e5d10-<32 hex>      backend·scope - org - host - subject
//! dc-4f2a91c8-<32 hex>               a `state` document has no host part
//! ```

use sha2::{Digest, Sha256};

use crate::sandbox::hosts::kind::Placement;
use crate::vocabulary::scope::Scope;

/// The scope's letter in a key.
fn letter(scope: Scope) -> char {
    match scope {
        Scope::Run => 'r',
        Scope::Conversation => 'c',
        Scope::Channel => 'h',
        Scope::User => 'u',
        Scope::Agent => 'a',
    }
}

/// The part of the key that names the subject.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A run, conversation or agent id (a UUID).
    Id(&'a str),
    /// A person or channel: the first 8 hex of the agent id and 24 hex of a SHA-256 of the identity.
    Hashed { agent_id: &'a str, identity: &'a str },
}

/// 32 lower-case hex characters of a UUID (or, for anything else, of its SHA-256).
fn hex32(id: &str) -> String {
    let compact: String = id.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase();
    if compact.len() == 32 && compact.chars().all(|c| c.is_ascii_hexdigit()) {
        compact
    } else {
        hex::encode(Sha256::digest(id.as_bytes()))[..32].to_string()
    }
}

fn hex8(id: &str) -> String {
    hex32(id)[..8].to_string()
}

/// Builds the key. `host_id` is the *resolved* connection id (absent for a document).
pub fn session_key(
    placement: Placement,
    scope: Scope,
    org_id: &str,
    host_id: Option<&str>,
    subject: Subject<'_>,
) -> String {
    let backend = placement.key_letter();
    let subject = match subject {
        Subject::Id(id) => hex32(id),
        Subject::Hashed { agent_id, identity } => {
            format!("{}{}", hex8(agent_id), &hex::encode(Sha256::digest(identity.as_bytes()))[..24])
        }
    };
    match (placement.host(), host_id) {
        (Some(_), Some(host)) => {
            format!("{backend}{}-{}-{}-{subject}", letter(scope), hex8(org_id), hex8(host))
        }
        _ => format!("{backend}{}-{}-{subject}", letter(scope), hex8(org_id)),
    }
}

/// Whether `session_id` is a container session key this platform builds for `org_id` on
/// `connection_id` (its org and host parts name them): the orphan check touches no other.
pub fn is_key_of(session_id: &str, org_id: &str, connection_id: &str) -> bool {
    let mut parts = session_id.split('-');
    let kind = parts.next().unwrap_or_default();
    kind.len() == 2
        && kind.starts_with('x')
        && parts.next() == Some(hex8(org_id).as_str())
        && parts.next() == Some(hex8(connection_id).as_str())
}

/// Which of `connection_ids` (connections of `org_id`) the container session key `session_id` was
/// built for: the session belongs to that connection alone, whichever address of its host it is
/// read through. None for a name that is no key of this organization's or names none of them.
pub fn connection_named<'a>(
    session_id: &str,
    org_id: &str,
    connection_ids: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    connection_ids.into_iter().find(|id| is_key_of(session_id, org_id, id))
}

/// sandboxd's session-id pattern: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
pub fn is_valid(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::hosts::kind::ConnectionKind;

    const CONTAINER: Placement = Placement::Host(ConnectionKind::Sandboxd);
    const DOCUMENT: Placement = Placement::State;

    const ORG: &str = "4f2a91c8-1111-4222-8333-444455556666";
    const HOST: &str = "7b3e5d10-aaaa-4bbb-8ccc-ddddeeeeffff";
    const RUN: &str = "9c1f0000-1234-4567-89ab-cdef01234567";
    const AGENT: &str = "a9e71234-0000-4000-8000-000000000001";

    #[test]
    fn the_key_reads_backend_scope_org_host_subject() {
        let k = session_key(CONTAINER, Scope::Conversation, ORG, Some(HOST), Subject::Id(RUN));
        assert_eq!(k, "xc-4f2a91c8-7b3e5d10-9c1f0000123445678 9abcdef01234567".replace(' ', ""));
        let d = session_key(DOCUMENT, Scope::Run, ORG, None, Subject::Id(RUN));
        assert_eq!(d, "dr-4f2a91c8-9c1f000012344567 89abcdef01234567".replace(' ', ""));
    }

    #[test]
    fn every_scope_and_backend_gives_a_valid_key_of_at_most_64_characters() {
        let long = "u".repeat(200);
        let daytona = Placement::Host(ConnectionKind::Daytona);
        for carrier in [CONTAINER, daytona, DOCUMENT] {
            for scope in Scope::ALL {
                let host = carrier.host().map(|_| HOST);
                for subject in [Subject::Id(RUN), Subject::Hashed { agent_id: AGENT, identity: &long }] {
                    let k = session_key(carrier, scope, ORG, host, subject);
                    assert!(k.len() <= 64, "{k} is {} long", k.len());
                    assert!(is_valid(&k), "{k} does not match the sandboxd pattern");
                    assert!(k.starts_with(if carrier.host().is_some() { 'x' } else { 'd' }));
                    assert_eq!(k.chars().nth(1), Some(letter(scope)));
                }
            }
        }
    }

    #[test]
    fn two_hundred_character_user_and_channel_ids_hash_apart() {
        let a = "user-".to_string() + &"a".repeat(195);
        let b = "user-".to_string() + &"a".repeat(194) + "b";
        let ka =
            session_key(CONTAINER, Scope::User, ORG, Some(HOST), Subject::Hashed { agent_id: AGENT, identity: &a });
        let kb =
            session_key(CONTAINER, Scope::User, ORG, Some(HOST), Subject::Hashed { agent_id: AGENT, identity: &b });
        assert_ne!(ka, kb);
        assert!(ka.ends_with(&format!("-a9e71234{}", &hex::encode(Sha256::digest(a.as_bytes()))[..24])));
        assert_eq!(ka.len(), 53);
    }

    #[test]
    fn the_host_is_part_of_the_key() {
        let a = session_key(CONTAINER, Scope::Agent, ORG, Some(HOST), Subject::Id(AGENT));
        let b = session_key(CONTAINER, Scope::Agent, ORG, Some(RUN), Subject::Id(AGENT));
        assert_ne!(a, b);
        let state = session_key(DOCUMENT, Scope::Agent, ORG, None, Subject::Id(AGENT));
        assert_ne!(a, state);
    }

    #[test]
    fn a_key_names_the_connection_it_was_built_for_and_no_other() {
        const OTHER: &str = "0d1e2f30-aaaa-4bbb-8ccc-ddddeeeeffff";
        let k = session_key(CONTAINER, Scope::User, ORG, Some(HOST), Subject::Id(RUN));
        assert_eq!(connection_named(&k, ORG, [OTHER, HOST]), Some(HOST));
        assert_eq!(connection_named(&k, ORG, [OTHER]), None);
        assert_eq!(connection_named(&k, RUN, [OTHER, HOST]), None, "another organization's key");
        assert_eq!(connection_named("demo-1", ORG, [HOST]), None);
        let state = session_key(DOCUMENT, Scope::User, ORG, None, Subject::Id(RUN));
        assert_eq!(connection_named(&state, ORG, [HOST]), None);
    }

    #[test]
    fn invalid_ids_are_refused_by_the_pattern_check() {
        assert!(!is_valid(""));
        assert!(!is_valid("-abc"));
        assert!(!is_valid(&"a".repeat(65)));
        assert!(!is_valid("a/b"));
    }
}

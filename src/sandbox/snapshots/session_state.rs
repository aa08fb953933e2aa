//! `session_state`: an opaque, signed token naming a workspace, handed out when a run finishes,
//! that a later run of the same agent may pass to continue in that workspace. HMAC-SHA256 with a
//! key derived from the vault's master key; checked against our rows when used (the organization,
//! the agent, the workspace still there).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// What a token names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The organization.
    pub o: String,
    /// The agent.
    pub a: String,
    /// The workspace.
    pub w: String,
    /// Issued at, epoch milliseconds.
    pub t: i64,
}

fn key(master: &[u8; 32]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master).expect("hmac takes any key length");
    mac.update(b"agenticos session_state v1");
    mac.finalize().into_bytes().into()
}

fn mac(master: &[u8; 32], body: &str) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key(master)).expect("hmac takes any key length");
    mac.update(body.as_bytes());
    mac
}

/// `<claims, base64url>.<signature, base64url>`
pub fn sign(master: &[u8; 32], claims: &Claims) -> String {
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
    let sig = URL_SAFE_NO_PAD.encode(mac(master, &body).finalize().into_bytes());
    format!("{body}.{sig}")
}

/// The claims of a token this platform signed; none for anything else (tampered, truncated, signed
/// under another key).
pub fn verify(master: &[u8; 32], token: &str) -> Option<Claims> {
    let (body, sig) = token.trim().split_once('.')?;
    let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
    mac(master, body).verify_slice(&sig).ok()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()
}

/// A token naming `workspace_id` of `agent_id` in `org_id`, signed with this deployment's key.
pub fn issue(st: &crate::state::AppState, org_id: &str, agent_id: &str, workspace_id: &str) -> String {
    let claims = Claims { o: org_id.into(), a: agent_id.into(), w: workspace_id.into(), t: crate::db::now_ms() };
    sign(st.vault_key.bytes(), &claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims { o: "org".into(), a: "agent".into(), w: "ws".into(), t: 1 }
    }

    #[test]
    fn a_signed_token_verifies_and_names_its_workspace() {
        let k = [7u8; 32];
        assert_eq!(verify(&k, &sign(&k, &claims())), Some(claims()));
    }

    #[test]
    fn a_tampered_or_foreign_token_does_not_verify() {
        let k = [7u8; 32];
        let t = sign(&k, &claims());
        let (body, sig) = t.split_once('.').unwrap();
        let other = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&Claims { w: "other".into(), ..claims() }).unwrap());
        assert_eq!(verify(&k, &format!("{other}.{sig}")), None);
        assert_eq!(verify(&[8u8; 32], &t), None);
        assert_eq!(verify(&k, body), None);
        assert_eq!(verify(&k, "not a token"), None);
    }
}

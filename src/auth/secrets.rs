//! Random tokens and their one-way hashes (session cookies, API tokens, one-time passwords).

use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// `bytes` random bytes as unpadded base64url.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buf);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

/// A readable one-time password: four groups of five letters and digits without look-alikes.
pub fn one_time_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut buf = [0u8; 20];
    rand::rngs::OsRng.fill_bytes(&mut buf);
    let chars: Vec<char> = buf.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect();
    chars.chunks(5).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>().join("-")
}

pub fn sha256_hex(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

/// The secret behind session-bound CSRF tokens.
#[derive(Clone)]
pub struct CsrfKey([u8; 32]);

impl CsrfKey {
    pub fn derive(master: &[u8; 32]) -> Self {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master).expect("hmac takes any key length");
        mac.update(b"agenticos csrf v1");
        CsrfKey(mac.finalize().into_bytes().into())
    }

    pub fn for_session(&self, session_cookie: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("hmac takes any key length");
        mac.update(session_cookie.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
}

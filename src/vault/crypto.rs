//! AES-256-GCM under the master key; the associated data binds each ciphertext to its
//! organization and secret id, so a row copied to another organization or id does not decrypt.

use std::io::Write;
use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use rand::RngCore;

/// The vault master key.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey([redacted])")
    }
}

impl MasterKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
    #[cfg(test)]
    pub fn for_tests(b: u8) -> Self {
        MasterKey([b; 32])
    }
}

/// 32 bytes as base64 (standard or url-safe, padded or not) or 64 hex characters.
pub fn parse_master_key(raw: &str) -> Result<MasterKey, String> {
    let raw = raw.trim();
    let bytes = if raw.len() == 64 && raw.chars().all(|c| c.is_ascii_hexdigit()) {
        hex::decode(raw).map_err(|e| e.to_string())?
    } else {
        let engines = [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::URL_SAFE,
            base64::engine::general_purpose::STANDARD_NO_PAD,
            base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ];
        engines.iter().find_map(|e| e.decode(raw).ok()).ok_or("not base64 or hex")?
    };
    let arr: [u8; 32] = bytes.try_into().map_err(|_| "the key must be exactly 32 bytes".to_string())?;
    Ok(MasterKey(arr))
}

/// Reads the key file, or creates it (mode 0600) with a new random key.
pub fn load_or_create_key_file(path: &Path) -> anyhow::Result<MasterKey> {
    if path.exists() {
        let raw = std::fs::read_to_string(path)?;
        return parse_master_key(&raw).map_err(|e| anyhow::anyhow!("vault key file {}: {e}", path.display()));
    }
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            // The data folder holds the key and the database: readable by this account only.
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
    }
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    f.write_all(base64::engine::general_purpose::STANDARD.encode(key).as_bytes())?;
    f.write_all(b"\n")?;
    tracing::info!(path = %path.display(), "created a new vault key file (mode 0600); back it up: secrets cannot be read without it");
    Ok(MasterKey(key))
}

fn aad(org_id: &str, secret_id: &str) -> Vec<u8> {
    format!("agenticos/vault/v1\0{org_id}\0{secret_id}").into_bytes()
}

pub fn encrypt(key: &MasterKey, org_id: &str, secret_id: &str, plaintext: &[u8]) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let cipher = Aes256Gcm::new_from_slice(&key.0).map_err(|_| anyhow::anyhow!("bad key length"))?;
    let mut nonce = [0u8; 12];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let ct = cipher
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: plaintext, aad: &aad(org_id, secret_id) })
        .map_err(|_| anyhow::anyhow!("vault encryption failed"))?;
    Ok((nonce.to_vec(), ct))
}

pub fn decrypt(
    key: &MasterKey,
    org_id: &str,
    secret_id: &str,
    nonce: &[u8],
    ciphertext: &[u8],
) -> anyhow::Result<Vec<u8>> {
    if nonce.len() != 12 {
        anyhow::bail!("vault secret {secret_id}: bad nonce");
    }
    let cipher = Aes256Gcm::new_from_slice(&key.0).map_err(|_| anyhow::anyhow!("bad key length"))?;
    cipher
        .decrypt(Nonce::from_slice(nonce), Payload { msg: ciphertext, aad: &aad(org_id, secret_id) })
        .map_err(|_| anyhow::anyhow!("vault secret {secret_id} does not decrypt (wrong master key or tampered row)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphertext_is_bound_to_its_organization_and_id() {
        let k = MasterKey::for_tests(7);
        let (n, ct) = encrypt(&k, "org-a", "s1", b"hunter2").expect("encrypt");
        assert_eq!(decrypt(&k, "org-a", "s1", &n, &ct).expect("decrypt"), b"hunter2");
        assert!(decrypt(&k, "org-b", "s1", &n, &ct).is_err());
        assert!(decrypt(&k, "org-a", "s2", &n, &ct).is_err());
        assert!(decrypt(&MasterKey::for_tests(8), "org-a", "s1", &n, &ct).is_err());
    }

    #[test]
    fn keys_parse_from_hex_and_base64() {
        assert!(parse_master_key(&"ab".repeat(32)).is_ok());
        assert!(parse_master_key(&base64::engine::general_purpose::STANDARD.encode([1u8; 32])).is_ok());
        assert!(parse_master_key("short").is_err());
        assert!(parse_master_key(&base64::engine::general_purpose::STANDARD.encode([1u8; 16])).is_err());
    }

    #[test]
    fn a_new_key_file_is_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/vault.key");
        let k1 = load_or_create_key_file(&path).expect("create");
        let k2 = load_or_create_key_file(&path).expect("read");
        assert_eq!(k1.bytes(), k2.bytes());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
            let folder = dir.path().join("sub");
            assert_eq!(std::fs::metadata(folder).expect("meta").permissions().mode() & 0o777, 0o700);
        }
    }
}

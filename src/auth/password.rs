//! argon2id password hashing, off the async threads.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use secrecy::{ExposeSecret, SecretString};

use crate::telemetry::spawn_blocking;

fn hasher() -> Argon2<'static> {
    // argon2id, 19 MiB, 2 passes, 1 lane: OWASP's baseline.
    Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(19 * 1024, 2, 1, None).expect("valid params"),
    )
}

pub async fn hash(password: SecretString) -> anyhow::Result<String> {
    spawn_blocking(move || {
        let salt = SaltString::generate(&mut rand::rngs::OsRng);
        hasher()
            .hash_password(password.expose_secret().as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("argon2: {e}"))
    })
    .await?
}

/// Verifies `password` against `stored`; with no stored hash it still spends the same work so a
/// wrong e-mail and a wrong password take as long.
pub async fn verify(password: SecretString, stored: Option<String>) -> anyhow::Result<bool> {
    spawn_blocking(move || {
        let stored = stored.unwrap_or_else(|| DUMMY.to_string());
        let parsed = PasswordHash::new(&stored).map_err(|e| anyhow::anyhow!("argon2: {e}"))?;
        let ok = hasher().verify_password(password.expose_secret().as_bytes(), &parsed).is_ok();
        Ok(ok && stored != DUMMY)
    })
    .await?
}

/// A valid argon2id hash of a random string, verified against when the account does not exist.
const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Wv0zh0E1eJ2bTJ4R7mS8bM3zU8Yf8m5lJ4cVdRuzM6k";

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_only_its_password() {
        let h = hash(SecretString::from("correct horse battery")).await.expect("hash");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify(SecretString::from("correct horse battery"), Some(h.clone())).await.expect("verify"));
        assert!(!verify(SecretString::from("wrong"), Some(h)).await.expect("verify"));
        assert!(!verify(SecretString::from("anything"), None).await.expect("verify"));
    }
}

//! Two-factor sign-in with TOTP (issue 49, item 7), as on GitHub and GitLab: an account enrols
//! with a QR code (or the secret typed in), confirms with a first code, and gets ten one-time
//! recovery codes, shown once. Its sign-ins then take a second step after the password
//! ([`sign_in`]); owners may require it of an organization's members. API tokens are not
//! concerned: a token is its own credential, made by a signed-in person and revocable.
//!
//! The secret is AES-256-GCM under the vault master key, bound to the account's id (a row copied
//! to another account does not decrypt). Recovery codes are kept as SHA-256 hashes: each has 80
//! random bits, so a slow hash (argon2id) would add nothing against guessing from a stolen
//! database and cost ten hashings per attempt; API tokens are kept the same way.

pub mod codes;
pub mod service;
pub mod sign_in;
pub mod store;

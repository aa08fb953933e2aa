//! The codes of two-factor sign-in, with no database: TOTP (RFC 6238: SHA-1, 6 digits, 30-second
//! steps, as every authenticator app reads an `otpauth://` QR code) through the `totp-rs` crate,
//! the QR code as an SVG through the `qrcode` crate, and the recovery codes.

use base64::Engine;
use rand::RngCore;
use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, Secret, TOTP};

/// Seconds per code.
pub const STEP_SECONDS: u64 = 30;
/// How many steps a code may be off either way (a phone's clock a little fast or slow).
pub const SKEW_STEPS: u64 = 1;
/// Recovery codes handed out at once.
pub const RECOVERY_CODES: usize = 10;
/// The issuer an authenticator app lists the account under.
const ISSUER: &str = "agenticos";

/// A new TOTP secret: 20 random bytes (160 bits, RFC 4226's recommended length).
pub fn new_secret() -> Vec<u8> {
    let mut secret = vec![0u8; 20];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    secret
}

fn totp(secret: &[u8], email: &str) -> anyhow::Result<TOTP> {
    // An authenticator app shows `issuer:account`; a colon in the account would split it.
    let account = email.replace(':', "");
    TOTP::new(Algorithm::SHA1, 6, SKEW_STEPS as u8, STEP_SECONDS, secret.to_vec(), Some(ISSUER.to_string()), account)
        .map_err(|e| anyhow::anyhow!("TOTP secret refused: {e}"))
}

/// The secret as base32, for typing it into an app by hand.
pub fn secret_text(secret: &[u8]) -> String {
    Secret::Raw(secret.to_vec()).to_encoded().to_string()
}

/// The `otpauth://totp/…` address an app reads from the QR code.
pub fn otpauth_url(secret: &[u8], email: &str) -> anyhow::Result<String> {
    Ok(totp(secret, email)?.get_url())
}

/// The QR code of the `otpauth://` address as an SVG `data:` URI for an `<img>` (the page's
/// Content-Security-Policy allows `img-src data:`; no inline style or script is needed).
pub fn qr_data_uri(secret: &[u8], email: &str) -> anyhow::Result<String> {
    let url = otpauth_url(secret, email)?;
    let code = qrcode::QrCode::new(url.as_bytes()).map_err(|e| anyhow::anyhow!("QR code: {e}"))?;
    let svg = code.render::<qrcode::render::svg::Color>().min_dimensions(240, 240).quiet_zone(true).build();
    Ok(format!("data:image/svg+xml;base64,{}", base64::engine::general_purpose::STANDARD.encode(svg)))
}

/// The step of `unix_seconds`.
pub fn step_of(unix_seconds: u64) -> u64 {
    unix_seconds / STEP_SECONDS
}

/// The step whose code `code` is, within [`SKEW_STEPS`] of `unix_seconds`'s step; `None` for a
/// code that is none of them (or not six digits). Which step matters: a code is accepted once,
/// and only for a step after the last one accepted.
pub fn matching_step(secret: &[u8], email: &str, code: &str, unix_seconds: u64) -> anyhow::Result<Option<u64>> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.chars().all(|c| c.is_ascii_digit()) {
        return Ok(None);
    }
    let t = totp(secret, email)?;
    let now = step_of(unix_seconds);
    let mut found = None;
    // Every candidate is compared, in constant time, whichever matches.
    for step in now.saturating_sub(SKEW_STEPS)..=now + SKEW_STEPS {
        let expected = t.generate(step * STEP_SECONDS);
        if bool::from(expected.as_bytes().ct_eq(code.as_bytes())) {
            found = Some(step);
        }
    }
    Ok(found)
}

/// Ten recovery codes, `xxxx-xxxx-xxxx-xxxx`: 16 characters of a 32-letter alphabet (no `l`, `o`,
/// `0`, `1`), 80 random bits each.
pub fn new_recovery_codes() -> Vec<String> {
    const ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";
    (0..RECOVERY_CODES)
        .map(|_| {
            let mut buf = [0u8; 16];
            rand::rngs::OsRng.fill_bytes(&mut buf);
            let chars: Vec<char> = buf.iter().map(|b| ALPHABET[(*b & 31) as usize] as char).collect();
            chars.chunks(4).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>().join("-")
        })
        .collect()
}

/// A recovery code as typed (any case, with or without dashes and spaces) in the one spelling
/// that is hashed: lower case with its dashes; `None` when it cannot be one.
pub fn normalized_recovery_code(typed: &str) -> Option<String> {
    let letters: String =
        typed.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_lowercase()).collect();
    if letters.len() != 16 || !letters.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let chars: Vec<char> = letters.chars().collect();
    Some(chars.chunks(4).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>().join("-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_matches_its_own_step_and_one_either_side_only() {
        let secret = new_secret();
        let t = totp(&secret, "a@example.com").expect("totp");
        let now = 1_800_000_000;
        let at = |step: u64| t.generate(step * STEP_SECONDS);
        let s = step_of(now);
        for (step, expected) in [(s - 2, None), (s - 1, Some(s - 1)), (s, Some(s)), (s + 1, Some(s + 1)), (s + 2, None)]
        {
            let code = at(step);
            // Another step may share a code by chance (one in a million): then it is that step.
            let found = matching_step(&secret, "a@example.com", &code, now).expect("check");
            if expected.is_none() {
                assert!(found.is_none() || found.is_some_and(|f| at(f) == code), "{step}");
            } else {
                assert!(found.is_some_and(|f| at(f) == code), "{step}");
            }
        }
        assert_eq!(matching_step(&secret, "a@example.com", "12345", now).expect("check"), None);
        assert_eq!(matching_step(&secret, "a@example.com", "abcdef", now).expect("check"), None);
    }

    #[test]
    fn recovery_codes_are_ten_distinct_80_bit_codes_read_in_any_spelling() {
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), 10);
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 10);
        for c in &codes {
            assert_eq!(c.len(), 19, "{c}");
            assert_eq!(normalized_recovery_code(c).as_deref(), Some(c.as_str()));
            let typed = c.replace('-', " ").to_uppercase();
            assert_eq!(normalized_recovery_code(&typed).as_deref(), Some(c.as_str()));
        }
        assert_eq!(normalized_recovery_code("123456"), None);
    }

    #[test]
    fn the_qr_code_is_an_svg_of_the_otpauth_address() {
        let secret = new_secret();
        let url = otpauth_url(&secret, "a@example.com").expect("url");
        assert!(url.starts_with("otpauth://totp/agenticos:a%40example.com?"), "{url}");
        assert!(url.contains(&format!("secret={}", secret_text(&secret))), "{url}");
        let uri = qr_data_uri(&secret, "a@example.com").expect("qr");
        let svg = base64::engine::general_purpose::STANDARD
            .decode(uri.trim_start_matches("data:image/svg+xml;base64,"))
            .expect("base64");
        assert!(String::from_utf8(svg).expect("utf-8").contains("<svg"));
    }
}

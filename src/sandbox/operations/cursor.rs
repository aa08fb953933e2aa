//! Opaque page cursors: a position in the log's order (time, id) and which way to read from it.
//! A cursor is URL-safe base64 of `o1.{a|b}.{created_at}.{id}`; anything else — another version,
//! a negative time, an id that is not a UUID, stray bytes — is refused, never guessed at. A
//! cursor carries no organization: the query is always the caller's own, so a cursor from
//! another organization only names a position.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// Which way a page reads from its cursor's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Older rows than the position (the "next" page, newest first).
    After,
    /// Newer rows than the position (the "previous" page, and new rows while one looks).
    Before,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub direction: Direction,
    pub created_at: i64,
    pub id: String,
}

const VERSION: &str = "o1";
/// Longer than any cursor we write.
const MAX_LEN: usize = 120;

impl Cursor {
    pub fn after(created_at: i64, id: &str) -> Cursor {
        Cursor { direction: Direction::After, created_at, id: id.to_string() }
    }

    pub fn before(created_at: i64, id: &str) -> Cursor {
        Cursor { direction: Direction::Before, created_at, id: id.to_string() }
    }

    pub fn encode(&self) -> String {
        let d = match self.direction {
            Direction::After => 'a',
            Direction::Before => 'b',
        };
        URL_SAFE_NO_PAD.encode(format!("{VERSION}.{d}.{}.{}", self.created_at, self.id))
    }

    /// The cursor `raw` encodes, or `None` for anything we did not write.
    pub fn decode(raw: &str) -> Option<Cursor> {
        if raw.is_empty() || raw.len() > MAX_LEN {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let mut parts = text.split('.');
        let (version, d, time, id) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version != VERSION || parts.next().is_some() {
            return None;
        }
        let direction = match d {
            "a" => Direction::After,
            "b" => Direction::Before,
            _ => return None,
        };
        if time.is_empty() || time.len() > 15 || !time.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let created_at = time.parse().ok()?;
        let uuid = uuid::Uuid::parse_str(id).ok()?;
        if uuid.hyphenated().to_string() != id {
            return None;
        }
        Some(Cursor { direction, created_at, id: id.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b";

    #[test]
    fn a_cursor_reads_back_as_written() {
        for c in [Cursor::after(1_764_633_600_000, ID), Cursor::before(0, ID)] {
            assert_eq!(Cursor::decode(&c.encode()), Some(c));
        }
    }

    #[test]
    fn anything_we_did_not_write_is_refused() {
        let enc = |s: &str| URL_SAFE_NO_PAD.encode(s);
        for raw in [
            String::new(),
            "not base64!".into(),
            enc("o2.a.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            enc("o1.x.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            enc("o1.a.-1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            enc("o1.a.1.not-an-id"),
            enc("o1.a.1.0B8F5E2A-3C1D-4E5F-8A9B-1C2D3E4F5A6B"),
            enc("o1.a.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b.extra"),
            enc("o1.a.99999999999999999999.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            "A".repeat(500),
        ] {
            assert_eq!(Cursor::decode(&raw), None, "{raw}");
        }
    }
}

//! Opaque page cursors: a position in the log's order (time, id) and which way to read from it.
//! A cursor is URL-safe base64 of `o2.{a|b}.{created_at}.{id}.{rank}.{top_created_at}.{top_id}`
//! (or, written before ranks, `o1.{a|b}.{created_at}.{id}`); anything else — another version, a
//! negative time, an id that is not a UUID, stray bytes — is refused, never guessed at. A cursor
//! carries no organization: the query is always the caller's own, so a cursor from another
//! organization only names a position.
//!
//! The rank is the row's place among the matching rows counted from the `top` row (the newest
//! match when the first page was read, rank 1; a newer row has rank 0 or less): a deep page knows
//! its position from it without counting the rows before it, only those that arrived since
//! ([`Rank`]).

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
    /// The row's rank, when the cursor was written with one.
    pub rank: Option<Rank>,
}

/// A row's place among the matching rows: `rank` counted from `top` (rank 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    pub rank: i64,
    pub top_created_at: i64,
    pub top_id: String,
}

const VERSION: &str = "o2";
const UNRANKED: &str = "o1";
/// Longer than any cursor we write.
const MAX_LEN: usize = 200;

impl Cursor {
    pub fn after(created_at: i64, id: &str) -> Cursor {
        Cursor { direction: Direction::After, created_at, id: id.to_string(), rank: None }
    }

    pub fn before(created_at: i64, id: &str) -> Cursor {
        Cursor { direction: Direction::Before, created_at, id: id.to_string(), rank: None }
    }

    /// This cursor with its row's rank.
    pub fn ranked(self, rank: Option<Rank>) -> Cursor {
        Cursor { rank, ..self }
    }

    pub fn encode(&self) -> String {
        let d = match self.direction {
            Direction::After => 'a',
            Direction::Before => 'b',
        };
        match &self.rank {
            Some(r) => URL_SAFE_NO_PAD.encode(format!(
                "{VERSION}.{d}.{}.{}.{}.{}.{}",
                self.created_at, self.id, r.rank, r.top_created_at, r.top_id
            )),
            None => URL_SAFE_NO_PAD.encode(format!("{UNRANKED}.{d}.{}.{}", self.created_at, self.id)),
        }
    }

    /// The cursor `raw` encodes, or `None` for anything we did not write.
    pub fn decode(raw: &str) -> Option<Cursor> {
        if raw.is_empty() || raw.len() > MAX_LEN {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let parts: Vec<&str> = text.split('.').collect();
        let (d, time, id, rank) = match parts.as_slice() {
            [UNRANKED, d, time, id] => (*d, *time, *id, None),
            [VERSION, d, time, id, rank, top_time, top_id] => {
                let rank = rank.strip_prefix('-').map_or_else(|| digits(rank), |r| digits(r).map(|n| -n))?;
                (*d, *time, *id, Some(Rank { rank, top_created_at: digits(top_time)?, top_id: uuid_text(top_id)? }))
            }
            _ => return None,
        };
        let direction = match d {
            "a" => Direction::After,
            "b" => Direction::Before,
            _ => return None,
        };
        Some(Cursor { direction, created_at: digits(time)?, id: uuid_text(id)?, rank })
    }
}

/// A time or a rank: 1 to 15 decimal digits.
fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 15 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A UUID as we write it (lower-case, hyphenated).
fn uuid_text(text: &str) -> Option<String> {
    let uuid = uuid::Uuid::parse_str(text).ok()?;
    (uuid.hyphenated().to_string() == text).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b";

    #[test]
    fn a_cursor_reads_back_as_written() {
        let rank = |rank| Some(Rank { rank, top_created_at: 1_764_633_600_001, top_id: ID.to_string() });
        for c in [
            Cursor::after(1_764_633_600_000, ID),
            Cursor::before(0, ID),
            Cursor::after(1_764_633_600_000, ID).ranked(rank(51)),
            Cursor::before(5, ID).ranked(rank(-3)),
        ] {
            assert_eq!(Cursor::decode(&c.encode()), Some(c));
        }
    }

    #[test]
    fn anything_we_did_not_write_is_refused() {
        let enc = |s: &str| URL_SAFE_NO_PAD.encode(s);
        for raw in [
            String::new(),
            "not base64!".into(),
            enc("o3.a.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            enc("o2.a.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            enc("o2.a.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b.x.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b"),
            enc("o2.a.1.0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b.1.1.nope"),
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

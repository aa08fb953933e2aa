//! A file's modification time as the host wrote it (`2026-11-29T21:01:32.206251+00:00`), kept
//! inline: a listing holds up to 2,000 of them per workspace and a page a hundred thousand, so
//! none of them is a separate allocation. Compared as the host's text (one format per host).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// Longest time kept; a longer one (no host writes one) is read as unknown.
const MAX: usize = 39;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    len: u8,
    bytes: [u8; MAX],
}

impl Stamp {
    pub fn new(text: &str) -> Option<Stamp> {
        let len = text.len();
        if len > MAX {
            return None;
        }
        let mut bytes = [0; MAX];
        bytes[..len].copy_from_slice(text.as_bytes());
        Some(Stamp { len: len as u8, bytes })
    }

    pub fn as_str(&self) -> &str {
        // Built only from a whole `&str` in `new`.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl Ord for Stamp {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// `#[serde(deserialize_with)]` for an optional time: null, absent (with `default`) or too long
/// is `None`; the text is copied inline, never allocated.
pub fn optional<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Stamp>, D::Error> {
    struct Optional;
    impl<'de> Visitor<'de> for Optional {
        type Value = Option<Stamp>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an ISO-8601 time or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(Optional)
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Stamp::new(text))
        }
    }
    deserializer.deserialize_option(Optional)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Row {
        #[serde(default, deserialize_with = "optional")]
        at: Option<Stamp>,
    }

    fn at(json: &str) -> Option<String> {
        serde_json::from_str::<Row>(json).expect("row").at.map(|s| s.as_str().to_string())
    }

    #[test]
    fn a_time_is_kept_as_written_and_null_absent_or_overlong_is_unknown() {
        let t = "2026-11-29T21:01:32.206251+00:00";
        assert_eq!(at(&format!(r#"{{"at":"{t}"}}"#)).as_deref(), Some(t));
        assert_eq!(at(r#"{"at":"2026-11-29T21:01:32\u002e5Z"}"#).as_deref(), Some("2026-11-29T21:01:32.5Z"));
        assert_eq!(at(r#"{"at":null}"#), None);
        assert_eq!(at("{}"), None);
        assert_eq!(at(&format!(r#"{{"at":"{}"}}"#, "9".repeat(MAX + 1))), None);
        assert!(serde_json::from_str::<Row>(r#"{"at":5}"#).is_err());
    }

    #[test]
    fn times_order_as_their_text() {
        let a = Stamp::new("2026-11-29T21:01:32.206251+00:00").expect("a");
        let b = Stamp::new("2026-11-29T21:01:33+00:00").expect("b");
        let short = Stamp::new("2026").expect("short");
        assert!(a < b && short < a);
        assert_eq!(Some(a).max(None), Some(a));
    }
}

//! Each organization's operation vocabulary — which operations its log holds — for a minute, so
//! the filter's choices cost no query on most requests (and never a DISTINCT over the table); and
//! which trigrams a search term is narrowed by, for a minute, so the pager and the Activity tab's
//! poll for new rows, which ask the same search again and again, do not count them each time.

use std::time::Duration;

use crate::cache::TtlCache;
use crate::sandbox::log::model::Narrowing;

pub const VOCABULARY_TTL: Duration = Duration::from_secs(60);

/// Operations by organization id.
pub struct VocabularyCache(TtlCache<String, Vec<String>>);

impl Default for VocabularyCache {
    fn default() -> Self {
        VocabularyCache(TtlCache::new(VOCABULARY_TTL, 10_000))
    }
}

impl VocabularyCache {
    pub fn get(&self, org_id: &str) -> Option<Vec<String>> {
        self.0.get(&org_id.to_string())
    }
    pub fn put(&self, org_id: &str, ops: Vec<String>) {
        self.0.put(org_id.to_string(), ops);
    }
}

pub const SEARCH_TTL: Duration = Duration::from_secs(60);

/// How a search is read, which its narrowing depends on: whether the filter lets it be read in
/// time order ([`crate::sandbox::log::LogStore::reads_index_in_time_order`]: on SQLite a term
/// alone is never walked to, the same term with a session or failures only may be), and the rows
/// read at a time (a page's limit and one more, an export's batch: the larger, the more common a
/// term must be to be walked to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SearchKind {
    pub in_time_order: bool,
    pub page: u32,
}

/// [`crate::sandbox::log::Reader::search_narrowing_for`]'s answer by organization id, term and
/// [`SearchKind`]. A stale answer only narrows less well (any choice of the term's trigrams finds
/// every row that holds it).
pub struct SearchCache(TtlCache<(String, String, SearchKind), Option<Narrowing>>);

impl Default for SearchCache {
    fn default() -> Self {
        SearchCache(TtlCache::new(SEARCH_TTL, 10_000))
    }
}

impl SearchCache {
    pub fn get(&self, org_id: &str, q: &str, kind: SearchKind) -> Option<Option<Narrowing>> {
        self.0.get(&(org_id.to_string(), q.to_string(), kind))
    }
    pub fn put(&self, org_id: &str, q: &str, kind: SearchKind, narrowing: Option<Narrowing>) {
        self.0.put((org_id.to_string(), q.to_string(), kind), narrowing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_read_in_time_order_and_the_same_term_walked_to_are_cached_apart() {
        let cache = SearchCache::default();
        let (in_order, walked) =
            (SearchKind { in_time_order: true, page: 51 }, SearchKind { in_time_order: false, page: 51 });
        cache.put("org", "cargo", in_order, Some(Narrowing::Fts("\"car\"".into())));
        assert_eq!(cache.get("org", "cargo", walked), None, "a failures-only search asks again");
        cache.put("org", "cargo", walked, Some(Narrowing::Common));
        assert_eq!(cache.get("org", "cargo", in_order), Some(Some(Narrowing::Fts("\"car\"".into()))));
        assert_eq!(cache.get("org", "cargo", walked), Some(Some(Narrowing::Common)));
        assert_eq!(cache.get("other", "cargo", in_order), None);
    }

    #[test]
    fn a_term_read_by_pages_of_another_size_is_cached_apart() {
        let cache = SearchCache::default();
        let (small, large) =
            (SearchKind { in_time_order: false, page: 51 }, SearchKind { in_time_order: false, page: 201 });
        cache.put("org", "module42", small, Some(Narrowing::Common));
        assert_eq!(cache.get("org", "module42", large), None, "a page of 200 asks again");
        cache.put("org", "module42", large, Some(Narrowing::Grams(vec!["e42".into()])));
        assert_eq!(cache.get("org", "module42", small), Some(Some(Narrowing::Common)));
    }
}

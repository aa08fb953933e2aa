//! Each organization's operation vocabulary — which operations its log holds — for a minute, so
//! the filter's choices cost no query on most requests (and never a DISTINCT over the table).

use std::time::Duration;

use crate::cache::TtlCache;

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

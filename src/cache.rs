//! A small map whose entries expire and whose size is capped: what the hot paths keep for a few
//! seconds (resolved runs, built clients, token answers). Each capability's `cache.rs` names its
//! own; each lives in `AppState` (never in a `static`: two consoles in one process keep their own).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct TtlCache<K, V> {
    ttl: Duration,
    /// At most this many entries: past it, expired ones are dropped before another is added, and
    /// then the oldest quarter when that was not enough.
    max: usize,
    map: Mutex<HashMap<K, (Instant, V)>>,
    /// Bumped by [`TtlCache::clear`], so an answer looked up before a clear is not kept after it.
    generation: AtomicU64,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, max: usize) -> Self {
        TtlCache { ttl, max: max.max(1), map: Mutex::new(HashMap::new()), generation: AtomicU64::new(0) }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, (Instant, V)>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live value for `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.lock().get(key).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, v)| v.clone())
    }

    /// The value for `key` and when it was put, live or expired (until it is dropped).
    pub fn peek(&self, key: &K) -> Option<(Instant, V)> {
        self.lock().get(key).map(|(at, v)| (*at, v.clone()))
    }

    pub fn put(&self, key: K, value: V) {
        self.put_at(key, value, Instant::now());
    }

    /// Keeps `value` as if put at `at` (no later than now): it expires a TTL after `at`.
    pub fn put_at(&self, key: K, value: V, at: Instant) {
        let mut map = self.lock();
        self.insert(&mut map, key, value, at.min(Instant::now()));
    }

    fn insert(&self, map: &mut HashMap<K, (Instant, V)>, key: K, value: V, at: Instant) {
        if map.len() >= self.max && !map.contains_key(&key) {
            let ttl = self.ttl;
            map.retain(|_, (at, _)| at.elapsed() < ttl);
            if map.len() >= self.max {
                // The oldest quarter goes at once, so a full cache is not scanned on every insert.
                let mut ages: Vec<Instant> = map.values().map(|(at, _)| *at).collect();
                let cut = ages.len() / 4;
                let (_, oldest_kept, _) = ages.select_nth_unstable(cut);
                let oldest_kept = *oldest_kept;
                map.retain(|_, (at, _)| *at >= oldest_kept);
                if map.len() >= self.max {
                    // Every entry as old as the others: make room anyway.
                    map.clear();
                }
            }
        }
        map.insert(key, (at, value));
    }

    /// The generation to hand back to [`TtlCache::put_unless_cleared`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Keeps `value` unless the cache was cleared since `generation` was read.
    pub fn put_unless_cleared(&self, key: K, value: V, generation: u64) {
        let mut map = self.lock();
        if self.generation() == generation {
            self.insert(&mut map, key, value, Instant::now());
        }
    }

    pub fn remove(&self, key: &K) {
        self.lock().remove(key);
    }

    /// Drops every entry for which `keep` is false.
    pub fn retain(&self, keep: impl Fn(&K, &V) -> bool) {
        self.lock().retain(|k, (_, v)| keep(k, v));
    }

    pub fn clear(&self) {
        let mut map = self.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::TtlCache;
    use std::time::Duration;

    #[test]
    fn an_entry_is_served_until_it_expires() {
        let c = TtlCache::new(Duration::from_secs(60), 10);
        c.put("a", 1);
        assert_eq!(c.get(&"a"), Some(1));
        let expired = TtlCache::new(Duration::ZERO, 10);
        expired.put("a", 1);
        assert_eq!(expired.get(&"a"), None);
    }

    #[test]
    fn an_expired_entry_can_be_peeked_at_and_put_back_as_of_an_earlier_moment() {
        let c = TtlCache::new(Duration::from_secs(60), 10);
        let long_ago = std::time::Instant::now() - Duration::from_secs(120);
        c.put_at("a", 1, long_ago);
        assert_eq!(c.get(&"a"), None, "put as of two minutes ago, a TTL of one");
        assert_eq!(c.peek(&"a"), Some((long_ago, 1)));
        c.put_at("a", 2, std::time::Instant::now() - Duration::from_secs(30));
        assert_eq!(c.get(&"a"), Some(2));
        assert_eq!(c.peek(&"b"), None);
    }

    #[test]
    fn an_answer_looked_up_before_a_clear_is_not_kept() {
        let c = TtlCache::new(Duration::from_secs(60), 10);
        let generation = c.generation();
        c.clear();
        c.put_unless_cleared("a", 1, generation);
        assert_eq!(c.get(&"a"), None);
        c.put_unless_cleared("a", 2, c.generation());
        assert_eq!(c.get(&"a"), Some(2));
    }

    #[test]
    fn a_full_cache_drops_its_oldest_live_entries_and_never_grows_past_its_cap() {
        let c = TtlCache::new(Duration::from_secs(60), 8);
        let start = std::time::Instant::now() - Duration::from_secs(30);
        for i in 0..8 {
            c.put_at(i, i, start + Duration::from_secs(i as u64));
        }
        c.put(8, 8);
        assert_eq!(c.get(&0), None, "the oldest went");
        assert_eq!(c.get(&1), None, "the oldest quarter went");
        assert_eq!(c.get(&2), Some(2));
        assert_eq!(c.get(&8), Some(8));
        for i in 9..1000 {
            c.put(i, i);
        }
        assert!(c.lock().len() <= 8, "{} entries", c.lock().len());
        assert_eq!(c.get(&999), Some(999));
    }

    #[test]
    fn retain_and_remove_drop_entries() {
        let c = TtlCache::new(Duration::from_secs(60), 10);
        c.put(1, "x");
        c.put(2, "y");
        c.retain(|k, _| *k != 1);
        assert_eq!(c.get(&1), None);
        c.remove(&2);
        assert_eq!(c.get(&2), None);
    }
}

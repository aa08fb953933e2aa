//! Recently authenticated tokens of this console, by hash, for [`AUTH_CACHE_TTL`]: a revoke, a
//! role change or a removal in this console clears them at once; another replica notices within
//! the TTL. Kept in `AppState` (`token_callers`): another console in the same process never
//! answers from it.

use std::time::Duration;

use super::model::TokenCaller;
use crate::cache::TtlCache;

pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(2);

/// At most this many token answers are kept (the oldest go first).
pub const AUTH_CACHE_MAX: usize = 10_000;

/// Token answers by the token's hash.
pub struct TokenCallers(TtlCache<String, TokenCaller>);

impl Default for TokenCallers {
    fn default() -> Self {
        TokenCallers(TtlCache::new(AUTH_CACHE_TTL, AUTH_CACHE_MAX))
    }
}

impl TokenCallers {
    pub fn get(&self, hash: &str) -> Option<TokenCaller> {
        self.0.get(&hash.to_string())
    }

    /// The generation to hand back to [`TokenCallers::put_unless_forgotten`].
    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Keeps `caller` unless every answer was forgotten since `generation` was read.
    pub fn put_unless_forgotten(&self, hash: String, caller: TokenCaller, generation: u64) {
        self.0.put_unless_cleared(hash, caller, generation);
    }

    /// Forgets every cached answer (a token was revoked, a role changed, a member left).
    pub fn forget_all(&self) {
        self.0.clear();
    }
}

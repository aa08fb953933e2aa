//! Recently authenticated tokens of this process, by hash, for [`AUTH_CACHE_TTL`]: a revoke, a
//! role change or a removal in this process clears them at once; another replica notices within
//! the TTL.

use std::sync::LazyLock;
use std::time::Duration;

use super::model::TokenCaller;
use crate::cache::TtlCache;

pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(2);

pub static AUTH_CACHE: LazyLock<TtlCache<String, TokenCaller>> =
    LazyLock::new(|| TtlCache::new(AUTH_CACHE_TTL, 10_000));

/// Forgets every cached token answer (a token was revoked, a role changed, a member left).
pub fn forget_cached_callers() {
    AUTH_CACHE.clear();
}

//! Live usage of session containers: one stats answer per container (the engine's two samples a
//! second apart, so CPU is a rate), a few containers at a time, each within a deadline. A
//! container that is gone, or an engine that does not answer, is simply not in the answer.

use std::collections::HashMap;
use std::time::Duration;

use bollard::container::{MemoryStatsStats, Stats, StatsOptions};
use futures_util::StreamExt as _;

use super::engine::Engine;

/// How long one container's sample may take (the engine itself waits about a second).
pub const SAMPLE_TIMEOUT: Duration = Duration::from_secs(3);
/// Containers sampled at once.
pub const CONCURRENCY: usize = 4;

/// What the engine measured of one container.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Memory in use, page cache that can be dropped left out (as `docker stats` shows it).
    pub memory_bytes: Option<u64>,
    /// The container's memory limit (the host's memory when it has none).
    pub memory_limit_bytes: Option<u64>,
    /// CPU over the sample, in percent of one core (200 = two cores busy).
    pub cpu_percent: Option<f64>,
}

/// The usage in one stats answer.
pub fn of_stats(s: &Stats) -> Usage {
    let m = &s.memory_stats;
    let reclaimable = match m.stats {
        Some(MemoryStatsStats::V1(v1)) => v1.total_inactive_file,
        Some(MemoryStatsStats::V2(v2)) => v2.inactive_file,
        None => 0,
    };
    let memory_bytes = m.usage.map(|u| u.saturating_sub(reclaimable));
    let cpu = s.cpu_stats.cpu_usage.total_usage.checked_sub(s.precpu_stats.cpu_usage.total_usage);
    let system = match (s.cpu_stats.system_cpu_usage, s.precpu_stats.system_cpu_usage) {
        (Some(now), Some(before)) => now.checked_sub(before).filter(|d| *d > 0),
        _ => None,
    };
    let cores = s
        .cpu_stats
        .online_cpus
        .or_else(|| s.cpu_stats.cpu_usage.percpu_usage.as_ref().map(|p| p.len() as u64))
        .filter(|n| *n > 0)
        .unwrap_or(1);
    // No earlier sample (`precpu` empty): no rate.
    let cpu_percent = match (cpu, system) {
        (Some(c), Some(sys)) if s.precpu_stats.cpu_usage.total_usage > 0 => {
            Some(c as f64 / sys as f64 * cores as f64 * 100.0)
        }
        _ => None,
    };
    Usage { memory_bytes, memory_limit_bytes: m.limit.filter(|l| *l > 0), cpu_percent }
}

impl Engine {
    /// One container's usage, or none (gone, not running, too slow, unreadable).
    pub async fn usage_of(&self, container: &str) -> Option<Usage> {
        let options = StatsOptions { stream: false, one_shot: false };
        let mut answers = self.docker().stats(container, Some(options));
        match tokio::time::timeout(SAMPLE_TIMEOUT, answers.next()).await {
            Ok(Some(Ok(stats))) => Some(of_stats(&stats)),
            Ok(Some(Err(e))) => {
                tracing::debug!(event = "docker_stats_failed", container, error = %e);
                None
            }
            _ => None,
        }
    }

    /// The usage of each of `containers` that answered, [`CONCURRENCY`] at a time.
    pub async fn usage_of_all(&self, containers: Vec<String>) -> HashMap<String, Usage> {
        futures_util::stream::iter(containers)
            .map(|name| async move { self.usage_of(&name).await.map(|u| (name, u)) })
            .buffer_unordered(CONCURRENCY)
            .filter_map(|found| async move { found })
            .collect()
            .await
    }
}

//! Metrics: what the console counts and times, in Prometheus's names, and the recorder that keeps
//! them (the `metrics` facade with `metrics-exporter-prometheus`).
//!
//! Nothing is kept until [`install`] ran (only when `AGENTICOS_METRICS=1`): before that every
//! function here is the facade's no-op. Labels are bounded words only: a route *pattern*, a status
//! class, a connection id, an operation or sweep name, an outcome word. Never an organization,
//! a user, a path, an address or a key (tests/api/metrics.rs checks the rendered text).

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, gauge, histogram, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub const HTTP_REQUESTS: &str = "agenticos_http_requests_total";
pub const HTTP_DURATION: &str = "agenticos_http_request_duration_seconds";
pub const HOST_CALLS: &str = "agenticos_sandbox_host_calls_total";
pub const HOST_CALL_DURATION: &str = "agenticos_sandbox_host_call_duration_seconds";
pub const OPEN_SESSIONS: &str = "agenticos_sandbox_open_sessions";
pub const OPERATIONS_RECORDED: &str = "agenticos_workspace_operations_recorded_total";
pub const RECORDING_QUEUE: &str = "agenticos_recording_queue_depth";
pub const RECORDING_DROPPED: &str = "agenticos_recording_dropped_total";
pub const TOMBSTONES_PENDING: &str = "agenticos_tombstones_pending";
pub const TOMBSTONES_OVERDUE: &str = "agenticos_tombstones_overdue";
pub const HOST_DOWN_SECONDS: &str = "agenticos_sandbox_host_down_seconds";
pub const HOST_CHECK_AGE: &str = "agenticos_sandbox_host_check_age_seconds";
pub const DESTROY_ATTEMPTS: &str = "agenticos_tombstone_destroy_attempts_total";
pub const SWEEP_RUNS: &str = "agenticos_sweep_runs_total";
pub const SWEEP_ROWS_REMOVED: &str = "agenticos_sweep_rows_removed_total";
pub const SWEEP_LAST_FAILED: &str = "agenticos_sweep_last_run_failed";
pub const DB_POOL_CONNECTIONS: &str = "agenticos_db_pool_connections";
pub const DB_POOL_IN_USE: &str = "agenticos_db_pool_in_use";
pub const DB_POOL_WAIT: &str = "agenticos_db_pool_acquire_wait_seconds";
pub const BUILD_INFO: &str = "agenticos_build_info";

/// Every metric this console exports (the Grafana dashboard may query only these).
pub const ALL: &[&str] = &[
    HTTP_REQUESTS,
    HTTP_DURATION,
    HOST_CALLS,
    HOST_CALL_DURATION,
    OPEN_SESSIONS,
    OPERATIONS_RECORDED,
    RECORDING_QUEUE,
    RECORDING_DROPPED,
    TOMBSTONES_PENDING,
    TOMBSTONES_OVERDUE,
    HOST_DOWN_SECONDS,
    HOST_CHECK_AGE,
    DESTROY_ATTEMPTS,
    SWEEP_RUNS,
    SWEEP_ROWS_REMOVED,
    SWEEP_LAST_FAILED,
    DB_POOL_CONNECTIONS,
    DB_POOL_IN_USE,
    DB_POOL_WAIT,
    BUILD_INFO,
];

/// The sweeps the console runs while serving, as the `sweep` label names them.
pub const SWEEP_DESTROY_RETRY: &str = "sandbox-destroy-retry";
pub const SWEEP_OPERATION_LOG: &str = "operation-log-retention";
pub const SWEEP_SIGN_INS: &str = "sign-in-expiry";
const SWEEPS: [&str; 3] = [SWEEP_DESTROY_RETRY, SWEEP_OPERATION_LOG, SWEEP_SIGN_INS];

/// The histograms' buckets, in seconds: 1 ms to 30 s.
const BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's recorder once (a second call returns the first one's handle) and
/// describes every metric.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(BUCKETS)
        .map_err(|e| anyhow::anyhow!("metrics buckets: {e}"))?
        .install_recorder()
        .map_err(|e| anyhow::anyhow!("the metrics recorder could not be installed: {e}"))?;
    describe();
    register_zeros();
    let handle = HANDLE.get_or_init(|| handle).clone();
    // Histograms keep their samples until drained: drain them even when nobody scrapes.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let upkeep = handle.clone();
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            loop {
                tick.tick().await;
                upkeep.run_upkeep();
            }
        });
    }
    Ok(handle)
}

/// The installed recorder's handle, if [`install`] ran.
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE.get()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(HTTP_REQUESTS, "HTTP requests answered, by route pattern, method and status class");
    describe_histogram!(HTTP_DURATION, Unit::Seconds, "HTTP request latency, by route pattern and status class");
    describe_counter!(HOST_CALLS, "Calls to sandbox hosts, by connection id, operation and outcome");
    describe_histogram!(HOST_CALL_DURATION, Unit::Seconds, "Sandbox host call latency, by connection id and operation");
    describe_gauge!(OPEN_SESSIONS, "Workspaces with an open session, by connection id");
    describe_counter!(OPERATIONS_RECORDED, "Workspace operations written to the operation log, by operation");
    describe_gauge!(RECORDING_QUEUE, "Operation rows queued and not yet committed");
    describe_counter!(RECORDING_DROPPED, "Operation rows that could not be written (logged)");
    describe_gauge!(TOMBSTONES_PENDING, "Removed sandboxes waiting to be destroyed at their host, by connection id");
    describe_gauge!(
        TOMBSTONES_OVERDUE,
        "Removed sandboxes whose retry is more than 5 minutes overdue (the sweep runs every minute), by connection id"
    );
    describe_gauge!(
        HOST_DOWN_SECONDS,
        Unit::Seconds,
        "How long a switched-on host's last known state has been a problem (no answer, key refused, ...); 0 when healthy, by connection id"
    );
    describe_gauge!(
        HOST_CHECK_AGE,
        Unit::Seconds,
        "Time since the last check of a switched-on host began; 0 before its first check, by connection id"
    );
    describe_counter!(DESTROY_ATTEMPTS, "Attempts to destroy a removed sandbox, by outcome");
    describe_counter!(SWEEP_RUNS, "Sweep runs, by sweep and outcome");
    describe_counter!(SWEEP_ROWS_REMOVED, "Rows a sweep removed, by sweep");
    describe_gauge!(SWEEP_LAST_FAILED, "1 while this console's last run of a sweep failed, else 0, by sweep");
    describe_gauge!(DB_POOL_CONNECTIONS, "Database pool connections open");
    describe_gauge!(DB_POOL_IN_USE, "Database pool connections in use");
    describe_histogram!(DB_POOL_WAIT, Unit::Seconds, "Time spent waiting for a database pool connection");
    describe_gauge!(BUILD_INFO, "Always 1: the console's version and the sandboxd release it speaks to");
}

/// The counters of rare events start at 0, so a dashboard and an alert see them before the
/// first one happens.
fn register_zeros() {
    counter!(RECORDING_DROPPED).absolute(0);
    for outcome in ["destroyed", "failed"] {
        counter!(DESTROY_ATTEMPTS, "outcome" => outcome).absolute(0);
    }
    for sweep in SWEEPS {
        for outcome in ["ok", "failed"] {
            counter!(SWEEP_RUNS, "sweep" => sweep, "outcome" => outcome).absolute(0);
        }
        counter!(SWEEP_ROWS_REMOVED, "sweep" => sweep).absolute(0);
        gauge!(SWEEP_LAST_FAILED, "sweep" => sweep).set(0.0);
    }
}

/// `2xx`, `4xx`, …: the status label (bounded).
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// One HTTP request answered. `route` is the matched pattern (`/api/v1/runs/{run_id}/…`), never
/// the path; `None` (no route matched) is `unmatched`.
/// `route` is asked for only when metrics are on: finding a request's route pattern walks the
/// route table again (a regular expression per route tried), which cost every request tens of
/// microseconds when it was worked out whether or not anything counted it.
pub fn http_request(method: &str, route: impl FnOnce() -> Option<String>, status: u16, elapsed: Duration) {
    if HANDLE.get().is_none() {
        return;
    }
    let route = route().unwrap_or_else(|| "unmatched".to_owned());
    let method = match method {
        "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS" => method.to_owned(),
        _ => "other".to_owned(),
    };
    let status = status_class(status);
    counter!(HTTP_REQUESTS, "route" => route.clone(), "method" => method, "status" => status).increment(1);
    histogram!(HTTP_DURATION, "route" => route, "status" => status).record(elapsed.as_secs_f64());
}

/// One call to a sandbox host: its connection id (`none` for an address not saved yet), the
/// route's template as the operation, and `ok` or the error's kind as the outcome.
pub fn host_call(connection: Option<&str>, operation: &'static str, outcome: &'static str, elapsed: Duration) {
    if HANDLE.get().is_none() {
        return;
    }
    let connection = connection.unwrap_or("none").to_owned();
    counter!(HOST_CALLS, "connection" => connection.clone(), "operation" => operation, "outcome" => outcome)
        .increment(1);
    histogram!(HOST_CALL_DURATION, "connection" => connection, "operation" => operation).record(elapsed.as_secs_f64());
}

/// Rows committed to the operation log, by operation (`read`, `write`, …).
pub fn operations_recorded(operation: &'static str, rows: u64) {
    counter!(OPERATIONS_RECORDED, "operation" => operation).increment(rows);
}

/// Rows that could not be written.
pub fn recording_dropped(rows: u64) {
    counter!(RECORDING_DROPPED).increment(rows);
}

/// One attempt to destroy a removed sandbox: `destroyed` or `failed`.
pub fn destroy_attempt(outcome: &'static str) {
    counter!(DESTROY_ATTEMPTS, "outcome" => outcome).increment(1);
}

/// One sweep run: `ok` (with the rows it removed) or `failed`.
pub fn sweep_run(sweep: &'static str, removed: Option<u64>) {
    let outcome = if removed.is_some() { "ok" } else { "failed" };
    counter!(SWEEP_RUNS, "sweep" => sweep, "outcome" => outcome).increment(1);
    gauge!(SWEEP_LAST_FAILED, "sweep" => sweep).set(if removed.is_some() { 0.0 } else { 1.0 });
    if let Some(n) = removed {
        counter!(SWEEP_ROWS_REMOVED, "sweep" => sweep).increment(n);
    }
}

/// Time spent waiting for a pool connection.
pub fn db_pool_wait(elapsed: Duration) {
    if HANDLE.get().is_none() {
        return;
    }
    histogram!(DB_POOL_WAIT).record(elapsed.as_secs_f64());
}

/// What is read when scraped: the gauges of this moment.
pub struct Snapshot<'a> {
    pub open_sessions: &'a [(String, i64)],
    pub tombstones_pending: &'a [(String, i64)],
    pub tombstones_overdue: &'a [(String, i64)],
    /// Per switched-on connection: seconds its state has been a problem, and since its last check.
    pub host_down_seconds: &'a [(String, i64)],
    pub host_check_age_seconds: &'a [(String, i64)],
    pub recording_queue: usize,
    pub pool_connections: u32,
    pub pool_idle: usize,
    pub version: &'static str,
    pub sandboxd_version: &'a str,
}

/// Sets the gauges of this moment (a connection that had sessions and has none now reads 0).
/// Sets the gauges from `s` and renders everything with `handle`, under one lock: a scrape's text
/// holds its own snapshot, never one another scrape zeroed halfway (two consoles in one process,
/// as the tests run them, each zero the connections the other set).
pub fn render_snapshot(handle: &PrometheusHandle, s: &Snapshot<'_>) -> String {
    static SEEN: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    set_snapshot(&mut seen, s);
    handle.render()
}

fn set_snapshot(seen: &mut Vec<(&'static str, String)>, s: &Snapshot<'_>) {
    for (name, connection) in seen.iter() {
        gauge!(*name, "connection" => connection.clone()).set(0.0);
    }
    let by_connection = [
        (OPEN_SESSIONS, s.open_sessions),
        (TOMBSTONES_PENDING, s.tombstones_pending),
        (TOMBSTONES_OVERDUE, s.tombstones_overdue),
        (HOST_DOWN_SECONDS, s.host_down_seconds),
        (HOST_CHECK_AGE, s.host_check_age_seconds),
    ];
    for (name, rows) in by_connection {
        for (connection, n) in rows {
            gauge!(name, "connection" => connection.clone()).set(*n as f64);
            if !seen.iter().any(|(m, c)| *m == name && c == connection) {
                seen.push((name, connection.clone()));
            }
        }
    }
    gauge!(RECORDING_QUEUE).set(s.recording_queue as f64);
    gauge!(DB_POOL_CONNECTIONS).set(f64::from(s.pool_connections));
    gauge!(DB_POOL_IN_USE).set((s.pool_connections as f64 - s.pool_idle as f64).max(0.0));
    gauge!(BUILD_INFO, "version" => s.version, "sandboxd" => s.sandboxd_version.to_owned()).set(1.0);
}

/// A sweep's last run on this console (since it started): when, and what it came to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct SweepRun {
    /// The sweep's name: `sandbox-destroy-retry`, `operation-log-retention`, `sign-in-expiry`.
    pub sweep: &'static str,
    /// When it last ran (epoch milliseconds).
    pub at: i64,
    /// Whether it completed.
    pub ok: bool,
    /// Rows it removed (or sandboxes it destroyed) when it completed.
    pub removed: u64,
    /// Why it failed, in our words (never a path, an address or a key).
    pub problem: Option<String>,
}

/// Each sweep's last run, kept in memory by the console that ran it.
#[derive(Debug, Default)]
pub struct SweepRuns {
    runs: std::sync::Mutex<Vec<SweepRun>>,
}

impl SweepRuns {
    /// Keeps `run` as its sweep's last one and counts it.
    pub fn record(&self, run: SweepRun) {
        sweep_run(run.sweep, run.ok.then_some(run.removed));
        if let Ok(mut runs) = self.runs.lock() {
            runs.retain(|r| r.sweep != run.sweep);
            runs.push(run);
            runs.sort_by_key(|r| r.sweep);
        }
    }

    /// Every sweep's last run, by name.
    pub fn last(&self) -> Vec<SweepRun> {
        self.runs.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::status_class;

    #[test]
    fn statuses_fall_into_five_classes() {
        let classes: Vec<&str> = [101, 200, 204, 303, 404, 429, 500, 503].into_iter().map(status_class).collect();
        assert_eq!(classes, ["1xx", "2xx", "2xx", "3xx", "4xx", "4xx", "5xx", "5xx"]);
    }
}

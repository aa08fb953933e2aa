//! A real Prometheus (Debian's `prometheus`, which `.ci/run` installs) scrapes a console under
//! load, and its HTTP API answers the request rate and a latency quantile of the workspace
//! operations this test made (issue 29).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::db_test;
use crate::peer;
use crate::support::metrics::{workload, METRICS_TOKEN, WITH_TOKEN};

/// How long Prometheus has to start and to have a sample.
const DEADLINE: Duration = Duration::from_secs(90);

/// The workspace file route's pattern, as the `route` label names it.
const FILES: &str = "/api/v1/runs/{run_id}/workspace/files";

/// A Prometheus on a free loopback port scraping the console at `console_port` every second,
/// with its configuration and data in `dir`; stopped when dropped.
struct Prometheus {
    url: String,
    child: tokio::process::Child,
}

impl Prometheus {
    async fn start(dir: &Path, console_port: u16) -> Prometheus {
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: agenticos\n    \
             scrape_interval: 1s\n    scrape_timeout: 1s\n    metrics_path: /metrics\n    authorization:\n      \
             type: Bearer\n      credentials: {METRICS_TOKEN}\n    static_configs:\n      - targets: ['127.0.0.1:{console_port}']\n"
        );
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("the configuration");
        let port = peer::free_port().expect("a free port");
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("a log file");
        let child = tokio::process::Command::new(binary())
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("prometheus starts (apt-get install prometheus)");
        let p = Prometheus { url: format!("http://127.0.0.1:{port}"), child };
        let http = reqwest::Client::new();
        p.until("Prometheus is ready", dir, || async {
            let r = http.get(format!("{}/-/ready", p.url)).send().await.ok()?;
            r.status().is_success().then_some(())
        })
        .await;
        p
    }

    /// The result vector of `query` now.
    async fn query(&self, query: &str) -> Vec<Value> {
        let r = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", query)])
            .send()
            .await
            .expect("the query API answers");
        let body: Value = r.json().await.expect("JSON");
        assert_eq!(body["status"], "success", "{query}: {body}");
        body["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Polls `query` until its first sample's value satisfies `ok`; returns that value.
    async fn value_when(&self, dir: &Path, query: &str, ok: impl Fn(f64) -> bool) -> f64 {
        self.until(query, dir, || async {
            let result = self.query(query).await;
            let v: f64 = result.first()?["value"][1].as_str()?.parse().ok()?;
            ok(v).then_some(v)
        })
        .await
    }

    /// Polls `probe` until it answers, within [`DEADLINE`]; fails naming `what` and the log.
    async fn until<T, F, Fut>(&self, what: &str, dir: &Path, probe: F) -> T
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let started = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            if let Some(v) = probe().await {
                return v;
            }
            if started.elapsed() > DEADLINE {
                let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                panic!("{what}: nothing within {DEADLINE:?}; prometheus log:\n{}", tail.join("\n"));
            }
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn binary() -> String {
    std::env::var("PROMETHEUS_BIN").unwrap_or_else(|_| "prometheus".to_string())
}

db_test! {
    async fn a_real_prometheus_scrapes_the_console_and_answers_its_request_rate_and_latency(app: TestApp)
        settings(WITH_TOKEN)
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let prometheus = Prometheus::start(dir.path(), app.port).await;
        let peer = peer::shared().await;
        let w = workload(&app, peer).await;
        // One round first, until Prometheus holds the series: the rate needs it before the load.
        w.operate("scraped.txt", 1).await;
        let ours = format!(r#"connection="{}""#, w.connection);
        let series = format!(r#"agenticos_sandbox_host_calls_total{{{ours},operation="files_write",outcome="ok"}}"#);
        prometheus.value_when(dir.path(), &series, |v| v >= 1.0).await;

        let rounds = 20;
        w.operate("scraped.txt", rounds).await;
        let writes = (rounds + 1) as f64;
        // Every write this test made, as a host call of its connection.
        prometheus.value_when(dir.path(), &series, |v| v >= writes).await;

        let rate = format!(r#"sum(rate(agenticos_http_requests_total{{route="{FILES}",status="2xx"}}[1m]))"#);
        let per_second = prometheus.value_when(dir.path(), &rate, |v| v > 0.0).await;
        assert!(per_second.is_finite(), "{per_second}");

        let p99 = format!(
            r#"histogram_quantile(0.99, sum by (le) (rate(agenticos_http_request_duration_seconds_bucket{{route="{FILES}"}}[1m])))"#
        );
        let seconds = prometheus.value_when(dir.path(), &p99, |v| v.is_finite() && v > 0.0).await;
        assert!(seconds <= 30.0, "a p99 within the buckets: {seconds}");

        let up = prometheus.query(r#"up{job="agenticos"}"#).await;
        assert_eq!(up.first().and_then(|s| s["value"][1].as_str()), Some("1"), "{up:?}");
    }
}
